package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// blocker is a Handler whose "client.block" requests wait until release is
// closed (or the connection ends) and whose other requests answer at once.
// started receives each request's method as its handler begins; ended
// receives the context's error of each blocked request as it gives up or is
// released.
type blocker struct {
	started chan string
	ended   chan error
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 16), ended: make(chan error, 16), release: make(chan struct{})}
}

func (b *blocker) handle(ctx context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
	b.started <- m.Method
	if m.Method == "client.block" {
		select {
		case <-b.release:
			b.ended <- nil
		case <-ctx.Done():
			b.ended <- ctx.Err()
			return nil, &ipc.RPCError{Code: -32603, Message: "closing"}, true
		}
	}
	return json.RawMessage(`{"ok":true}`), nil, true
}

// waitFor receives from ch, failing the test if nothing comes within d (a
// bound against a hung test, not a timing assertion).
func waitFor[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
	}
	var zero T
	return zero
}

type asked struct {
	m   *ipc.Message
	err error
}

// handlerSetup serves a primal, dials it with b as the Handler (opts may set
// more), and returns the Conn and its server-side connection, after one call
// has made sure the connection is up.
func handlerSetup(t *testing.T, b *blocker, opts ipc.Options) (*ipc.Conn, *ipctest.Server, *ipctest.ServerConn) {
	t.Helper()
	s := start(t, beardog().Config())
	opts.Handler = b.handle
	c := dial(t, s, opts)
	if _, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	return c, s, s.Conns()[0]
}

// askBlocked sends "client.block" from the server side and waits until its
// handler has started; the answer arrives on the channel returned.
func askBlocked(t *testing.T, b *blocker, sc *ipctest.ServerConn) <-chan asked {
	t.Helper()
	out := make(chan asked, 1)
	go func() {
		m, err := sc.Ask(ctxT(t, 10*time.Second), "client.block", nil)
		out <- asked{m, err}
	}()
	if got := waitFor(t, b.started, 5*time.Second, "handler start"); got != "client.block" {
		t.Fatalf("handler started on %q", got)
	}
	return out
}

func TestSlowHandlerDoesNotStallCalls(t *testing.T) {
	checkNoLeak(t)
	b := newBlocker()
	c, s, sc := handlerSetup(t, b, ipc.Options{})
	blocked := askBlocked(t, b, sc)

	// The handler is blocked: calls and other server requests go on.
	for i := 0; i < 3; i++ {
		if _, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil); err != nil {
			t.Fatalf("call %d while a handler blocks: %v", i, err)
		}
	}
	quick, err := sc.Ask(ctxT(t, 5*time.Second), "client.quick", nil)
	if err != nil || quick.Error != nil || string(quick.Result) != `{"ok":true}` {
		t.Fatalf("a second server request while the first blocks: %+v %v", quick, err)
	}

	close(b.release)
	a := waitFor(t, blocked, 10*time.Second, "answer to the blocked request")
	if a.err != nil || a.m.Error != nil || string(a.m.Result) != `{"ok":true}` {
		t.Fatalf("blocked request answered %+v %v", a.m, a.err)
	}
	c.Close()
	s.Close()
}

func TestHandlerOverflowIsRefused(t *testing.T) {
	b := newBlocker()
	c, _, sc := handlerSetup(t, b, ipc.Options{MaxHandlers: 1})
	blocked := askBlocked(t, b, sc)

	refused, err := sc.Ask(ctxT(t, 5*time.Second), "client.quick", nil)
	if err != nil {
		t.Fatal(err)
	}
	if refused.Error == nil || refused.Error.Code != -32000 || refused.Result != nil {
		t.Fatalf("a request beyond MaxHandlers: want error -32000, got %s", refused.Raw)
	}
	if len(b.started) != 0 {
		t.Fatalf("the handler ran on a refused request (%q)", <-b.started)
	}
	if _, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil); err != nil {
		t.Fatalf("call after a refusal: %v", err)
	}
	close(b.release)
	if a := waitFor(t, blocked, 10*time.Second, "answer to the blocked request"); a.err != nil || a.m.Error != nil {
		t.Fatalf("blocked request answered %+v %v", a.m, a.err)
	}
}

func TestCloseEndsRunningHandlers(t *testing.T) {
	checkNoLeak(t)
	b := newBlocker()
	c, s, sc := handlerSetup(t, b, ipc.Options{})
	askBlocked(t, b, sc)

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	if err := waitFor(t, closed, 10*time.Second, "return from Close"); err != nil {
		t.Fatal(err)
	}
	if err := <-b.ended; err == nil {
		t.Fatal("the handler was released, not told the connection ended")
	}
	for range c.Incoming() { // closed once the handlers are done
	}
	s.Close()
}

// On the Holon wire a refused request gets the Holon-RPC spec's code 8
// (resource exhausted), with the request's own id.
func TestHandlerOverflowHolonCode(t *testing.T) {
	a, peer := net.Pipe()
	b := newBlocker()
	c := ipc.NewConn(ipc.NetFramer(a, 1<<20), ipc.Options{Wire: ipc.WireHolon, Handler: b.handle, MaxHandlers: 1})
	t.Cleanup(func() {
		close(b.release)
		peer.Close()
		c.Close()
	})
	_ = peer.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(peer)
	if _, err := peer.Write([]byte(`{"jsonrpc":"2.0","id":"s1","method":"client.block","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, b.started, 5*time.Second, "handler start")
	if _, err := peer.Write([]byte(`{"jsonrpc":"2.0","id":"s2","method":"client.quick","params":{}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ans struct {
		ID    string
		Error *ipc.RPCError
	}
	if err := json.Unmarshal(line, &ans); err != nil || ans.ID != "s2" || ans.Error == nil || ans.Error.Code != 8 {
		t.Fatalf("refusal on the Holon wire: %s (%v)", line, err)
	}
}
