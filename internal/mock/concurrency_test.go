package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// slowFast is a mock whose a.slow was recorded taking slow, a.fast at once.
func slowFast(t *testing.T, slow time.Duration) *Mock {
	t.Helper()
	m, err := New([]Recording{
		{Method: "a.slow", Params: json.RawMessage(`{}`), Result: json.RawMessage(`"slow"`), Duration: slow},
		{Method: "a.fast", Params: json.RawMessage(`{}`), Result: json.RawMessage(`"fast"`)},
	}, Options{Name: "x", Latency: Latency{Recorded: true, Scale: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitWithin waits for cond at most d.
func waitWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v (%d goroutines)", what, d, runtime.NumGoroutine())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func idOf(t *testing.T, msg []byte) string {
	t.Helper()
	var env struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(msg, &env); err != nil {
		t.Fatalf("answer %q: %v", msg, err)
	}
	return string(env.ID)
}

// Two requests on one Holon-RPC connection, the first recorded taking 2 s:
// the second is answered first, at once; a client that then drops the
// connection without a close frame ends the slow one promptly.
func TestMockHolonAnswersConcurrently(t *testing.T) {
	m := slowFast(t, 2*time.Second)
	srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, srv.Endpoint.URL, &websocket.DialOptions{Subprotocols: []string{holon.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	start := time.Now()
	for _, req := range []string{
		`{"jsonrpc":"2.0","id":"1","method":"a.slow","params":{}}`,
		`{"jsonrpc":"2.0","id":"2","method":"a.fast","params":{}}`,
	} {
		if err := c.Write(ctx, websocket.MessageText, []byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	_, first, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if id := idOf(t, first); id != `"2"` || took > time.Second {
		t.Fatalf("the first answer was id %s after %v; want the fast one (\"2\") at once, not after the slow one's 2 s", id, took)
	}
	t.Logf("the fast answer came after %v", took)
	c.CloseNow() // a plain close: no close frame
	closed := time.Now()
	waitWithin(t, time.Second, "the slow call to end with its connection", func() bool { return runtime.NumGoroutine() <= before+1 })
	t.Logf("goroutines back to %d (from %d) %v after the close", runtime.NumGoroutine(), before, time.Since(closed))
}

// The same over stdio: the fast request is answered first; stopping the
// mock ends the slow one at once; an input that ends (a pipe's writer
// done) still gets every answer.
func TestMockStdioAnswersConcurrently(t *testing.T) {
	m := slowFast(t, 2*time.Second)
	before := runtime.NumGoroutine()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.ServeStdio(ctx, inR, outW) }()
	start := time.Now()
	go func() {
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"a.slow","params":{}}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"a.fast","params":{}}`+"\n")
	}()
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case first := <-lines:
		took := time.Since(start)
		if id := idOf(t, []byte(first)); id != "2" || took > time.Second {
			t.Fatalf("the first answer was id %s after %v; want the fast one (2) at once", id, took)
		}
		t.Logf("the fast answer came after %v", took)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer")
	}
	cancel() // the mock stops (Ctrl-C) with the slow call in flight
	select {
	case err := <-done:
		if err != nil && err != context.Canceled {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("ServeStdio did not return at once when stopped with a call in flight")
	}
	inW.Close()
	outW.Close()
	waitWithin(t, time.Second, "the mock's goroutines to end", func() bool { return runtime.NumGoroutine() <= before })

	// An input that ends: the answers in flight still go out, fast first.
	m = slowFast(t, 200*time.Millisecond)
	var out safeBuf
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"a.slow","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"a.fast","params":{}}` + "\n")
	if err := m.ServeStdio(context.Background(), in, &out); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(got) != 2 || idOf(t, []byte(got[0])) != "2" || idOf(t, []byte(got[1])) != "1" {
		t.Fatalf("answers after the input ended: %q; want 2 then 1", got)
	}
}

// Over TCP a half-closed client (socat, nc -N: the request, then a FIN)
// gets its delayed answer whole, and nothing else: no byte a real primal
// would not send leads it in its stream (the probe that tells a close from
// a half-close is urgent data, read apart).
func TestMockTCPHalfCloseGetsTheAnswerAlone(t *testing.T) {
	m := slowFast(t, 300*time.Millisecond)
	srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:0"}, Wire: WireJSONRPC})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hc, err := net.Dial("tcp", srv.Endpoint.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	_ = hc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(hc, `{"jsonrpc":"2.0","id":7,"method":"a.slow","params":{}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	hc.(*net.TCPConn).CloseWrite()
	all, err := io.ReadAll(hc)
	if err != nil {
		t.Fatalf("a half-closed client: %v (%q)", err, all)
	}
	var a struct {
		ID     int    `json:"id"`
		Result string `json:"result"`
	}
	if !bytes.HasPrefix(all, []byte(`{`)) || bytes.Count(all, []byte("\n")) != 1 {
		t.Fatalf("a half-closed client got %q: want one answer line and nothing else", all)
	}
	if err := json.Unmarshal(all, &a); err != nil || a.ID != 7 || a.Result != "slow" {
		t.Fatalf("a half-closed client got %q (%v)", all, err)
	}
}

// A client that sends a call the mock delays (a 30 s delay fault) and closes
// its connection: the mock stops working for it at once, and its goroutines
// come back to what they were, over TCP (where a close was seen only when
// the answer was written, 30 s later) and over a Unix socket.
func TestMockClientCloseEndsTheWorkForIt(t *testing.T) {
	for _, ep := range []ipc.Endpoint{{Transport: ipc.TCP, Address: "127.0.0.1:0"}, {Transport: ipc.Unix, Path: t.TempDir() + "/m.sock"}} {
		t.Run(string(ep.Transport), func(t *testing.T) {
			f, err := ParseFault("a.slow=delay:30s")
			if err != nil {
				t.Fatal(err)
			}
			m, err := New([]Recording{{Method: "a.slow", Params: json.RawMessage(`{}`), Result: json.RawMessage(`"slow"`)}}, Options{Name: "x", Faults: []*Fault{f}})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := m.Serve(Listen{Endpoint: ep, Wire: WireJSONRPC})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			network, addr := "tcp", srv.Endpoint.Address
			if ep.Transport == ipc.Unix {
				network, addr = "unix", srv.Endpoint.Path
			}
			base := runtime.NumGoroutine()
			c, err := net.Dial(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"a.slow","params":{}}`+"\n"); err != nil {
				t.Fatal(err)
			}
			waitWithin(t, 5*time.Second, "the call to be in flight", func() bool { return handling() == 1 })
			c.Close()
			waitWithin(t, 3*time.Second, "the mock's goroutines to come back to the base after the client closed", func() bool { return handling() == 0 && runtime.NumGoroutine() <= base })
		})
	}
}
