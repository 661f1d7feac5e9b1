package peer

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// A client sends a call to a slow method and closes its connection: the
// handler's context ends within a bound (it was left to run until its
// answer was written, over TCP), and the server's goroutines come back to
// what they were; a client that only half-closes still gets its answer,
// and nothing else in its stream. Over a Unix socket and over TCP.
func TestClientCloseCancelsItsCallsInFlight(t *testing.T) {
	const bound = 2 * time.Second
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			started := make(chan struct{}, 1)
			ended := make(chan time.Time, 1)
			// a.slow answers after params.ms, or when its context ends.
			slow := func(ctx context.Context, _ string, params json.RawMessage) (any, error, Fault) {
				var p struct{ MS int }
				json.Unmarshal(params, &p)
				started <- struct{}{}
				select {
				case <-ctx.Done():
					ended <- time.Now()
					return nil, ctx.Err(), FaultNone
				case <-time.After(time.Duration(p.MS) * time.Millisecond):
					return "slow", nil, FaultNone
				}
			}
			cfg := Config{Concurrent: true, MaxInflight: 4, Dispatch: slow}
			var srv *Server
			var err error
			if network == "unix" {
				srv, err = Listen(filepath.Join(t.TempDir(), "p.sock"), cfg)
			} else {
				srv, err = ListenTCP("127.0.0.1:0", cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			dial := func() net.Conn {
				c, err := net.Dial(network, srv.Addr)
				if err != nil {
					t.Fatal(err)
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				return c
			}
			waitFor(t, "the server to settle", func() bool { return len(srv.Conns()) == 0 })
			base := runtime.NumGoroutine()

			c := dial()
			if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"a.slow","params":{"ms":30000}}`+"\n"); err != nil {
				t.Fatal(err)
			}
			<-started
			closed := time.Now()
			c.Close()
			select {
			case at := <-ended:
				t.Logf("cancelled %v after the close", at.Sub(closed).Round(time.Millisecond))
			case <-time.After(bound):
				t.Fatalf("the handler of a client that closed kept working %v", bound)
			}
			waitFor(t, "the goroutines to come back to the base", func() bool { return runtime.NumGoroutine() <= base })

			// A half-close is no close: the answer comes, alone.
			h := dial()
			defer h.Close()
			if _, err := io.WriteString(h, `{"jsonrpc":"2.0","id":2,"method":"a.slow","params":{"ms":300}}`+"\n"); err != nil {
				t.Fatal(err)
			}
			<-started
			if cw, ok := h.(interface{ CloseWrite() error }); ok {
				cw.CloseWrite()
			}
			all, err := io.ReadAll(h)
			if err != nil || string(all) != `{"jsonrpc":"2.0","id":2,"result":"slow"}`+"\n" {
				t.Fatalf("a half-closed client got %q (%v): want its answer alone", all, err)
			}
			select {
			case <-ended:
				t.Fatal("the handler of a half-closed client was cancelled")
			default:
			}
		})
	}
}
