// Package runbook reads, checks and runs runbooks: YAML books of JSON-RPC
// calls with expectations, which turn an exploration of a composition into
// a repeatable check (primalscope run). A book is input: it is bounded,
// checked before anything is sent, and nothing secret from it reaches a
// report.
package runbook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// Order says in which order a book's steps run.
type Order string

// The orders.
const (
	// OrderAsWritten runs the steps as written (the default).
	OrderAsWritten Order = "as-written"
	// OrderDependencies sorts the steps by the operation_dependencies the
	// targets declare, keeping the written order where they say nothing.
	OrderDependencies Order = "dependencies"
)

// Book is one parsed runbook.
type Book struct {
	// File is where the book was read from.
	File string
	// Name is the book's name (its file name when it gives none).
	Name string
	// Vars are the book's variables, as JSON values.
	Vars map[string]any
	// Order is how the steps are ordered.
	Order Order
	// Steps are the steps in written order, includes expanded.
	Steps []*Step
}

// Step is one call (or a skipped placeholder) of a book.
type Step struct {
	// Pos is where the step was written.
	Pos Pos
	// Name names the step; other steps reach its outcome as .steps.NAME.
	// It is "" for an unnamed step (its label is then "#N METHOD").
	Name string
	// Book is the (included) book the step came from.
	Book string
	// Target and Method are the call's TARGET and METHOD, possibly templated.
	Target, Method string
	// Params is the params template (nil sends none).
	Params any
	// Session and Pool route a stdio bus call (templated).
	Session, Pool string
	// Vars are an include's own variables, layered over the book's.
	Vars map[string]any
	// Idempotent marks the call safe to send again (retry).
	Idempotent bool
	// If is a jq condition; false skips the step.
	If string
	// Skip, when set, skips the step with this reason.
	Skip string
	// ForEach is a template giving a list; the step runs once per item,
	// with .item and .index bound; .steps.NAME is then the last item's
	// outcome with items, every item's.
	ForEach string
	// Expect holds what must hold of the answer.
	Expect Expect
	// Retry re-sends a safe call until a condition holds.
	Retry *Retry
	// Serve answers a peer's requests during the step (a holon asking
	// back): method → result.
	Serve map[string]any
	// Timeout bounds this step (0: the run's remaining time).
	Timeout time.Duration

	pos map[string]Pos // where each field was written
}

// Label is how reports name the step.
func (s *Step) Label() string {
	if s.Name != "" {
		return s.Name
	}
	return s.Method
}

// Expect is what must hold of a step's answer. With no Error or
// ErrorMessage asked for, the call must succeed.
type Expect struct {
	// Result is a jq expression over the result that must be true.
	Result string
	// Error is the JSON-RPC error code the call must fail with (nil: must succeed).
	Error *int64
	// ErrorMessage is a regular expression the error message must match.
	ErrorMessage *regexp.Regexp
	// Equals is the result compared structurally, Ignore's paths aside;
	// when an error is expected (Error, ErrorMessage) and came, the
	// error's fields it names (an object: code, message, data), each
	// compared whole, the others not compared.
	Equals    any
	HasEquals bool
	Ignore    []string
	// UnderMS bounds the call's duration, in milliseconds (fractions kept).
	UnderMS float64
	// Event is a notification or event that must arrive.
	Event *EventExpect
}

// EventExpect is an event that must arrive from a target within a time.
type EventExpect struct {
	From   string
	Match  string
	Within time.Duration
	Pos    Pos
}

// Retry re-sends a call that is safe to repeat until Until holds.
type Retry struct {
	Until string
	Times int
	Every time.Duration
}

// Limits on what a book may hold.
const (
	maxBookBytes = 4 << 20
	maxSteps     = 10_000
	maxIncludes  = 16 // depth
	// maxIncludeCount and maxLoadBytes bound one Load as a whole: includes
	// fan out (a book including the next twice, 16 deep, is 65,536).
	maxIncludeCount = 256
	maxLoadBytes    = 16 << 20
	maxRetryTimes   = 100
	maxForEachItem  = 10_000
)

// The package's regular expressions are compiled on first use (here and
// in expr.go, export.go): the package is linked into every command, and
// compiling them at init cost every process, a one-shot call included,
// about 0.09 ms and 390 allocations.
var stepNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Load reads and checks a book and what it includes. A book that does not
// parse or is invalid is a *BookError, with the place.
func Load(path string) (*Book, error) {
	return newLoader().load(path, nil, 0)
}

// loader is one Load's (or Parse's) reading of books: what it has read,
// bounded, and each file parsed once.
type loader struct {
	includes int
	bytes    int64
	parsed   map[string]*node // by absolute path
}

