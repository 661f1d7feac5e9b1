package ipc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func start(t testing.TB, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	s, err := ipctest.Listen(filepath.Join(tempDir(t), "p.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t testing.TB, s *ipctest.Server, opts ipc.Options) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, s.Endpoint(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func beardog() *ipctest.Primal {
	return &ipctest.Primal{Name: "beardog", Version: "0.9.0", Format: ipctest.FormatE,
		Groups: []ipctest.Group{{Type: "crypto", Methods: []string{"sign_ed25519", "verify_ed25519"}}}}
}

// checkNoLeak fails when goroutines started during the test outlive it.
func checkNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines before, %d after:\n%s", before, n, buf)
		}
	})
}

func TestCallAndPeerError(t *testing.T) {
	s := start(t, beardog().Config())
	c := dial(t, s, ipc.Options{})
	resp, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"status":"alive"}` {
		t.Fatalf("result %s", resp.Result)
	}
	if !strings.Contains(string(resp.Sent), `"method":"health.liveness"`) || !strings.Contains(string(resp.Sent), `"id":1`) {
		t.Fatalf("sent %s", resp.Sent)
	}
	_, err = c.Call(ctxT(t, 2*time.Second), "no.such", map[string]int{"a": 1})
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != -32601 {
		t.Fatalf("want -32601, got %v", err)
	}
}

func TestOutOfOrderLean(t *testing.T) {
	s := start(t, ipctest.LeanDaemon())
	c := dial(t, s, ipc.Options{Wire: ipc.WireLean})
	var wg sync.WaitGroup
	order := make(chan int, 2)
	for i, ms := range []int{800, 0} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Call(ctxT(t, 3*time.Second), "Sleep", map[string]int{"ms": ms})
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf(`{"slept_ms":%d}`, ms); string(resp.Result) != want {
				t.Errorf("call %d got %s want %s", i, resp.Result, want)
			}
			order <- ms
		}()
		for s.Calls() < int64(i+1) { // the long call is at the server before the short one leaves
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	if first := <-order; first != 0 {
		t.Fatalf("the short sleep should answer first, got %d", first)
	}
}

func TestLeanEventsAndNotifications(t *testing.T) {
	s := start(t, ipctest.LeanDaemon())
	c := dial(t, s, ipc.Options{Wire: ipc.WireLean})
	if _, err := c.Call(ctxT(t, 2*time.Second), "Ping", nil); err != nil {
		t.Fatal(err)
	}
	s.Conns()[0].Event("NewMail", map[string]string{"account_id": "abc"})
	s.Conns()[0].Notify("dag.event", map[string]int{"n": 1})
	m := <-c.Incoming()
	if m.Kind != ipc.KindEvent || m.Type != "NewMail" || string(m.Data) != `{"account_id":"abc"}` {
		t.Fatalf("event: %+v", m)
	}
	m = <-c.Incoming()
	if m.Kind != ipc.KindNotification || m.Method != "dag.event" {
		t.Fatalf("notification: %+v", m)
	}
}

func TestLeanDropsStringID(t *testing.T) {
	s := start(t, ipctest.LeanDaemon())
	c := dial(t, s, ipc.Options{Wire: ipc.WireHolon}) // holon wire sends string ids
	_, err := c.Call(ctxT(t, 2*time.Second), "Ping", nil)
	var ce *ipc.ClosedError
	if !errors.As(err, &ce) || ce.InFlight != 1 {
		t.Fatalf("want connection closed with 1 in flight, got %v", err)
	}
}

func TestServerRequestAndReply(t *testing.T) {
	s := start(t, beardog().Config())
	c := dial(t, s, ipc.Options{})
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	got := make(chan *ipc.Message, 1)
	go func() {
		m, err := s.Conns()[0].Ask(ctxT(t, 2*time.Second), "client.v1.Client/Hello", map[string]string{"hi": "there"})
		if err != nil {
			t.Error(err)
		}
		got <- m
	}()
	m := <-c.Incoming()
	if m.Kind != ipc.KindRequest || string(m.ID) != `"s1"` {
		t.Fatalf("request: %+v", m)
	}
	if err := c.Reply(ctxT(t, time.Second), m.ID, json.RawMessage(`{"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}
	ans := <-got
	if ans == nil || string(ans.Result) != `{"ok":true}` {
		t.Fatalf("server got %+v", ans)
	}
}

