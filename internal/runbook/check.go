package runbook

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// compiled holds a step's expressions, compiled once before anything runs.
type compiled struct {
	ifExpr    *expr
	result    *expr
	until     *expr
	eventFrom string
	eventM    *expr
	forEach   *template
}

// Check compiles every expression of the book and checks every name it
// reads: an unknown variable, an unknown step, or a step read before it
// runs (in the book's written order) is a *BookError with its place. It
// sends nothing. Books with order: dependencies are checked again by Plan
// once their order is known.
func Check(b *Book) error {
	if _, err := compileAll(b); err != nil {
		return err
	}
	if b.Order == OrderAsWritten {
		return checkRefs(b.Steps)
	}
	return checkNames(b.Steps)
}

// noTemplate refuses {{ }} in a jq expression (if:, expect.result,
// retry.until, an event's match): there it is no template but text, so
// '.id == "{{ .steps.a.result.id }}"' compared the answer with those very
// characters and was false (or true with !=) without a word.
func noTemplate(p Pos, field, src string) error {
	if templateRE().MatchString(src) {
		return errAt(p, "%s %q is jq, not a template: {{ }} in it is only text; read the run as $vars.NAME, $steps.NAME.result, $env.NAME", field, src)
	}
	return nil
}

func compileAll(b *Book) (map[*Step]*compiled, error) {
	out := make(map[*Step]*compiled, len(b.Steps))
	names := map[string]*Step{}
	for _, s := range b.Steps {
		if s.Name != "" {
			if prev, dup := names[s.Name]; dup {
				return nil, errAt(s.at("name"), "a step named %q is already at %s", s.Name, prev.Pos)
			}
			names[s.Name] = s
		}
		c := &compiled{}
		var err error
		for _, e := range []struct {
			p           Pos
			field, text string
		}{{s.at("if"), "if:", s.If}, {s.at("expect"), "expect.result", s.Expect.Result}} {
			if err := noTemplate(e.p, e.field, e.text); err != nil {
				return nil, err
			}
		}
		if s.Retry != nil {
			if err := noTemplate(s.at("retry"), "retry.until", s.Retry.Until); err != nil {
				return nil, err
			}
		}
		if ev := s.Expect.Event; ev != nil {
			if err := noTemplate(ev.Pos, "expect.event's match", ev.Match); err != nil {
				return nil, err
			}
		}
		if s.If != "" {
			if c.ifExpr, err = compileExpr(s.at("if"), s.If); err != nil {
				return nil, err
			}
		}
		if s.Expect.Result != "" {
			if c.result, err = compileAnswerExpr(s.at("expect"), s.Expect.Result); err != nil {
				return nil, err
			}
		}
		if s.Retry != nil {
			if c.until, err = compileAnswerExpr(s.at("retry"), s.Retry.Until); err != nil {
				return nil, err
			}
		}
		if ev := s.Expect.Event; ev != nil {
			if c.eventM, err = compileExpr(ev.Pos, ev.Match); err != nil {
				return nil, err
			}
			c.eventFrom = ev.From
		}
		if s.ForEach != "" {
			if c.forEach, err = compileTemplate(s.at("for_each"), s.ForEach); err != nil {
				return nil, err
			}
			if c.forEach == nil {
				return nil, errAt(s.at("for_each"), "for_each is a {{ jq }} giving a list, as {{ .vars.list }}")
			}
		}
		for field, text := range map[string]string{"call": s.Target + " " + s.Method, "session": s.Session, "pool": s.Pool} {
			if _, err := compileTemplate(s.at(field), text); err != nil {
				return nil, err
			}
		}
		for _, str := range valueStrings(s.Params, nil) {
			if _, err := compileTemplate(s.at("params"), str); err != nil {
				return nil, err
			}
		}
		for _, str := range valueStrings(s.Expect.Equals, nil) {
			if _, err := compileTemplate(s.at("expect"), str); err != nil {
				return nil, err
			}
		}
		out[s] = c
	}
	return out, nil
}

// texts lists each field of a step read over the run's scope (templates,
// if:), with its place.
func (s *Step) texts() map[string][]string {
	m := map[string][]string{
		"if": {s.If}, "call": {s.Target, s.Method}, "session": {s.Session}, "pool": {s.Pool},
		"for_each": {s.ForEach}, "params": valueStrings(s.Params, nil),
		"expect": valueStrings(s.Expect.Equals, nil),
	}
	if s.Expect.Event != nil {
		m["expect"] = append(m["expect"], s.Expect.Event.From)
	}
	return m
}

