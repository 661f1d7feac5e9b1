package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// safeBuf is a log the mock writes from its connections' goroutines.
type safeBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *safeBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *safeBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func recs() []Recording {
	return []Recording{
		{Method: "ledger.entry.create", Params: json.RawMessage(`{"owner":"ada"}`), Result: json.RawMessage(`{"entry_id":"e-1"}`)},
		{Method: "ledger.entry.create", Params: json.RawMessage(`{ "owner" : "ada" }`), Result: json.RawMessage(`{"entry_id":"e-2"}`)},
		{Method: "ledger.entry.create", Params: json.RawMessage(`{"owner":"bob"}`), Result: json.RawMessage(`{"entry_id":"b-1"}`)},
		{Method: "ledger.entry.list", Result: json.RawMessage(`{"lines":0}`)},
		{Method: "ledger.entry.list", Result: json.RawMessage(`{"lines":1}`)},
		{Method: "ledger.sign", Params: json.RawMessage(`{"key":"[redacted]","msg":"m"}`), Result: json.RawMessage(`{"sig":"[redacted]"}`)},
		{Method: "ledger.fail", Error: &history.RPCError{Code: -32000, Message: "full"}},
	}
}

// rawClient speaks NDJSON with bytes written by hand: the mock's id echo
// and framing are checked against what a client really sends, not through
// primalscope's own client.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, path string) *rawClient {
	t.Helper()
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{c: c, r: bufio.NewReader(c)}
}

func (rc *rawClient) ask(t *testing.T, line string) string {
	t.Helper()
	_ = rc.c.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := rc.c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	out, err := rc.r.ReadString('\n')
	if err != nil {
		return "ERR:" + err.Error() + ":" + out
	}
	return strings.TrimSpace(out)
}

func serveMock(t *testing.T, opts Options) (*Mock, string) {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "ledger"
	}
	m, err := New(recs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger.sock")
	srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}, Wire: WireJSONRPC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return m, path
}

