package holon_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

type notes struct {
	mu sync.Mutex
	s  []string
}

func (n *notes) trace(ev holon.TraceEvent) {
	if ev.Kind != holon.TraceNote {
		return
	}
	n.mu.Lock()
	n.s = append(n.s, ev.Warning)
	n.mu.Unlock()
}

func (n *notes) has(sub string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.s {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func fastSession(t *testing.T, url string, n *notes, hb time.Duration) *holon.Session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := holon.NewSession(ctx, url, holon.SessionOptions{
		Options:           holon.Options{Trace: n.trace},
		HeartbeatInterval: hb,
		HeartbeatTimeout:  50 * time.Millisecond,
		BackoffMin:        5 * time.Millisecond,
		BackoffMax:        40 * time.Millisecond,
		DialTimeout:       2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSessionSendsHeartbeats(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	n := &notes{}
	s := fastSession(t, srv.URL, n, 10*time.Millisecond)
	c := ipc.NewConn(s, ipc.Options{Wire: ipc.WireHolon})
	defer c.Close()
	eventually(t, "client heartbeats", func() bool { return srv.HeartbeatsReceived() >= 3 })
	eventually(t, "a heartbeat round trip", func() bool { return s.LastHeartbeat() > 0 })
	select {
	case m := <-c.Incoming():
		t.Fatalf("a heartbeat answer reached the Conn: %s", m.Raw)
	default:
	}
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
}

func TestSessionHeartbeatTimeoutReconnects(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{IgnoreHeartbeats: true})
	n := &notes{}
	s := fastSession(t, srv.URL, n, 10*time.Millisecond)
	eventually(t, "a reconnect after a heartbeat timeout", func() bool { return s.Reconnects() >= 1 })
	if !n.has("closing with 4000") || !n.has("no answer to rpc.heartbeat") {
		t.Errorf("notes: %v", n.s)
	}
}

func TestSessionReconnectsAfterDrop(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	n := &notes{}
	s := fastSession(t, srv.URL, n, -1)
	c := ipc.NewConn(s, ipc.Options{Wire: ipc.WireHolon})
	defer c.Close()
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatal(err)
	}
	srv.Drop()
	eventually(t, "the reconnect", func() bool { return s.Reconnects() >= 1 && s.Connected() })
	if !n.has("reconnecting in") || !n.has("reconnected to") {
		t.Errorf("notes: %v", n.s)
	}
	if _, err := call(t, c, "echo", nil); err != nil {
		t.Fatalf("after reconnect: %v", err)
	}
	if srv.Accepted() < 2 {
		t.Errorf("accepted %d", srv.Accepted())
	}
}

func TestSessionAnswersUnavailableWhileDown(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	n := &notes{}
	s := fastSession(t, srv.URL, n, -1)
	c := ipc.NewConn(s, ipc.Options{Wire: ipc.WireHolon})
	defer c.Close()
	srv.Close() // gone for good: every reconnect fails
	eventually(t, "the drop", func() bool { return !s.Connected() })
	_, err := call(t, c, "echo", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != 14 {
		t.Fatalf("want error 14, got %v", err)
	}
	eventually(t, "several failed reconnects", func() bool { return n.has("attempt 6") })
	// The waits double from BackoffMin (5 ms) to BackoffMax (40 ms), ±10 %.
	n.mu.Lock()
	var waits []time.Duration
	for _, s := range n.s {
		var d string
		var a int
		if i := strings.Index(s, "reconnecting in "); i >= 0 {
			if _, err := fmt.Sscanf(s[i:], "reconnecting in %s (attempt %d)", &d, &a); err == nil {
				if w, err := time.ParseDuration(d); err == nil {
					waits = append(waits, w)
				}
			}
		}
	}
	n.mu.Unlock()
	if len(waits) < 6 {
		t.Fatalf("waits %v", waits)
	}
	for i, w := range waits[:6] {
		want := min(5*time.Millisecond<<i, 40*time.Millisecond)
		if w < want*9/10-time.Millisecond || w > want*11/10+time.Millisecond {
			t.Errorf("wait %d is %s, want %s ±10%%", i+1, w, want)
		}
	}
	if err := c.Err(); err != nil {
		t.Fatalf("the Conn ended: %v", err)
	}
}

func TestSessionEndsWithContext(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := holon.NewSession(ctx, srv.URL, holon.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := s.ReadFrame(); err == nil {
		t.Fatal("ReadFrame after the end")
	}
	s.Close()
}

func TestSessionFirstDialError(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	_, err := holon.NewSession(context.Background(), "ws://"+srv.Addr()+"/wrong", holon.SessionOptions{})
	var he *holon.HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("got %v", err)
	}
}

func TestTLSVerifiedUnlessInsecure(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{holon.Subprotocol}})
		if err != nil {
			return
		}
		ws.Close(websocket.StatusNormalClosure, "")
	}))
	defer ts.Close()
	url := "wss://" + strings.TrimPrefix(ts.URL, "https://") + "/rpc"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if f, err := holon.Dial(ctx, url, holon.Options{}); err == nil {
		f.Close()
		t.Fatal("a self-signed certificate was accepted")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("unclear: %v", err)
	}
	f, err := holon.Dial(ctx, url, holon.Options{Insecure: true})
	if err != nil {
		t.Fatalf("insecure: %v", err)
	}
	f.Close()
	// Through ipc, the option carries --insecure; without it, the
	// certificate is checked there too.
	ep, _ := ipc.ParseEndpoint(url)
	if c, err := ipc.Dial(ctx, ep, ipc.Options{}); err == nil {
		c.Close()
		t.Fatal("ipc: a self-signed certificate was accepted")
	}
	c, err := ipc.Dial(ctx, ep, ipc.Options{Insecure: true})
	if err != nil {
		t.Fatalf("ipc insecure: %v", err)
	}
	c.Close()
}

