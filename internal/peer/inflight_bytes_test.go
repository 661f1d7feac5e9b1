package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Three clients pipeline large requests (256 KiB each) at handlers that
// wait: the count bounds leave room for 12 at once, the byte bound (1 MiB
// over every connection) for 3, and no more than 3 run at once; once let
// go every request is answered exactly once, on the NDJSON and the
// Holon-RPC wire. Without the byte bound all 12 ran at once.
func TestInflightBytesBoundEveryConnectionTogether(t *testing.T) {
	const (
		perConn, total, clients, each = 4, 64, 3, 4
		size                          = 256 << 10
		maxBytes                      = 1 << 20
		fits                          = 3 // requests of a little more than 256 KiB in 1 MiB
	)
	pad := strings.Repeat("x", size)
	check := func(t *testing.T, g *gate, answers chan int) {
		t.Helper()
		waitFor(t, "the server to fill its byte bound", func() bool { return g.running.Load() >= fits })
		time.Sleep(300 * time.Millisecond) // room for a handler past the bound to start
		if p, b := g.peak.Load(), g.peakBytes.Load(); p > fits || b > maxBytes {
			t.Fatalf("%d requests (%d bytes of params) handled at once over %d connections; the byte bound is %d", p, b, clients, maxBytes)
		}
		close(g.release)
		for c := 0; c < clients; c++ {
			if n := <-answers; n != each {
				t.Errorf("a client got %d answers of %d", n, each)
			}
		}
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.seen) != clients*each {
			t.Errorf("%d distinct requests handled, want %d", len(g.seen), clients*each)
		}
		for _, n := range g.seen {
			if n != 1 {
				t.Errorf("a request handled %d times", n)
			}
		}
	}
	t.Run("ndjson", func(t *testing.T) {
		g := newGate()
		srv, err := Listen(filepath.Join(t.TempDir(), "p.sock"), Config{Concurrent: true,
			MaxInflight: perConn, MaxInflightTotal: total, MaxInflightBytes: maxBytes, Dispatch: g.dispatch})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		answers := make(chan int, clients)
		for c := 0; c < clients; c++ {
			conn, err := net.Dial("unix", srv.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			go func(c int) {
				w := bufio.NewWriter(conn)
				for i := 0; i < each; i++ {
					fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{"c":%d,"i":%d,"pad":"%s"}}`+"\n", i, c, i, pad)
				}
				w.Flush()
			}(c)
			go func() {
				r := bufio.NewReader(conn)
				n := 0
				for n < each {
					if _, err := r.ReadString('\n'); err != nil {
						break
					}
					n++
				}
				answers <- n
			}()
		}
		check(t, g, answers)
	})
	t.Run("holon", func(t *testing.T) {
		g := newGate()
		hs, err := ListenHolon("127.0.0.1:0", HolonConfig{Path: "/rpc", Concurrent: true, MaxMessage: 2 << 20,
			MaxInflight: perConn, MaxInflightTotal: total, MaxInflightBytes: maxBytes, Dispatch: g.dispatch, Lenient: true})
		if err != nil {
			t.Fatal(err)
		}
		defer hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		answers := make(chan int, clients)
		for c := 0; c < clients; c++ {
			ws, _, err := websocket.Dial(ctx, hs.URL, &websocket.DialOptions{Subprotocols: []string{"holon-rpc"}})
			if err != nil {
				t.Fatal(err)
			}
			ws.SetReadLimit(4 << 20)
			defer ws.CloseNow()
			go func(c int) {
				for i := 0; i < each; i++ {
					ws.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"%d","method":"a.b","params":{"c":%d,"i":%d,"pad":"%s"}}`, i+1, c, i, pad))
				}
			}(c)
			go func() {
				n := 0
				for n < each {
					if _, _, err := ws.Read(ctx); err != nil {
						break
					}
					n++
				}
				answers <- n
			}()
		}
		check(t, g, answers)
	})
}

// A request larger than the byte bound waits for all of it and is
// answered, not held forever.
func TestInflightBytesLargerThanTheBound(t *testing.T) {
	srv, err := Listen(filepath.Join(t.TempDir(), "p.sock"), Config{Concurrent: true, MaxInflightBytes: 1 << 10,
		Methods: map[string]HandlerFunc{"a.b": func(context.Context, json.RawMessage) (any, error) { return "ok", nil }}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	conn, err := net.Dial("unix", srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	for i := 0; i < 3; i++ {
		fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{"pad":"%s"}}`+"\n", i, strings.Repeat("x", 4<<10))
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"ok"`) {
			t.Fatalf("request %d of 4 KiB with a 1 KiB bound: %q, %v", i, line, err)
		}
	}
}