func TestSequencesAndIDEcho(t *testing.T) {
	_, path := serveMock(t, Options{})
	c := dialRaw(t, path)
	for _, want := range []string{
		`{"jsonrpc":"2.0","id":"abc-1","result":{"entry_id":"e-1"}}`,
		`{"jsonrpc":"2.0","id":7,"result":{"entry_id":"e-2"}}`,
		`{"jsonrpc":"2.0","id":8,"result":{"entry_id":"e-2"}}`, // then the last again
	} {
		var id string
		switch {
		case strings.Contains(want, `"abc-1"`):
			id = `"abc-1"`
		case strings.Contains(want, `:7,`):
			id = `7`
		default:
			id = `8`
		}
		got := c.ask(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"ledger.entry.create","params":{"owner":"ada"}}`)
		if got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	// Key order and spacing never matter; another owner is another call.
	if got := c.ask(t, `{"params":{ "owner":"bob" },"method":"ledger.entry.create","id":9,"jsonrpc":"2.0"}`); !strings.Contains(got, `"b-1"`) || !strings.Contains(got, `"id":9`) {
		t.Fatalf("bob: %s", got)
	}
	// No params: the list's own sequence.
	if got := c.ask(t, `{"jsonrpc":"2.0","id":10,"method":"ledger.entry.list"}`); !strings.Contains(got, `"lines":0`) {
		t.Fatalf("list 1: %s", got)
	}
	if got := c.ask(t, `{"jsonrpc":"2.0","id":11,"method":"ledger.entry.list"}`); !strings.Contains(got, `"lines":1`) {
		t.Fatalf("list 2: %s", got)
	}
	// A recorded error is served as recorded.
	if got := c.ask(t, `{"jsonrpc":"2.0","id":12,"method":"ledger.fail"}`); !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, `"id":12`) {
		t.Fatalf("fail: %s", got)
	}
}

func TestMissesSayWhy(t *testing.T) {
	log := &safeBuf{}
	_, path := serveMock(t, Options{Log: log})
	c := dialRaw(t, path)
	if got := c.ask(t, `{"jsonrpc":"2.0","id":1,"method":"ledger.nope"}`); !strings.Contains(got, `"code":-32601`) {
		t.Fatalf("unknown method: %s", got)
	}
	if got := c.ask(t, `{"jsonrpc":"2.0","id":2,"method":"ledger.entry.create","params":{"owner":"adx"}}`); !strings.Contains(got, `"code":-32602`) {
		t.Fatalf("unknown params: %s", got)
	}
	l := log.String()
	if !strings.Contains(l, "ledger.nope was never recorded") || !strings.Contains(l, `~ .owner: "ada" → "adx"`) {
		t.Fatalf("the log should name the miss and the nearest recording's diff:\n%s", l)
	}
	// A recorded [redacted] matches whatever is sent there; the placeholder
	// is served as it is, said once.
	if got := c.ask(t, `{"jsonrpc":"2.0","id":3,"method":"ledger.sign","params":{"msg":"m","key":"k-123456"}}`); !strings.Contains(got, `"[redacted]"`) {
		t.Fatalf("redacted param: %s", got)
	}
	c.ask(t, `{"jsonrpc":"2.0","id":4,"method":"ledger.sign","params":{"msg":"m","key":"k-123456"}}`)
	if n := strings.Count(log.String(), "placeholders"); n != 1 {
		t.Fatalf("the placeholder note should come once, came %d times", n)
	}
}

func TestIgnoreAndMatchByMethod(t *testing.T) {
	_, path := serveMock(t, Options{Ignore: []string{".owner"}})
	c := dialRaw(t, path)
	if got := c.ask(t, `{"jsonrpc":"2.0","id":1,"method":"ledger.entry.create","params":{"owner":"zed"}}`); !strings.Contains(got, `"e-1"`) {
		t.Fatalf("--ignore .owner: %s", got)
	}
	_, path = serveMock(t, Options{ByMethod: true})
	c = dialRaw(t, path)
	if got := c.ask(t, `{"jsonrpc":"2.0","id":1,"method":"ledger.entry.create","params":[1,2,3]}`); !strings.Contains(got, `"e-1"`) {
		t.Fatalf("--match method: %s", got)
	}
}

func TestEveryFault(t *testing.T) {
	parse := func(s string) *Fault {
		f, err := ParseFault(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	line := `{"jsonrpc":"2.0","id":1,"method":"ledger.entry.list"}`
	for _, c := range []struct {
		spec  string
		check func(t *testing.T, got string, took time.Duration)
	}{
		{"ledger.entry.list=error:-32000:busy", func(t *testing.T, got string, _ time.Duration) {
			if !strings.Contains(got, `"code":-32000`) || !strings.Contains(got, `"busy"`) || !strings.Contains(got, `"id":1`) {
				t.Errorf("error: %s", got)
			}
		}},
		{"*=delay:300ms", func(t *testing.T, got string, took time.Duration) {
			if !strings.Contains(got, `"lines":0`) || took < 300*time.Millisecond {
				t.Errorf("delay: %s after %s", got, took)
			}
		}},
		{"ledger.*=drop", func(t *testing.T, got string, _ time.Duration) {
			if !strings.Contains(got, "i/o timeout") {
				t.Errorf("drop: want no answer, got %s", got)
			}
		}},
		{"ledger.entry.list=close", func(t *testing.T, got string, _ time.Duration) {
			if !strings.HasPrefix(got, "ERR:EOF:") || got != "ERR:EOF:" {
				t.Errorf("close: want EOF with nothing written, got %q", got)
			}
		}},
		{"ledger.entry.list=cut", func(t *testing.T, got string, _ time.Duration) {
			if !strings.HasPrefix(got, "ERR:EOF:{") || json.Valid([]byte(strings.TrimPrefix(got, "ERR:EOF:"))) {
				t.Errorf("cut: want half a line then EOF, got %q", got)
			}
		}},
		{"ledger.entry.list=garbage", func(t *testing.T, got string, _ time.Duration) {
			if json.Valid([]byte(got)) || strings.HasPrefix(got, "ERR:") {
				t.Errorf("garbage: want a line that is not JSON, got %q", got)
			}
		}},
	} {
		t.Run(c.spec, func(t *testing.T) {
			_, path := serveMock(t, Options{Faults: []*Fault{parse(c.spec)}})
			rc := dialRaw(t, path)
			if c.spec == "ledger.*=drop" {
				_ = rc.c.SetDeadline(time.Now().Add(500 * time.Millisecond))
				rc.c.Write([]byte(line + "\n"))
				_, err := rc.r.ReadString('\n')
				got := "answered"
				if err != nil {
					got = err.Error()
				}
				c.check(t, got, 0)
				return
			}
			start := time.Now()
			got := rc.ask(t, line)
			c.check(t, got, time.Since(start))
		})
	}
}

func TestFaultPercentAndToggle(t *testing.T) {
	f, err := ParseFault("ledger.entry.list=error:-32000:busy@25%")
	if err != nil || f.Percent != 25 {
		t.Fatalf("%+v %v", f, err)
	}
	m, err := New(recs(), Options{Name: "ledger", Latency: Latency{}, Faults: []*Fault{f}, Rand: rand.New(rand.NewPCG(1, 2))})
	if err != nil {
		t.Fatal(err)
	}
	faulted := 0
	for i := 0; i < 400; i++ {
		if a := m.Handle(t.Context(), "ledger.entry.list", nil); a.Err != nil {
			faulted++
		}
	}
	if faulted < 60 || faulted > 140 {
		t.Fatalf("@25%%: %d of 400 faulted", faulted)
	}
	if a := m.Handle(t.Context(), ControlMethod, nil); a.Err != nil || m.Faults()[0].On() {
		t.Fatalf("toggle should turn the faults off: %+v", a)
	}
	for i := 0; i < 50; i++ {
		if a := m.Handle(t.Context(), "ledger.entry.list", nil); a.Err != nil {
			t.Fatal("a fault after toggling off")
		}
	}
	m.Handle(t.Context(), ControlMethod, nil)
	if !m.Faults()[0].On() {
		t.Fatal("a second toggle turns them on again")
	}
}

func TestFaultSpecErrors(t *testing.T) {
	for spec, caret := range map[string]int{
		"nomethod":          8,
		"=drop":             0,
		"x=explode":         2,
		"x=error:abc":       8,
		"x=delay:soon":      8,
		"x=drop:1":          7,
		"x=error:-1:m@200%": 13,
		"x=error:-1:m@25":   13,
	} {
		_, err := ParseFault(spec)
		se, ok := err.(*SpecError)
		if !ok {
			t.Errorf("%q: want a SpecError, got %v", spec, err)
			continue
		}
		if se.Offset != caret {
			t.Errorf("%q: caret at %d, want %d (%s)", spec, se.Offset, caret, se.Msg)
		}
		if !strings.Contains(se.Error(), "^") {
			t.Errorf("%q: no caret in %q", spec, se.Error())
		}
	}
}

// Latency: recorded waits at least the recorded time, scaled; none and the
// parsing need no clock. (Only lower bounds are checked: a loaded machine
// may take longer, never shorter.)
func TestLatencyRecordedAndScaled(t *testing.T) {
	r := []Recording{{Method: "a.b", Result: json.RawMessage(`1`), Duration: 100 * time.Millisecond}}
	for lat, want := range map[string]Latency{"none": {}, "recorded": {Recorded: true, Scale: 1}, "x2": {Recorded: true, Scale: 2}, "x0.5": {Recorded: true, Scale: 0.5}} {
		if l, err := ParseLatency(lat); err != nil || l != want {
			t.Errorf("--latency %s = %+v, %v", lat, l, err)
		}
	}
	for _, c := range []struct {
		lat string
		min time.Duration
	}{{"recorded", 100 * time.Millisecond}, {"x2", 200 * time.Millisecond}} {
		l, _ := ParseLatency(c.lat)
		m, _ := New(r, Options{Name: "x", Latency: l})
		start := time.Now()
		m.Handle(t.Context(), "a.b", nil)
		if took := time.Since(start); took < c.min {
			t.Errorf("--latency %s answered after %s, before %s", c.lat, took, c.min)
		}
	}
	for _, bad := range []string{"fast", "x-1", "x"} {
		if _, err := ParseLatency(bad); err == nil {
			t.Errorf("--latency %s should not parse", bad)
		}
	}
}

func TestServeRefusesALiveSocket(t *testing.T) {
	_, path := serveMock(t, Options{})
	m, _ := New(recs(), Options{Name: "ledger"})
	_, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}, Wire: WireJSONRPC})
	if _, ok := err.(*InUseError); !ok {
		t.Fatalf("a live socket should be in use, got %v", err)
	}
}

// A wildcard fault never takes the control method or the capability list:
// the TUI must still see a mock and turn its faults off.
func TestWildcardFaultSparesTheControls(t *testing.T) {
	for _, spec := range []string{"*=error:-32000:down", "*=drop", "mock.*=drop"} {
		f, err := ParseFault(spec)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := New(recs(), Options{Name: "ledger", Faults: []*Fault{f}})
		if a := m.Handle(t.Context(), "capabilities.list", nil); a.Err != nil || a.Fault != 0 {
			t.Fatalf("%s took capabilities.list: %+v", spec, a)
		}
		if a := m.Handle(t.Context(), ControlMethod, nil); a.Err != nil || a.Fault != 0 || m.Faults()[0].On() {
			t.Fatalf("%s took the control method, or it did not turn the fault off: %+v", spec, a)
		}
	}
	f, _ := ParseFault(ControlMethod + "=error:-32000:no")
	m, _ := New(recs(), Options{Name: "ledger", Faults: []*Fault{f}})
	if a := m.Handle(t.Context(), ControlMethod, nil); a.Err == nil {
		t.Fatal("a fault that names the control method applies to it")
	}
}