func TestHandlerAnswersAutomatically(t *testing.T) {
	s := start(t, beardog().Config())
	c := dial(t, s, ipc.Options{Handler: func(_ context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
		if m.Method == "rpc.heartbeat" {
			return json.RawMessage(`{}`), nil, true
		}
		return nil, nil, false
	}})
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	ans, err := s.Conns()[0].Ask(ctxT(t, 2*time.Second), "rpc.heartbeat", map[string]any{})
	if err != nil || string(ans.Result) != `{}` {
		t.Fatalf("heartbeat answer %+v %v", ans, err)
	}
}

func TestTimeoutAndStaleAnswer(t *testing.T) {
	checkNoLeak(t)
	s := start(t, ipctest.Config{Methods: beardog().Config().Methods, Behavior: ipctest.Behavior{Delay: 300 * time.Millisecond}})
	c := dial(t, s, ipc.Options{})
	_, err := c.Call(ctxT(t, 50*time.Millisecond), "health.liveness", nil)
	var te *ipc.TimeoutError
	if !errors.As(err, &te) || te.Method != "health.liveness" {
		t.Fatalf("want timeout, got %v", err)
	}
	m := <-c.Incoming() // the late answer
	if m.Kind != ipc.KindUnmatched || !strings.HasPrefix(m.Warning, "stale_response_id") {
		t.Fatalf("late answer: %+v", m)
	}
	c.Close()
	s.Close()
}

func TestSilentPeerTimesOut(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	c := dial(t, s, ipc.Options{})
	_, err := c.Call(ctxT(t, 100*time.Millisecond), "health.liveness", nil)
	var te *ipc.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want timeout, got %v", err)
	}
}

func TestCancel(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	c := dial(t, s, ipc.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := c.Call(ctx, "x.y", nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want canceled, got %v", err)
	}
}

func TestGarbageNamedInTimeout(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{Garbage: true}})
	c := dial(t, s, ipc.Options{})
	if _, err := c.Call(ctxT(t, 100*time.Millisecond), "health.liveness", nil); err == nil {
		t.Fatal("garbage must not answer a call")
	}
	m := <-c.Incoming()
	if m.Kind != ipc.KindInvalid {
		t.Fatalf("want invalid frame delivered, got %+v", m)
	}
	_, err := c.Call(ctxT(t, 100*time.Millisecond), "health.liveness", nil)
	var te *ipc.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(te.Where, "not JSON-RPC") || !strings.Contains(te.Where, "<html>") {
		t.Fatalf("want a timeout naming the garbage, got %v", err)
	}
}

func TestFrameTooLarge(t *testing.T) {
	s := start(t, ipctest.Config{Methods: beardog().Config().Methods, Behavior: ipctest.Behavior{Oversize: 200 << 10}})
	c := dial(t, s, ipc.Options{MaxFrame: 64 << 10})
	_, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil)
	var fe *ipc.FrameTooLargeError
	if !errors.As(err, &fe) || fe.Limit != 64<<10 || !strings.Contains(err.Error(), "64 KiB") {
		t.Fatalf("want frame too large naming 64 KiB, got %v", err)
	}
}

func TestCloseMidLine(t *testing.T) {
	s := start(t, ipctest.Config{Methods: beardog().Config().Methods, Behavior: ipctest.Behavior{CloseMidLine: true}})
	c := dial(t, s, ipc.Options{})
	_, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil)
	var ce *ipc.ClosedError
	if !errors.As(err, &ce) || ce.InFlight != 1 || !strings.Contains(err.Error(), "middle of a message") {
		t.Fatalf("want closed mid-message with 1 in flight, got %v", err)
	}
}