func newLoader() *loader { return &loader{parsed: map[string]*node{}} }

// Parse reads a book from data as if from file (includes are read relative
// to file).
func Parse(file string, data []byte) (*Book, error) {
	if len(data) > maxBookBytes {
		return nil, errAt(Pos{File: file, Line: 1, Column: 1}, "the book is larger than %d bytes", maxBookBytes)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("book %s: %w", file, err)
	}
	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	l := newLoader()
	l.bytes = int64(len(data))
	return l.parseBook(file, root, []string{abs}, 0)
}

func (l *loader) load(path string, chain []string, depth int) (*Book, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("book %s: %w", path, err)
	}
	for _, c := range chain {
		if c == abs {
			return nil, errAt(Pos{File: path, Line: 1, Column: 1}, "includes itself: %s", strings.Join(append(chain, abs), " → "))
		}
	}
	if depth > maxIncludes {
		return nil, errAt(Pos{File: path, Line: 1, Column: 1}, "includes nest deeper than %d", maxIncludes)
	}
	root, ok := l.parsed[abs]
	if !ok {
		data, err := readfile.Regular(path, maxBookBytes)
		if err != nil {
			return nil, errAt(Pos{File: path}, "%v", err)
		}
		if l.bytes += int64(len(data)); l.bytes > maxLoadBytes {
			return nil, errAt(Pos{File: path, Line: 1, Column: 1}, "the book and its includes are larger than %d bytes in all", maxLoadBytes)
		}
		if root, err = parseYAML(path, data); err != nil {
			return nil, err
		}
		l.parsed[abs] = root
	}
	return l.parseBook(path, root, append(chain, abs), depth)
}

