package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// gate is a dispatcher whose handlers wait for release, counting how many
// run at once (the peak) and each request it saw.
type gate struct {
	running, peak atomic.Int64
	// bytes and peakBytes: the params' sizes of the handlers running.
	bytes, peakBytes atomic.Int64
	release          chan struct{}
	mu               sync.Mutex
	seen             map[string]int
}

func newGate() *gate { return &gate{release: make(chan struct{}), seen: map[string]int{}} }

func (g *gate) dispatch(ctx context.Context, _ string, params json.RawMessage) (any, error, Fault) {
	n := g.running.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	b := g.bytes.Add(int64(len(params)))
	for p := g.peakBytes.Load(); b > p && !g.peakBytes.CompareAndSwap(p, b); p = g.peakBytes.Load() {
	}
	defer g.bytes.Add(-int64(len(params)))
	g.mu.Lock()
	g.seen[string(params)]++
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	g.running.Add(-1)
	return "ok", nil, FaultNone
}

// Three clients pipeline 20 requests each at handlers that wait: no more
// than the server's total bound run at once over all connections (each
// connection within its own bound too), and once let go every request is
// answered exactly once, on the NDJSON and the Holon-RPC wire.
func TestInflightTotalBoundsEveryConnectionTogether(t *testing.T) {
	const perConn, total, clients, each = 4, 6, 3, 20
	t.Run("ndjson", func(t *testing.T) {
		g := newGate()
		srv, err := Listen(filepath.Join(t.TempDir(), "p.sock"), Config{Concurrent: true,
			MaxInflight: perConn, MaxInflightTotal: total, Dispatch: g.dispatch})
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
				for i := 0; i < each; i++ {
					fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{"c":%d,"i":%d}}`+"\n", i, c, i)
				}
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
		waitFor(t, "the server to fill its total bound", func() bool { return g.running.Load() >= total })
		time.Sleep(200 * time.Millisecond) // room for a handler past the bound to start
		if p := g.peak.Load(); p > total {
			t.Fatalf("%d requests handled at once over %d connections; the total bound is %d", p, clients, total)
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
		for p, n := range g.seen {
			if n != 1 {
				t.Errorf("request %s handled %d times", p, n)
			}
		}
	})
	t.Run("holon", func(t *testing.T) {
		g := newGate()
		hs, err := ListenHolon("127.0.0.1:0", HolonConfig{Path: "/rpc", Concurrent: true,
			MaxInflight: perConn, MaxInflightTotal: total, Dispatch: g.dispatch, Lenient: true})
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
			defer ws.CloseNow()
			go func(c int) {
				for i := 0; i < each; i++ {
					ws.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{"c":%d,"i":%d}}`, i+1, c, i))
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
		waitFor(t, "the server to fill its total bound", func() bool { return g.running.Load() >= total })
		time.Sleep(200 * time.Millisecond)
		if p := g.peak.Load(); p > total {
			t.Fatalf("%d messages handled at once over %d connections; the total bound is %d", p, clients, total)
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
	})
}