func TestDuplicateAndUnknownIDs(t *testing.T) {
	s := start(t, ipctest.Config{Methods: beardog().Config().Methods, Behavior: ipctest.Behavior{Duplicate: true}})
	c := dial(t, s, ipc.Options{})
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	m := <-c.Incoming()
	if !strings.HasPrefix(m.Warning, "duplicate_response_id") {
		t.Fatalf("want duplicate warning, got %+v", m)
	}

	s2 := start(t, ipctest.Config{Methods: beardog().Config().Methods, Behavior: ipctest.Behavior{WrongID: true}})
	var mu sync.Mutex
	var warnings []string
	c2 := dial(t, s2, ipc.Options{Trace: func(e ipc.TraceEvent) {
		if e.Warning != "" {
			mu.Lock()
			warnings = append(warnings, e.Warning)
			mu.Unlock()
		}
	}})
	if _, err := c2.Call(ctxT(t, 100*time.Millisecond), "health.liveness", nil); err == nil {
		t.Fatal("a wrongly numbered answer must not satisfy the call")
	}
	m = <-c2.Incoming()
	if !strings.HasPrefix(m.Warning, "unknown_response_id") {
		t.Fatalf("want unknown warning, got %+v", m)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) == 0 {
		t.Fatal("the trace hook saw no warning")
	}
}

func TestBTSPRequired(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{Silent: true,
		OnConnect: []byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"BTSP handshake required","data":{"btsp_version":"2.0"}},"id":null}`)}})
	c := dial(t, s, ipc.Options{})
	_, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil)
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) || be.Peer == nil || be.Peer.Code != -32600 {
		t.Fatalf("want BTSP required, got %v", err)
	}
	// Once told, the Conn never sends another call in cleartext.
	time.Sleep(100 * time.Millisecond) // let the server read what was sent before the demand arrived
	before := s.Calls()
	if _, err := c.Call(ctxT(t, time.Second), "health.liveness", nil); !errors.As(err, &be) {
		t.Fatalf("want BTSP required at once, got %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if s.Calls() > before {
		t.Fatalf("a call was sent in cleartext after the peer demanded BTSP")
	}
}

func TestInvalidParamsRefusedBeforeSending(t *testing.T) {
	s := start(t, ipctest.Config{Methods: map[string]ipctest.HandlerFunc{}})
	c := dial(t, s, ipc.Options{})
	_, err := c.Send(ctxT(t, time.Second), ipc.Request{Method: "x", Params: json.RawMessage(`{"a":`)})
	if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("invalid params must be refused before sending, got %v", err)
	}
}

func TestCloseFailsInFlightAndLeaksNothing(t *testing.T) {
	checkNoLeak(t)
	dir := tempDir(t)
	s, err := ipctest.Listen(filepath.Join(dir, "s.sock"), ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipc.Dial(context.Background(), s.Endpoint(), ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := c.Call(context.Background(), "a.b", nil)
			errs <- err
		}()
	}
	for c.InFlight() < 3 {
		time.Sleep(time.Millisecond)
	}
	s.Close() // the peer goes away
	for i := 0; i < 3; i++ {
		var ce *ipc.ClosedError
		if err := <-errs; !errors.As(err, &ce) || ce.InFlight != 3 {
			t.Fatalf("want closed with 3 in flight, got %v", err)
		}
	}
	<-c.Done()
	if _, err := c.Call(context.Background(), "a.b", nil); err == nil {
		t.Fatal("a call on a closed conn must fail")
	}
	c.Close()
}

func TestManyConcurrentCalls(t *testing.T) {
	s := start(t, beardog().Config())
	c := dial(t, s, ipc.Options{})
	var wg sync.WaitGroup
	for i := 0; i < 1000; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Call(ctxT(t, 10*time.Second), "crypto.sign_ed25519", map[string]int{"i": i})
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf(`{"i":%d}`, i); !strings.Contains(string(resp.Result), want) {
				t.Errorf("answer %s does not match call %d", resp.Result, i)
			}
		}()
	}
	wg.Wait()
}

func TestWriteToPeerThatNeverReads(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{NeverRead: true}})
	c := dial(t, s, ipc.Options{})
	big := json.RawMessage(`"` + strings.Repeat("x", ipctest.NeverReadSize()) + `"`)
	start := time.Now()
	_, err := c.Send(ctxT(t, 300*time.Millisecond), ipc.Request{Method: "a.b", Params: big})
	var te *ipc.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want timeout, got %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the blocked write was not bounded by the deadline")
	}
}

func TestTraceSeesBothWays(t *testing.T) {
	s := start(t, beardog().Config())
	var mu sync.Mutex
	var dirs []ipc.Direction
	c := dial(t, s, ipc.Options{Trace: func(e ipc.TraceEvent) {
		mu.Lock()
		dirs = append(dirs, e.Dir)
		mu.Unlock()
	}})
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dirs) < 2 || dirs[0] != ipc.Out || dirs[1] != ipc.In {
		t.Fatalf("trace saw %v", dirs)
	}
}

func TestIncomingDropsOldestWhenUnread(t *testing.T) {
	s := start(t, beardog().Config())
	c := dial(t, s, ipc.Options{IncomingBuffer: 4})
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		s.Conns()[0].Notify("tick", map[string]int{"n": i})
	}
	// A call after the flood proves the reader was never stalled by it.
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	if c.Dropped() != 6 {
		t.Fatalf("dropped %d, want 6", c.Dropped())
	}
	m := <-c.Incoming()
	if string(m.Params) != `{"n":6}` {
		t.Fatalf("oldest kept should be n=6, got %s", m.Params)
	}
}

func TestIdlessErrorGoesToTheOnlyCall(t *testing.T) {
	s := start(t, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	c := dial(t, s, ipc.Options{})
	go func() {
		for len(s.Conns()) == 0 || s.Calls() == 0 {
			time.Sleep(time.Millisecond)
		}
		s.Conns()[0].WriteRaw([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32002,"message":"riboCipher prefix required"}}` + "\n"))
	}()
	_, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Fatalf("want the id-less -32002 error, got %v", err)
	}
}

