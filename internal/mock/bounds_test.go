package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// One client pipelines 20k requests at a mock whose every answer is held
// 30 s, then hangs up: the mock never holds more than its bound of them,
// and lets go of all of them when the client is gone; over a Unix socket
// and over TCP, where the full connection, unread, tells the client's close
// from a half-close by its urgent byte (the held requests waited 30 s).
func TestMockBoundsPipelinedRequestsAndEndsThemOnHangUp(t *testing.T) {
	for _, ep := range []ipc.Endpoint{{Transport: ipc.Unix, Path: filepath.Join(t.TempDir(), "m.sock")}, {Transport: ipc.TCP, Address: "127.0.0.1:0"}} {
		t.Run(string(ep.Transport), func(t *testing.T) { boundsAndHangUp(t, ep) })
	}
}

func boundsAndHangUp(t *testing.T, ep ipc.Endpoint) {
	f, err := ParseFault("*=delay:30s")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New([]Recording{{Method: "a.b", Params: json.RawMessage(`{}`), Result: json.RawMessage(`1`)}}, Options{Name: "x", Faults: []*Fault{f}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := m.Serve(Listen{Endpoint: ep, Wire: WireJSONRPC})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before := runtime.NumGoroutine()
	network, addr := "unix", srv.Endpoint.Path
	if ep.Transport == ipc.TCP {
		network, addr = "tcp", srv.Endpoint.Address
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() { // blocks once the mock stops reading; ends when c closes
		defer close(wrote)
		w := bufio.NewWriter(c)
		for i := 0; i < 20000; i++ {
			if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{}}`+"\n", i); err != nil {
				return
			}
		}
		w.Flush()
	}()
	// The writer, the connection's reader and its handlers.
	waitUntil(t, "the connection to fill", func() bool { return runtime.NumGoroutine() >= before+maxInflight })
	if n := runtime.NumGoroutine() - before; n > maxInflight+8 {
		t.Errorf("one connection holds %d goroutines; at most %d requests may be in flight", n, maxInflight)
	}
	c.Close()
	<-wrote
	waitUntil(t, "the held requests to end after the client hung up", func() bool { return runtime.NumGoroutine() <= before+2 })
}

// A busy server's socket (its backlog full: a dial fails, but not with
// "refused") is not taken for a dead one and removed.
func TestFreeSocketKeepsABusyServersSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "busy.sock")
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil { // never accepts
		t.Fatal(err)
	}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < 64; i++ {
		c, err := net.DialTimeout("unix", sock, 100*time.Millisecond)
		if err != nil {
			break // the backlog is full
		}
		held = append(held, c)
	}
	err = freeSocket(sock)
	if _, serr := os.Lstat(sock); serr != nil {
		t.Fatalf("freeSocket removed the socket of a live, busy server (freeSocket: %v)", err)
	}
	var inUse *InUseError
	if !errors.As(err, &inUse) {
		t.Errorf("freeSocket on a busy server's socket: %v, want an *InUseError", err)
	}
}

// A dead socket is replaced only when it is ours.
func TestFreeSocketReplacesOnlyOwnDeadSocket(t *testing.T) {
	dir := t.TempDir()
	dead := func(name string) string {
		p := filepath.Join(dir, name)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
		return p
	}
	mine := dead("mine.sock")
	if err := freeSocket(mine); err != nil {
		t.Fatalf("our own dead socket: %v", err)
	}
	if _, err := os.Lstat(mine); err == nil {
		t.Errorf("our own dead socket was left in place")
	}
	theirs := dead("theirs.sock")
	if err := os.Lchown(theirs, os.Getuid()+1, -1); err != nil {
		t.Skipf("cannot give the socket to another user here: %v", err)
	}
	if err := freeSocket(theirs); err == nil {
		t.Errorf("another user's dead socket was removed")
	}
	if _, err := os.Lstat(theirs); err != nil {
		t.Errorf("another user's dead socket is gone: %v", err)
	}
}

// A target recorded over BTSP is never served in cleartext: not over
// Holon-RPC, not on a stdio bus, not without its seed.
func TestMockRefusesCleartextForABTSPTarget(t *testing.T) {
	rec := []Recording{{Method: "crypto.sign", Params: json.RawMessage(`{}`), Result: json.RawMessage(`{"signature":"s"}`)}}
	m, err := New(rec, Options{Name: "beardog", BTSPOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	seed := []byte("mock-test-family-seed-0123456789")
	for name, l := range map[string]Listen{
		"holon with a seed": {Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon, Seed: seed},
		"holon":             {Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon},
		"unix, no seed":     {Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(t.TempDir(), "b.sock")}, Wire: WireJSONRPC},
	} {
		srv, err := m.Serve(l)
		if err == nil {
			srv.Close()
		}
		var ce *CleartextError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v, want a *CleartextError", name, err)
		}
	}
	var out strings.Builder
	err = m.ServeStdio(context.Background(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"crypto.sign","params":{}}`+"\n"), &out)
	var ce *CleartextError
	if !errors.As(err, &ce) || out.Len() > 0 {
		t.Errorf("stdio: %v, answered %q; want a *CleartextError and no answer", err, out.String())
	}
	// Even a mock not told the target is BTSP-only never pairs a seed with a wire that has no BTSP.
	plain, _ := New(rec, Options{Name: "beardog"})
	if srv, err := plain.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon, Seed: seed}); !errors.As(err, &ce) {
		if err == nil {
			srv.Close()
		}
		t.Errorf("holon with a seed: %v, want a *CleartextError", err)
	}
}