func (l *loader) parseBook(file string, root *node, chain []string, depth int) (*Book, error) {
	if root.kind != kindMap {
		return nil, errAt(root.pos, "a book is a mapping (name, vars, order, steps); this is %s", root.what())
	}
	b := &Book{File: file, Order: OrderAsWritten, Vars: map[string]any{}}
	if err := known(root, "name", "vars", "order", "steps"); err != nil {
		return nil, err
	}
	if n := root.vals["name"]; n != nil {
		s, ok := n.str()
		if !ok {
			return nil, errAt(n.pos, "name is text; this is %s", n.what())
		}
		b.Name = s
	}
	if b.Name == "" {
		b.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if n := root.vals["vars"]; n != nil {
		if n.kind != kindMap {
			return nil, errAt(n.pos, "vars is a mapping; this is %s", n.what())
		}
		b.Vars = n.plain().(map[string]any)
	}
	if n := root.vals["order"]; n != nil {
		s, _ := n.str()
		switch Order(s) {
		case OrderAsWritten, OrderDependencies:
			b.Order = Order(s)
		default:
			return nil, errAt(n.pos, "order is %q or %q", OrderAsWritten, OrderDependencies)
		}
	}
	steps := root.vals["steps"]
	if steps == nil {
		return nil, errAt(root.pos, "the book has no steps")
	}
	if steps.kind != kindSeq {
		return nil, errAt(steps.pos, "steps is a list; this is %s", steps.what())
	}
	for _, sn := range steps.seq {
		got, err := l.parseStep(file, sn, chain, depth)
		if err != nil {
			return nil, err
		}
		for _, s := range got {
			if s.Vars == nil {
				s.Vars = b.Vars // written here: the book's own vars
			}
		}
		b.Steps = append(b.Steps, got...)
		if len(b.Steps) > maxSteps {
			return nil, errAt(sn.pos, "more than %d steps", maxSteps)
		}
	}
	return b, nil
}

func known(n *node, keys ...string) error {
	for _, k := range n.keys {
		ok := false
		for _, want := range keys {
			if k == want {
				ok = true
				break
			}
		}
		if !ok {
			sorted := append([]string(nil), keys...)
			sort.Strings(sorted)
			return errAt(n.kpos[k], "unknown key %q (known: %s)", k, strings.Join(sorted, ", "))
		}
	}
	return nil
}

var stepKeys = []string{"name", "call", "params", "session", "pool", "expect", "retry", "idempotent",
	"include", "vars", "for_each", "if", "skip", "serve", "timeout"}

func (l *loader) parseStep(file string, n *node, chain []string, depth int) ([]*Step, error) {
	if n.kind != kindMap {
		return nil, errAt(n.pos, "a step is a mapping; this is %s", n.what())
	}
	if err := known(n, stepKeys...); err != nil {
		return nil, err
	}
	s := &Step{Pos: n.pos, Book: file, pos: map[string]Pos{}}
	for k, v := range n.vals {
		s.pos[k] = v.pos
	}
	text := func(key string) (string, error) {
		v := n.vals[key]
		if v == nil {
			return "", nil
		}
		str, ok := v.str()
		if !ok {
			return "", errAt(v.pos, "%s is text; this is %s", key, v.what())
		}
		return str, nil
	}
	var err error
	if s.Name, err = text("name"); err != nil {
		return nil, err
	}
	if s.Name != "" && !stepNameRE().MatchString(s.Name) {
		return nil, errAt(n.vals["name"].pos, "a step's name is letters, digits and _ (it is used as .steps.%s)", s.Name)
	}
	if inc := n.vals["include"]; inc != nil {
		return l.parseInclude(file, n, inc, chain, depth)
	}
	if v := n.vals["vars"]; v != nil {
		return nil, errAt(v.pos, "vars belong to the book or to an include step")
	}
	call, err := text("call")
	if err != nil {
		return nil, err
	}
	if call == "" {
		return nil, errAt(n.pos, "a step needs call: TARGET METHOD (or include: FILE)")
	}
	fields := strings.Fields(call)
	if len(fields) != 2 {
		return nil, errAt(n.vals["call"].pos, "call is TARGET METHOD, two words; got %d", len(fields))
	}
	s.Target, s.Method = fields[0], fields[1]
	if p := n.vals["params"]; p != nil {
		s.Params = p.plain()
	}
	if s.Session, err = text("session"); err != nil {
		return nil, err
	}
	if s.Pool, err = text("pool"); err != nil {
		return nil, err
	}
	if s.If, err = text("if"); err != nil {
		return nil, err
	}
	if s.Skip, err = text("skip"); err != nil {
		return nil, err
	}
	if s.ForEach, err = text("for_each"); err != nil {
		return nil, err
	}
	if v := n.vals["idempotent"]; v != nil {
		b, ok := v.val.(bool)
		if !ok || v.kind != kindScalar {
			return nil, errAt(v.pos, "idempotent is true or false")
		}
		s.Idempotent = b
	}
	if v := n.vals["timeout"]; v != nil {
		if s.Timeout, err = duration(v); err != nil {
			return nil, err
		}
	}
	if v := n.vals["serve"]; v != nil {
		if v.kind != kindMap {
			return nil, errAt(v.pos, "serve maps a method the peer may ask to the result to answer")
		}
		s.Serve = v.plain().(map[string]any)
	}
	if v := n.vals["expect"]; v != nil {
		if s.Expect, err = parseExpect(v); err != nil {
			return nil, err
		}
	}
	if v := n.vals["retry"]; v != nil {
		if s.Retry, err = parseRetry(v); err != nil {
			return nil, err
		}
	}
	return []*Step{s}, nil
}

func (l *loader) parseInclude(file string, n, inc *node, chain []string, depth int) ([]*Step, error) {
	for _, k := range n.keys {
		if k != "include" && k != "vars" && k != "name" {
			return nil, errAt(n.kpos[k], "an include step takes only include, vars and name; %q belongs to a call", k)
		}
	}
	path, ok := inc.str()
	if !ok || path == "" {
		return nil, errAt(inc.pos, "include names a book file")
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	if _, err := os.Stat(path); err != nil {
		return nil, errAt(inc.pos, "include %s: %v", path, err)
	}
	if l.includes++; l.includes > maxIncludeCount {
		return nil, errAt(inc.pos, "more than %d includes in all", maxIncludeCount)
	}
	sub, err := l.load(path, chain, depth+1)
	if err != nil {
		return nil, err
	}
	// Steps written in the included book read its vars, overlaid by the
	// include step's; steps it included in turn keep what their own
	// include gave them.
	vars := map[string]any{}
	for k, v := range sub.Vars {
		vars[k] = v
	}
	if v := n.vals["vars"]; v != nil {
		if v.kind != kindMap {
			return nil, errAt(v.pos, "vars is a mapping; this is %s", v.what())
		}
		for k, x := range v.plain().(map[string]any) {
			vars[k] = x
		}
	}
	for _, s := range sub.Steps {
		if s.Book == sub.File {
			s.Vars = vars
		}
	}
	return sub.Steps, nil
}

func duration(v *node) (time.Duration, error) {
	s, ok := v.str()
	if !ok {
		return 0, errAt(v.pos, "a duration is text such as 2s or 500ms")
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, errAt(v.pos, "%q is not a positive duration (2s, 500ms)", s)
	}
	return d, nil
}

func parseExpect(v *node) (Expect, error) {
	var e Expect
	if v.kind != kindMap {
		return e, errAt(v.pos, "expect is a mapping (result, error, error_message, equals, ignore, under_ms, event)")
	}
	if err := known(v, "result", "error", "error_message", "equals", "ignore", "under_ms", "event"); err != nil {
		return e, err
	}
	if r := v.vals["result"]; r != nil {
		s, ok := r.str()
		if !ok || strings.TrimSpace(s) == "" {
			return e, errAt(r.pos, "expect.result is a jq expression that must be true")
		}
		e.Result = s
	}
	if r := v.vals["error"]; r != nil {
		f, ok := r.val.(float64)
		if !ok || f != float64(int64(f)) {
			return e, errAt(r.pos, "expect.error is a JSON-RPC error code (an integer such as -32602)")
		}
		code := int64(f)
		e.Error = &code
	}
	if r := v.vals["error_message"]; r != nil {
		s, ok := r.str()
		if !ok {
			return e, errAt(r.pos, "expect.error_message is a regular expression")
		}
		re, err := regexp.Compile(s)
		if err != nil {
			return e, errAt(r.pos, "expect.error_message: %v", err)
		}
		e.ErrorMessage = re
	}
	if r := v.vals["equals"]; r != nil {
		e.Equals, e.HasEquals = r.plain(), true
	}
	if r := v.vals["ignore"]; r != nil {
		if r.kind != kindSeq {
			return e, errAt(r.pos, "expect.ignore is a list of paths (.a.b, .items[].id)")
		}
		for _, p := range r.seq {
			s, ok := p.str()
			if !ok || !history.ValidPath(s) {
				return e, errAt(p.pos, "%v is not a path such as .a.b or .items[].id", p.plain())
			}
			e.Ignore = append(e.Ignore, s)
		}
	}
	if r := v.vals["under_ms"]; r != nil {
		f, ok := r.val.(float64)
		if !ok || f <= 0 {
			return e, errAt(r.pos, "expect.under_ms is a positive number of milliseconds")
		}
		e.UnderMS = f
	}
	if r := v.vals["event"]; r != nil {
		ev, err := parseEvent(r)
		if err != nil {
			return e, err
		}
		e.Event = ev
	}
	if r := v.vals["equals"]; r != nil && r.kind == kindMap && (e.Error != nil || e.ErrorMessage != nil) {
		// equals on an error compares the fields it names: one an error
		// never has (a typo: cod) would fail every run, found only then.
		for _, k := range r.keys {
			if k != "code" && k != "message" && k != "data" {
				return e, errAt(r.kpos[k], "expect.equals on an error names its fields (code, message, data), not %q", k)
			}
		}
	}
	return e, nil
}

func parseEvent(r *node) (*EventExpect, error) {
	if r.kind != kindMap {
		return nil, errAt(r.pos, "expect.event is a mapping (from, match, within)")
	}
	if err := known(r, "from", "match", "within"); err != nil {
		return nil, err
	}
	ev := &EventExpect{Within: 2 * time.Second, Match: "true", Pos: r.pos}
	if f := r.vals["from"]; f != nil {
		ev.From, _ = f.str()
	}
	if ev.From == "" {
		return nil, errAt(r.pos, "expect.event needs from: TARGET")
	}
	if m := r.vals["match"]; m != nil {
		s, ok := m.str()
		if !ok {
			return nil, errAt(m.pos, "expect.event.match is a jq expression")
		}
		ev.Match = s
	}
	if w := r.vals["within"]; w != nil {
		d, err := duration(w)
		if err != nil {
			return nil, err
		}
		ev.Within = d
	}
	return ev, nil
}

func parseRetry(v *node) (*Retry, error) {
	if v.kind != kindMap {
		return nil, errAt(v.pos, "retry is a mapping (until, times, every)")
	}
	if err := known(v, "until", "times", "every"); err != nil {
		return nil, err
	}
	r := &Retry{Times: 3, Every: 500 * time.Millisecond}
	u := v.vals["until"]
	if u == nil {
		return nil, errAt(v.pos, "retry needs until: a jq expression over the result")
	}
	s, ok := u.str()
	if !ok || strings.TrimSpace(s) == "" {
		return nil, errAt(u.pos, "retry.until is a jq expression")
	}
	r.Until = s
	if t := v.vals["times"]; t != nil {
		f, ok := t.val.(float64)
		if !ok || f < 1 || f > maxRetryTimes || f != float64(int(f)) {
			return nil, errAt(t.pos, "retry.times is a whole number from 1 to %d", maxRetryTimes)
		}
		r.Times = int(f)
	}
	if e := v.vals["every"]; e != nil {
		d, err := duration(e)
		if err != nil {
			return nil, err
		}
		r.Every = d
	}
	return r, nil
}

// at returns where a step's field was written (the step itself if unknown).
func (s *Step) at(field string) Pos {
	if p, ok := s.pos[field]; ok {
		return p
	}
	return s.Pos
}

// paramsJSON marshals a value for a report, bounded.
func paramsJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
