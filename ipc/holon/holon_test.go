package holon_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func echo(_ context.Context, p json.RawMessage) (any, error) {
	if p == nil {
		p = json.RawMessage(`{}`)
	}
	return p, nil
}

func startHolon(t testing.TB, cfg holon.Options, hc ipctest.HolonConfig) *ipctest.HolonServer {
	t.Helper()
	if hc.Methods == nil {
		hc.Methods = map[string]ipctest.HandlerFunc{"echo": echo}
	}
	s, err := ipctest.ListenHolon("127.0.0.1:0", hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// recorder collects trace events.
type recorder struct {
	mu  sync.Mutex
	evs []ipc.TraceEvent
}

func (r *recorder) trace(ev ipc.TraceEvent) {
	r.mu.Lock()
	ev.Data = append([]byte(nil), ev.Data...)
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) warnings() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, ev := range r.evs {
		if ev.Warning != "" {
			b.WriteString(ev.Warning + "\n")
		}
	}
	return b.String()
}

func (r *recorder) out() [][]byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var o [][]byte
	for _, ev := range r.evs {
		if ev.Dir == ipc.Out {
			o = append(o, ev.Data)
		}
	}
	return o
}

func dialConn(t *testing.T, s *ipctest.HolonServer, rec *recorder) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	opts := ipc.Options{}
	if rec != nil {
		opts.Trace = rec.trace
	}
	c, err := ipc.Dial(ctx, s.Endpoint(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// eventually polls cond until it holds or 5 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func call(t *testing.T, c *ipc.Conn, method string, params any) (*ipc.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Call(ctx, method, params)
}

func TestCallSendsStrictEnvelopes(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	resp, err := call(t, c, "echo", map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"x":1}` {
		t.Fatalf("result %s", resp.Result)
	}
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
	outs := rec.out()
	if len(outs) != 2 {
		t.Fatalf("sent %d frames", len(outs))
	}
	for _, f := range outs {
		if err := holon.Check(f); err != nil {
			t.Errorf("sent %s: %v", f, err)
		}
	}
	if !strings.Contains(string(outs[0]), `"id":"1"`) || !strings.Contains(string(outs[1]), `"params":{}`) {
		t.Errorf("want string ids and params {}: %s", outs)
	}
	if w := rec.warnings(); w != "" {
		t.Errorf("unexpected warnings: %s", w)
	}
	if s.ProtocolFaults() != 0 {
		t.Errorf("the strict server saw %d faults", s.ProtocolFaults())
	}
}

func TestServerSpeaksFirst(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{SpeakFirst: true})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	var m *ipc.Message
	select {
	case m = <-c.Incoming():
	case <-time.After(5 * time.Second):
		t.Fatal("no Hello")
	}
	if m.Kind != ipc.KindRequest || m.Method != "client.v1.Client/Hello" || string(m.ID) != `"s1"` {
		t.Fatalf("got %+v", m)
	}
	eventually(t, "the 'spoke first' warning", func() bool { return strings.Contains(rec.warnings(), "server spoke first") })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Reply(ctx, m.ID, json.RawMessage(`{"name":"test"}`), nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Hello answer", func() bool { return s.HelloAnswered() == 1 })
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
}

func TestIDlessErrors(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{IDlessErrors: true})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	_, err := call(t, c, "nope", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != 12 {
		t.Fatalf("want error 12, got %v", err)
	}
	if !strings.Contains(rec.warnings(), "response without an id") {
		t.Errorf("warnings: %s", rec.warnings())
	}
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
}

// TestNumericIDAnswerIsNotTaken: primalscope sends the string id "1"; a
// server that answers with the number 1 has not reused the exact id
// (holon-rpc.md), so the answer is not taken: the call times out, and the
// trace and the timeout say why.
func TestNumericIDAnswerIsNotTaken(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{NumericIDs: true})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Call(ctx, "echo", map[string]int{"n": 2})
	var te *ipc.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(te.Error(), "id 1 is a number") {
		t.Fatalf("want a timeout naming the numeric id, got %v", err)
	}
	w := rec.warnings()
	if !strings.Contains(w, "numeric id 1") || !strings.Contains(w, "unknown_response_id: id 1 is a number") {
		t.Errorf("warnings: %s", w)
	}
}

func TestMissingSubprotocolCloses1002(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := holon.Dial(ctx, s.URL, holon.Options{Subprotocols: []string{"json"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.ReadFrame()
	var ce *holon.CloseError
	if !errors.As(err, &ce) || ce.Code != 1002 {
		t.Fatalf("want a 1002 close, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"1002", "protocol error", "missing holon-rpc subprotocol", `"holon-rpc" WebSocket subprotocol`} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}

func TestLenientServerServesWithoutSubprotocol(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{Lenient: true})
	var mu sync.Mutex
	var notes []string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := holon.Dial(ctx, s.URL, holon.Options{Trace: func(ev holon.TraceEvent) {
		mu.Lock()
		notes = append(notes, ev.Warning)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Protocol != holon.Subprotocol {
		t.Errorf("protocol %q", f.Protocol)
	}
}

func TestWrongPathIs404(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := holon.Dial(ctx, "ws://"+s.Addr()+"/nope", holon.Options{})
	var he *holon.HTTPError
	if !errors.As(err, &he) || he.Status != 404 {
		t.Fatalf("want HTTP 404, got %v", err)
	}
	if !strings.Contains(err.Error(), "/nope") || !strings.Contains(err.Error(), "/rpc") {
		t.Errorf("unclear: %v", err)
	}
	// Through ipc the error is a DialError (exit 3).
	ep, _ := ipc.ParseEndpoint("ws://" + s.Addr() + "/nope")
	_, err = ipc.Dial(ctx, ep, ipc.Options{})
	var de *ipc.DialError
	if !errors.As(err, &de) || !errors.As(err, &he) {
		t.Fatalf("want DialError wrapping HTTPError, got %T %v", err, err)
	}
}

func TestBinaryFrameIgnoredAndReported(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{BinaryFrame: true})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rec.warnings(), "binary frame of 4 bytes ignored") {
		t.Errorf("warnings: %s", rec.warnings())
	}
}

func TestCloseCodesReported(t *testing.T) {
	for _, tc := range []struct {
		code   int
		reason string
		want   string
	}{
		{1008, "not allowed", "policy violation"},
		{4000, "heartbeat timeout", "heartbeat timeout"},
		{1002, "invalid envelope", "rejected an envelope"},
		{4321, "custom", "application-defined"},
	} {
		s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f, err := holon.Dial(ctx, s.URL, holon.Options{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the connection", func() bool { return len(s.Conns()) == 1 })
		s.CloseAll(tc.code, tc.reason)
		_, err = f.ReadFrame()
		var ce *holon.CloseError
		if !errors.As(err, &ce) || ce.Code != tc.code || ce.Reason != tc.reason || !ce.ByPeer {
			t.Errorf("%d: got %v", tc.code, err)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: %q lacks %q", tc.code, err, tc.want)
		}
		f.Close()
	}
}

func TestCloseThroughConnIsClosedError(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	c := dialConn(t, s, nil)
	eventually(t, "the connection", func() bool { return len(s.Conns()) == 1 })
	s.CloseAll(1008, "go away")
	<-c.Done()
	var ce *holon.CloseError
	if err := c.Err(); !errors.As(err, &ce) || ce.Code != 1008 {
		t.Fatalf("got %v", err)
	}
}

func TestServerHeartbeatsAnsweredAutomatically(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{Heartbeat: 10 * time.Millisecond})
	rec := &recorder{}
	c := dialConn(t, s, rec)
	eventually(t, "answered server heartbeats", func() bool { return s.HeartbeatsAnswered() >= 3 })
	select {
	case m := <-c.Incoming():
		t.Fatalf("heartbeat reached Incoming: %s", m.Raw)
	default:
	}
	found := false
	for _, f := range rec.out() {
		if strings.Contains(string(f), `"result":{}`) {
			found = true
			if err := holon.Check(f); err != nil {
				t.Errorf("answer %s: %v", f, err)
			}
		}
	}
	if !found {
		t.Error("heartbeat answers are not in the trace")
	}
}

func TestMessageLimit(t *testing.T) {
	big := strings.Repeat("x", 2048)
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{Methods: map[string]ipctest.HandlerFunc{
		"big": func(context.Context, json.RawMessage) (any, error) { return big, nil },
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, s.Endpoint(), ipc.Options{MaxFrame: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(ctx, "big", nil)
	var mt *holon.MessageTooBigError
	if !errors.As(err, &mt) || mt.Limit != 1024 {
		t.Fatalf("want MessageTooBigError, got %v", err)
	}
}

func TestWriteDeadlineInPastFailsWrite(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	f, err := holon.Dial(ctx, s.URL, holon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_ = f.SetWriteDeadline(time.Unix(1, 0))
	if err := f.WriteFrame([]byte(`{"jsonrpc":"2.0","id":"1","method":"echo","params":{}}`)); err == nil {
		t.Fatal("write past its deadline succeeded")
	}
}

func TestPlainJSONRPCCallerIsMadeStrict(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec := &recorder{}
	opts := ipc.Options{Wire: ipc.WireJSONRPC, Trace: rec.trace}
	f, err := ipc.DialFramer(ctx, s.Endpoint(), opts)
	if err != nil {
		t.Fatal(err)
	}
	c := ipc.NewConn(f, opts) // what a generic prober does: the Conn speaks Holon-RPC over a Holon framer
	defer c.Close()
	resp, err := c.Call(ctx, "echo", nil)
	if err != nil {
		t.Fatalf("the strict server refused: %v", err)
	}
	if string(resp.Result) != `{}` || s.ProtocolFaults() != 0 {
		t.Fatalf("result %s, faults %d", resp.Result, s.ProtocolFaults())
	}
	if !strings.Contains(string(resp.Sent), `"id":"1"`) || !strings.Contains(string(resp.Sent), `"params":{}`) {
		t.Errorf("sent %s", resp.Sent)
	}
}

// TestFramerRewritesPlainRequests: a request written straight to the framer
// with a numeric id and no params is sent as Holon-RPC wants it.
func TestFramerRewritesPlainRequests(t *testing.T) {
	s := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec := &recorder{}
	f, err := holon.Dial(ctx, s.URL, holon.Options{Trace: ipc.HolonTrace(rec.trace)})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.WriteFrame([]byte(`{"jsonrpc":"2.0","id":7,"method":"echo"}`)); err != nil {
		t.Fatal(err)
	}
	got, err := f.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"id":"7"`) || s.ProtocolFaults() != 0 {
		t.Fatalf("answer %s, faults %d", got, s.ProtocolFaults())
	}
	if !strings.Contains(rec.warnings(), "request rewritten for Holon-RPC") {
		t.Errorf("warnings: %s", rec.warnings())
	}
}
