// Package mock stands in for a primal: it answers what history recorded
// of it, on the wire the primal spoke, with faults on demand (primalscope
// mock). Its servers are internal/peer's, its matcher history.MatchParams.
package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Recording is one recorded call the mock can answer with.
type Recording struct {
	Method   string
	Params   json.RawMessage
	Result   json.RawMessage
	Error    *history.RPCError
	Duration time.Duration
}

// FromHistory keeps the calls that got an answer (a result or an error),
// oldest first; a cut result cannot be served and is left out.
func FromHistory(entries []history.Entry) []Recording {
	sorted := append([]history.Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time.Before(sorted[j].Time) })
	var out []Recording
	for _, e := range sorted {
		if e.Truncated || e.ParamsTruncated {
			continue
		}
		switch {
		case e.Outcome == history.OutcomeOK && e.Result != nil:
			out = append(out, Recording{Method: e.Method, Params: e.Params, Result: e.Result, Duration: e.Duration})
		case e.Outcome == history.OutcomeError && e.Error != nil:
			out = append(out, Recording{Method: e.Method, Params: e.Params, Error: e.Error, Duration: e.Duration})
		}
	}
	return out
}

// Latency says how long the mock takes to answer.
type Latency struct {
	// Recorded waits as long as the recorded call took, times Scale (1
	// when 0); otherwise the mock answers at once.
	Recorded bool
	Scale    float64
}

// ParseLatency reads recorded, none, or xN (recorded times N).
func ParseLatency(s string) (Latency, error) {
	switch {
	case s == "recorded" || s == "":
		return Latency{Recorded: true, Scale: 1}, nil
	case s == "none":
		return Latency{}, nil
	case strings.HasPrefix(s, "x"):
		var f float64
		if _, err := fmt.Sscanf(s[1:], "%g", &f); err == nil && f >= 0 && f <= 1000 {
			return Latency{Recorded: true, Scale: f}, nil
		}
	}
	return Latency{}, fmt.Errorf("--latency %q: want recorded, none or xN (as x0.5, x10)", s)
}

// Options tune a mock.
type Options struct {
	// Name is the primal's name, for the capability list and identity;
	// Aliases the other names it was recorded under (the capability list
	// says them).
	Name    string
	Aliases []string
	// Ignore lists params paths that never matter to matching.
	Ignore []string
	// ByMethod answers by method alone (--match method).
	ByMethod bool
	Latency  Latency
	Faults   []*Fault
	// Log receives a line for each request that matched nothing, with the
	// nearest recorded params as a diff; and the one note on placeholders.
	Log io.Writer
	// BTSPOnly says the target was recorded over BTSP: the mock serves it
	// only through a BTSP handshake (Listen.Seed), never in cleartext.
	BTSPOnly bool
	// Rand decides the percentages of faults (nil: a random source).
	Rand *rand.Rand
}

// Mock is a stand-in built from recordings. It is safe for concurrent use.
type Mock struct {
	opts    Options
	methods map[string][]*class
	mu      sync.Mutex
	logMu   sync.Mutex
	noted   bool
	faults  []*Fault
	rnd     *rand.Rand
	served  int
	missed  int
	// maxBytes bounds the bytes of the requests answered at once over
	// every connection of one server (maxInflightBytes; a test lowers it).
	maxBytes int64
}

// class is the recordings of one call: one method, params equal but for
// ignored paths. Its Nth request gets its Nth recording, then the last.
type class struct {
	params json.RawMessage
	recs   []Recording
	next   int
}

// New builds a mock from recordings (at least one).
func New(recs []Recording, opts Options) (*Mock, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("mock: no recorded calls to serve")
	}
	for _, p := range opts.Ignore {
		if !history.ValidPath(p) {
			return nil, fmt.Errorf("--ignore %q: not a path such as .a.b or .items[].id", p)
		}
	}
	m := &Mock{opts: opts, methods: map[string][]*class{}, faults: opts.Faults, rnd: opts.Rand, maxBytes: maxInflightBytes}
	if m.rnd == nil {
		m.rnd = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x6d6f636b))
	}
	for _, r := range recs {
		cs := m.methods[r.Method]
		var into *class
		for _, c := range cs {
			if opts.ByMethod || sameParams(c.params, r.Params, opts.Ignore) {
				into = c
				break
			}
		}
		if into == nil {
			into = &class{params: r.Params}
			m.methods[r.Method] = append(cs, into)
		}
		into.recs = append(into.recs, r)
	}
	return m, nil
}