// TCP and WebSocket listen on loopback unless told otherwise by name.
func TestMockListensOnLoopbackOnly(t *testing.T) {
	m, err := New(recs(), Options{Name: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Listen{
		{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "0.0.0.0:0"}, Wire: WireJSONRPC},
		{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: ":0"}, Wire: WireJSONRPC},
		{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://0.0.0.0:0/rpc"}, Wire: WireHolon},
		{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "example.org:0"}, Wire: WireJSONRPC},
	} {
		srv, err := m.Serve(l)
		if err == nil {
			srv.Close()
		}
		var re *RemoteError
		if !errors.As(err, &re) {
			t.Errorf("%s: %v, want a *RemoteError", l.Endpoint, err)
		}
	}
	for _, l := range []Listen{
		{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:0"}, Wire: WireJSONRPC},
		{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://localhost:0/rpc"}, Wire: WireHolon},
	} {
		srv, err := m.Serve(l)
		if err != nil {
			t.Errorf("%s: %v", l.Endpoint, err)
			continue
		}
		srv.Close()
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The same over Holon-RPC: a WebSocket client pipelines frames at a mock
// whose every answer is held 30 s, then drops its connection (no close
// frame) with frames unsent: the held requests end.
func TestMockHolonFullConnectionEndsOnHangUp(t *testing.T) {
	f, err := ParseFault("*=delay:30s")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New([]Recording{{Method: "a.b", Params: json.RawMessage(`{}`), Result: json.RawMessage(`1`)}}, Options{Name: "x", Faults: []*Fault{f}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, srv.Endpoint.URL, &websocket.DialOptions{Subprotocols: []string{holon.Subprotocol}})
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan struct{})
	go func() { // blocks once the mock stops reading; ends when c closes
		defer close(wrote)
		pad := strings.Repeat("x", 4<<10)
		for i := 0; i < 20000; i++ {
			if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"%d","method":"a.b","params":{"p":%q}}`, i, pad)); err != nil {
				return
			}
		}
	}()
	waitUntil(t, "the connection to fill", func() bool { return runtime.NumGoroutine() >= before+maxInflight })
	time.Sleep(200 * time.Millisecond) // the writer blocked with frames unsent
	c.CloseNow()
	<-wrote
	waitUntil(t, "the held requests to end after the client hung up", func() bool { return runtime.NumGoroutine() <= before+2 })
}
