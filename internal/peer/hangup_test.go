package peer

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
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

// A live TCP client whose connection stays full past fullProbe (its calls
// are slow, more wait unread) is sent the urgent byte, and reads nothing
// but its answers: every one, and no byte of the probe in its stream.
func TestFullTCPClientReadsOnlyItsAnswers(t *testing.T) {
	const n = 6
	srv, err := ListenTCP("127.0.0.1:0", Config{Concurrent: true, MaxInflight: 2,
		Dispatch: func(ctx context.Context, _ string, _ json.RawMessage) (any, error, Fault) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err(), FaultNone
			case <-time.After(fullProbe + 200*time.Millisecond):
				return "ok", nil, FaultNone
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := net.Dial("tcp", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var want []byte
	for i := 1; i <= n; i++ {
		if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":`+string(rune('0'+i))+`,"method":"a.b"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		want = append(want, `{"jsonrpc":"2.0","id":`+string(rune('0'+i))+`,"result":"ok"}`+"\n"...)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read %q: %v", got, err)
	}
	// Answers of one pair may come in either order: compare them sorted.
	if g, w := sortedLines(got), sortedLines(want); g != w {
		t.Fatalf("a full, live client read %q; want its %d answers alone", got, n)
	}
	if !srvProbed(srv) {
		t.Fatal("the connection was full past fullProbe and sent no probe: the test tests nothing")
	}
}

func sortedLines(b []byte) string {
	lines := strings.Split(string(b), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func srvProbed(s *Server) bool {
	for _, c := range s.Conns() {
		if c.probed.Load() {
			return true
		}
	}
	return false
}