// sameParams reports whether params match recorded params: structurally,
// ignored paths aside, params left out, null, {} and [] alike
// (history.MatchParams), and a recorded "[redacted]" matching any value
// (what was sent there is not known).
func sameParams(recorded, params json.RawMessage, ignore []string) bool {
	changes, err := paramsDiff(recorded, params, ignore)
	return err == nil && len(changes) == 0
}

// redactedJSON is a value history stored in place of a secret.
var redactedJSON = `"` + history.Redacted + `"`

func paramsDiff(recorded, params json.RawMessage, ignore []string) ([]history.Change, error) {
	changes, err := history.MatchParams(recorded, params, ignore)
	if err != nil {
		return nil, err
	}
	kept := changes[:0]
	for _, c := range changes {
		if c.Kind == history.Changed && string(c.Old) == redactedJSON {
			continue
		}
		kept = append(kept, c)
	}
	return kept, nil
}

func orNull(b json.RawMessage) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("null")
	}
	return b
}

// Methods lists the methods the mock answers from recordings.
func (m *Mock) Methods() []string {
	out := make([]string, 0, len(m.methods))
	for k := range m.methods {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Faults returns the fault rules (shared: the TUI's toggle changes them).
func (m *Mock) Faults() []*Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.faults
}

// Toggle turns every fault rule off when any is on, else on; it returns
// whether faults are now on.
func (m *Mock) Toggle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	on := false
	for _, f := range m.faults {
		if !f.Off {
			on = true
		}
	}
	for _, f := range m.faults {
		f.Off = on
	}
	return !on && len(m.faults) > 0
}

// pick returns the fault to apply to a request of method, if any.
func (m *Mock) pick(method string) *Fault {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.faults {
		if f.Off || !f.Applies(method) {
			continue
		}
		if f.Percent >= 100 || m.rnd.Float64()*100 < f.Percent {
			return f
		}
	}
	return nil
}

// Stats says how many requests were answered from recordings and how many
// matched nothing.
func (m *Mock) Stats() (served, missed int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.served, m.missed
}

// builtin answers the standard methods the mock was never recorded
// answering: made from what it was recorded doing, never invented values.
func (m *Mock) builtin(method string) (any, bool) {
	name := m.opts.Name
	switch method {
	case "capabilities.list":
		methods := append(m.Methods(), "health.liveness", "health.readiness", "health.check", "capabilities.list", "identity.get", ControlMethod)
		sort.Strings(methods)
		methods = compactStrings(methods)
		return map[string]any{"primal": name, "version": "mock", "methods": methods, "protocol": "jsonrpc-2.0",
			"mock": map[string]any{"of": name, "aliases": aliases(m.opts.Aliases), "faults": m.faultState()}}, true
	case "identity.get":
		return map[string]any{"primal": name, "version": "mock", "domain": "mock"}, true
	case "health.liveness", "health.check":
		return map[string]any{"status": "alive", "primal": name}, true
	case "health.readiness":
		return map[string]any{"ready": true}, true
	case ControlMethod:
		on := m.Toggle()
		return map[string]any{"faults": m.faultState(), "on": on}, true
	}
	return nil, false
}

// ControlMethod toggles the mock's faults (the TUI's key calls it).
const ControlMethod = "mock.faults.toggle"

func (m *Mock) faultState() []map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []map[string]any{}
	for _, f := range m.faults {
		out = append(out, map[string]any{"spec": f.Spec, "on": !f.Off})
	}
	return out
}