// answerTexts lists each jq expression of a step over an answer
// (expect.result, retry.until, an event's match): in them .steps is the
// answer's own field, and the run is $vars, $env, $steps.
func (s *Step) answerTexts() map[string][]string {
	m := map[string][]string{"expect": {s.Expect.Result}}
	if s.Retry != nil {
		m["retry"] = []string{s.Retry.Until}
	}
	if s.Expect.Event != nil {
		m["expect"] = append(m["expect"], s.Expect.Event.Match)
	}
	return m
}

type fieldRef struct {
	field string
	ref
}

// refs lists every name of the run a step reads, by field (sorted): what
// its templates and if: read, and what its expressions over an answer
// read through $vars, $env, $steps.
func (s *Step) refs() []fieldRef {
	var out []fieldRef
	for field, texts := range s.texts() {
		for _, t := range texts {
			for _, r := range refsIn(t) {
				out = append(out, fieldRef{field, r})
			}
		}
	}
	for field, texts := range s.answerTexts() {
		for _, t := range texts {
			for _, r := range refsIn(t) {
				if r.dollar {
					out = append(out, fieldRef{field, r})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].field < out[j].field })
	return out
}

// checkNames checks that every name read exists.
func checkNames(steps []*Step) error {
	return walkRefs(steps, func(*Step, string) bool { return true })
}

// checkRefs checks that every name read exists and that every step read
// runs before the step that reads it, in the order given.
func checkRefs(steps []*Step) error {
	pos := map[*Step]int{}
	for i, s := range steps {
		pos[s] = i
	}
	byName := map[string]*Step{}
	for _, s := range steps {
		if s.Name != "" {
			byName[s.Name] = s
		}
	}
	return walkRefs(steps, func(s *Step, name string) bool {
		return pos[byName[name]] < pos[s]
	})
}

func walkRefs(steps []*Step, before func(s *Step, name string) bool) error {
	byName := map[string]*Step{}
	for _, s := range steps {
		if s.Name != "" {
			byName[s.Name] = s
		}
	}
	for _, s := range steps {
		vars := s.Vars
		// An expression over an answer that reads .steps.NAME of a step
		// of the book (or .vars.NAME of a variable) reads the answer's
		// field, which is almost never meant: the run is $steps.NAME.
		for field, texts := range s.answerTexts() {
			for _, t := range texts {
				for _, r := range refsIn(t) {
					_, isStep := byName[r.name]
					_, isVar := vars[r.name]
					if !r.dollar && (r.kind == "steps" && isStep || r.kind == "vars" && isVar) {
						return errAt(s.at(field), "%q is jq over the answer: .%s.%s is the answer's own field; the run's is $%s.%s", t, r.kind, r.name, r.kind, r.name)
					}
				}
			}
		}
		for _, fr := range s.refs() {
			r := fr.ref
			p := s.at(fr.field)
			switch r.kind {
			case "env": // CheckEnv: the environment is the run's, not the book's
			case "vars":
				if _, ok := vars[r.name]; ok {
					continue
				}
				return errAt(p, "no variable %q (the book's vars: %s)", r.name, keyList(vars))
			case "steps":
				t, ok := byName[r.name]
				if !ok {
					return errAt(p, "no step named %q (named steps: %s)", r.name, stepList(steps))
				}
				if t == s {
					return errAt(p, "step %q reads its own outcome (.steps.%s) before it has one", s.Name, r.name)
				}
				if !before(s, r.name) {
					return errAt(p, "step %q reads .steps.%s, which has not run by then (it is at %s); write it earlier or use order: dependencies", s.Label(), r.name, t.Pos)
				}
			}
		}
	}
	return nil
}

// CheckEnv checks that every environment variable the book reads
// (.env.NAME) is set in env: an unset one would send null or an empty
// string without a word. It is a *BookError with its place (exit 2),
// found before anything is sent.
func CheckEnv(b *Book, env map[string]string) error {
	for _, s := range b.Steps {
		for _, r := range s.refs() {
			if _, ok := env[r.name]; r.kind == "env" && !ok {
				return errAt(s.at(r.field), "the environment variable %s is not set (the book reads .env.%s)", r.name, r.name)
			}
		}
	}
	return nil
}

func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "none"
	}
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