func TestAbstractAndTCPDial(t *testing.T) {
	checkNoLeak(t)
	name := fmt.Sprintf("@primalscope-test-%d", time.Now().UnixNano())
	s, err := ipctest.Listen(name, beardog().Config())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ep, err := ipc.ParseEndpoint(name)
	if err != nil || ep.Transport != ipc.Abstract {
		t.Fatalf("parse %s: %+v %v", name, ep, err)
	}
	c, err := ipc.Dial(ctxT(t, 2*time.Second), ep, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	c.Close()

	ts, err := ipctest.ListenTCP("", beardog().Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	ep, err = ipc.ParseEndpoint(ts.Addr)
	if err != nil || ep.Transport != ipc.TCP {
		t.Fatalf("parse %s: %+v %v", ts.Addr, ep, err)
	}
	c, err = ipc.Dial(ctxT(t, 2*time.Second), ep, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(ctxT(t, 2*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
}

// TestTraceKeptOnlyForFramesRead: the trace marks the frames a Conn read
// as kept (each is a Message's Raw, never reused: a consumer may hold the
// slice), and never the frames it wrote (a reused write buffer).
func TestTraceKeptOnlyForFramesRead(t *testing.T) {
	s := start(t, ipctest.Config{Methods: beardog().Config().Methods})
	var mu sync.Mutex
	kept := map[ipc.Direction][]bool{}
	c := dial(t, s, ipc.Options{Trace: func(e ipc.TraceEvent) {
		mu.Lock()
		kept[e.Dir] = append(kept[e.Dir], e.Kept)
		mu.Unlock()
	}})
	if _, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(kept[ipc.In]) == 0 || len(kept[ipc.Out]) == 0 {
		t.Fatalf("traced %v", kept)
	}
	for _, k := range kept[ipc.In] {
		if !k {
			t.Fatal("a frame read was not marked kept")
		}
	}
	for _, k := range kept[ipc.Out] {
		if k {
			t.Fatal("a frame written was marked kept")
		}
	}
}