// aliases is a for JSON: [] rather than null for none.
func aliases(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// Answer is what the mock answers one request with.
type Answer struct {
	Result any
	Err    error
	Fault  peer.Fault
}

// Handle answers one request: a fault if one applies, else the recording
// its params match (the Nth for the Nth such request, then the last again),
// after the recorded latency. A method never recorded is -32601; a known
// method with params never recorded is -32602, and the nearest recorded
// params are logged as a diff.
func (m *Mock) Handle(ctx context.Context, method string, params json.RawMessage) Answer {
	f := m.pick(method)
	if f != nil {
		switch f.Kind {
		case FaultError:
			return Answer{Err: &ipc.RPCError{Code: f.Code, Message: f.Message}}
		case FaultDelay:
			if !backoff.Sleep(ctx, f.Delay) {
				return Answer{Fault: peer.FaultDrop}
			}
		case FaultDrop:
			return Answer{Fault: peer.FaultDrop}
		case FaultClose:
			return Answer{Fault: peer.FaultClose}
		case FaultCut:
			return Answer{Fault: peer.FaultCut}
		case FaultGarbage:
			return Answer{Fault: peer.FaultGarbage}
		}
	}
	rec, ok := m.find(method, params)
	if !ok {
		if res, ok := m.builtin(method); ok {
			return Answer{Result: res}
		}
		m.mu.Lock()
		m.missed++
		m.mu.Unlock()
		if _, known := m.methods[method]; !known {
			m.logf("miss: %s was never recorded (recorded: %s)", method, strings.Join(m.Methods(), ", "))
			return Answer{Err: &ipc.RPCError{Code: -32601, Message: "Method not found: " + method + " (not recorded)"}}
		}
		m.logf("miss: %s with params %s matches no recording; the nearest recording, as it differs from what was sent (recorded → sent):\n%s", method, clip(params), m.nearest(method, params))
		return Answer{Err: &ipc.RPCError{Code: -32602, Message: "Invalid params: no recorded call of " + method + " with these params"}}
	}
	if m.opts.Latency.Recorded && rec.Duration > 0 {
		d := time.Duration(float64(rec.Duration) * m.opts.Latency.Scale)
		if !backoff.Sleep(ctx, d) {
			return Answer{Fault: peer.FaultDrop}
		}
	}
	m.mu.Lock()
	m.served++
	m.mu.Unlock()
	if rec.Error != nil {
		if history.HasRedacted(rec.Error.Data) || strings.Contains(rec.Error.Message, history.Redacted) {
			m.noteRedacted()
		}
		return Answer{Err: &ipc.RPCError{Code: rec.Error.Code, Message: rec.Error.Message, Data: rec.Error.Data}}
	}
	if history.HasRedacted(rec.Result) {
		m.noteRedacted()
	}
	return Answer{Result: rec.Result}
}

func (m *Mock) find(method string, params json.RawMessage) (Recording, bool) {
	cs := m.methods[method]
	for _, c := range cs {
		if m.opts.ByMethod || sameParams(c.params, params, m.opts.Ignore) {
			m.mu.Lock()
			i := c.next
			if c.next < len(c.recs)-1 {
				c.next++
			}
			m.mu.Unlock()
			return c.recs[i], true
		}
	}
	return Recording{}, false
}

// nearest writes the diff from the request's params to the recorded params
// of method that differ least.
func (m *Mock) nearest(method string, params json.RawMessage) string {
	var best []history.Change
	for _, c := range m.methods[method] {
		d, err := paramsDiff(c.params, params, m.opts.Ignore)
		if err != nil {
			continue
		}
		if best == nil || len(d) < len(best) {
			best = d
		}
	}
	hidden := make([]history.Change, len(best))
	for i, c := range best {
		secret := history.SecretPath(c.Path) // what the client sent there is its secret
		c.Old, c.New = hide(c.Old, secret), hide(c.New, secret)
		hidden[i] = c
	}
	var b bytes.Buffer
	_ = history.FormatDiff(&b, hidden, history.DiffFormat{MaxChanges: 20})
	return strings.TrimRight(b.String(), "\n")
}

func (m *Mock) noteRedacted() {
	m.logMu.Lock()
	defer m.logMu.Unlock()
	if m.noted {
		return
	}
	m.noted = true
	if m.opts.Log != nil {
		fmt.Fprintf(m.opts.Log, "primalscope: mock: serving \"%s\" placeholders where history redacted secrets; the mock never invents a value\n", history.Redacted)
	}
}

func (m *Mock) logf(format string, args ...any) {
	if m.opts.Log == nil {
		return
	}
	m.logMu.Lock()
	defer m.logMu.Unlock()
	fmt.Fprintln(m.opts.Log, "primalscope: mock: "+textsafe.SanitizeMultiline(fmt.Sprintf(format, args...)))
}

// hide is a diff value fit for the log: "[redacted]" under a secret path,
// else with its own secret-keyed members redacted.
func hide(v json.RawMessage, secret bool) json.RawMessage {
	if v == nil {
		return nil
	}
	if secret {
		return json.RawMessage(redactedJSON)
	}
	red, _, err := history.Redact(v)
	if err != nil {
		return json.RawMessage(redactedJSON)
	}
	return red
}

// clip shows a client's params in a log line: secrets redacted (the log is
// stderr and --log, not the client's), at most 200 bytes.
func clip(b json.RawMessage) string {
	red, _, err := history.Redact(orNull(b))
	if err != nil {
		return "(params that are not JSON)"
	}
	s := string(red)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