func stepList(steps []*Step) string {
	var ns []string
	for _, s := range steps {
		if s.Name != "" {
			ns = append(ns, s.Name)
		}
	}
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// CapsFunc fetches a target's capability list (nil, nil when it has none).
type CapsFunc func(ctx context.Context, target string) (*capability.Capabilities, error)

// Plan orders the book's steps as it asks and checks every reference
// against that order. For order: dependencies it reads each target's
// operation_dependencies through caps (a read-only capabilities.list), and
// a step that reads another's outcome (.steps.NAME) runs after it too; a
// cycle is refused with its path. The written order is kept wherever
// nothing says otherwise.
func Plan(ctx context.Context, b *Book, caps CapsFunc) ([]*Step, error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	if b.Order != OrderDependencies {
		return b.Steps, nil
	}
	deps := map[string]map[string][]string{} // target → method → prerequisites
	for _, s := range b.Steps {
		if _, done := deps[s.Target]; done || strings.Contains(s.Target, "{{") {
			continue
		}
		deps[s.Target] = nil
		// A target that cannot say (no capabilities.list, unreachable now)
		// declares nothing: its steps keep their written order, and a step
		// that cannot reach it fails as it runs.
		c, err := caps(ctx, s.Target)
		if err == nil && c != nil {
			deps[s.Target] = c.OperationDependencies
		}
	}
	steps, err := orderSteps(b.Steps, deps)
	if err != nil {
		return nil, err
	}
	if err := checkRefs(steps); err != nil {
		return nil, err
	}
	return steps, nil
}

// orderSteps sorts steps topologically: s runs after t when s's method
// needs t's method first (on the same target), or s reads t's outcome.
// Among the steps free to run, the first written goes first.
func orderSteps(steps []*Step, deps map[string]map[string][]string) ([]*Step, error) {
	n := len(steps)
	after := make([][]int, n) // after[i]: steps that must run before i
	why := map[[2]int]string{}
	byName := map[string]int{}
	for i, s := range steps {
		if s.Name != "" {
			byName[s.Name] = i
		}
	}
	for i, s := range steps {
		for _, pre := range deps[s.Target][s.Method] {
			// The prerequisite on the same target; else on whichever target
			// a step calls it (a method of another primal: nestgate's
			// storage.artifact.store needs rhizocrypt's dag.event.append).
			same := false
			for j, t := range steps {
				if j != i && t.Target == s.Target && t.Method == pre {
					same = true
				}
			}
			for j, t := range steps {
				if j != i && t.Method == pre && (t.Target == s.Target || !same) {
					after[i] = append(after[i], j)
					why[[2]int{j, i}] = fmt.Sprintf("%s needs %s first (operation_dependencies of %s)", s.Method, pre, s.Target)
				}
			}
		}
		for _, r := range s.refs() {
			if j, ok := byName[r.name]; ok && r.kind == "steps" && j != i {
				after[i] = append(after[i], j)
				why[[2]int{j, i}] = fmt.Sprintf("%s reads .steps.%s", s.Label(), r.name)
			}
		}
	}
	indeg := make([]int, n)
	next := make([][]int, n)
	for i, pres := range after {
		seen := map[int]bool{}
		for _, j := range pres {
			if !seen[j] {
				seen[j] = true
				indeg[i]++
				next[j] = append(next[j], i)
			}
		}
	}
	done := make([]bool, n)
	out := make([]*Step, 0, n)
	for len(out) < n {
		pick := -1
		for i := 0; i < n; i++ {
			if !done[i] && indeg[i] == 0 {
				pick = i
				break
			}
		}
		if pick < 0 {
			return nil, cycleError(steps, after, done, why)
		}
		done[pick] = true
		out = append(out, steps[pick])
		for _, k := range next[pick] {
			indeg[k]--
		}
	}
	return out, nil
}

// cycleError names one cycle among the steps not yet placed.
func cycleError(steps []*Step, after [][]int, done []bool, why map[[2]int]string) error {
	start := -1
	for i := range steps {
		if !done[i] {
			start = i
			break
		}
	}
	// Walk back along prerequisites until a step repeats.
	seen := map[int]int{}
	var path []int
	for i := start; ; {
		if at, ok := seen[i]; ok {
			path = path[at:]
			break
		}
		seen[i] = len(path)
		path = append(path, i)
		nxt := -1
		for _, j := range after[i] {
			if !done[j] {
				nxt = j
				break
			}
		}
		if nxt < 0 {
			break
		}
		i = nxt
	}
	// path[k] needs path[k+1]; print in run order: prerequisite → dependent.
	var parts, reasons []string
	for k := len(path) - 1; k >= 0; k-- {
		parts = append(parts, steps[path[k]].Label())
	}
	parts = append(parts, steps[path[len(path)-1]].Label())
	for k := 0; k < len(path); k++ {
		j := path[(k+1)%len(path)]
		if r := why[[2]int{j, path[k]}]; r != "" {
			reasons = append(reasons, r)
		}
	}
	return errAt(steps[path[0]].Pos, "order: dependencies: a cycle: %s (%s)", strings.Join(parts, " → "), strings.Join(reasons, "; "))
}