func TestInspect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // a warning substring, "" for none
		req  bool
		resp bool
	}{
		{`{"jsonrpc":"2.0","id":"1","method":"a","params":{}}`, "", true, false},
		{`{"jsonrpc":"2.0","id":"1","result":{}}`, "", false, true},
		{`{"jsonrpc":"2.0","id":"1","error":{"code":12,"message":"x"}}`, "", false, true},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "numeric id 1", false, true},
		{`{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}`, "response without an id", false, true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, "response with a null id", false, true},
		{`{"jsonrpc":"2.0","id":"1","result":{},"extra":1}`, "unknown top-level field(s): extra", false, true},
		{`{"id":"1","result":{}}`, `"jsonrpc" is missing`, false, true},
		{`{"jsonrpc":"1.0","id":"1","result":{}}`, `not "2.0"`, false, true},
		{`{"jsonrpc":"2.0","id":"","method":"a"}`, "empty string", true, false},
		{`{"jsonrpc":"2.0","method":"a"}`, "without an id", false, false},
		{`{"jsonrpc":"2.0","id":"1","method":"a","params":[1]}`, "params is not an object", true, false},
		{`{"jsonrpc":"2.0","id":"1","error":{"code":1.5,"message":"x"}}`, "not an integer", false, true},
		{`{"jsonrpc":"2.0","id":"1","error":"boom"}`, "error is not an object", false, true},
		{`{"jsonrpc":"2.0","id":"1","result":1,"error":{"code":1,"message":"x"}}`, "both result and error", false, true},
		{`[1,2]`, "not a JSON object", false, false},
		{`nope`, "not a JSON object", false, false},
	} {
		e := holon.Inspect([]byte(tc.in))
		got := strings.Join(e.Warnings, "; ")
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%s: warnings %q, want %q", tc.in, got, tc.want)
		}
		if e.IsRequest != tc.req || e.IsResponse != tc.resp {
			t.Errorf("%s: request %v response %v", tc.in, e.IsRequest, e.IsResponse)
		}
	}
}
