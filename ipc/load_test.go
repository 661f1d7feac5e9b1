package ipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// echoConfig answers "load.echo" with its params, each request on its own
// goroutine, so answers come back out of order.
func echoConfig() ipctest.Config {
	return ipctest.Config{Concurrent: true, Methods: map[string]ipctest.HandlerFunc{
		"load.echo": func(_ context.Context, p json.RawMessage) (any, error) { return p, nil },
	}}
}

// callMatched sends one call carrying n and fails unless the answer echoes
// exactly n: an answer given to the wrong caller shows as a mismatch.
func callMatched(ctx context.Context, c *ipc.Conn, method string, n int) error {
	resp, err := c.Call(ctx, method, map[string]int{"n": n})
	if err != nil {
		return fmt.Errorf("call %d: %w", n, err)
	}
	var got struct{ N *int }
	if err := json.Unmarshal(resp.Result, &got); err != nil || got.N == nil || *got.N != n {
		return fmt.Errorf("call %d was answered with %s", n, resp.Result)
	}
	return nil
}

// TestLoadThousandConcurrentCallsOneConn sends 1,000 calls at once on one
// connection, to a peer answering out of order, on both wires: every
// answer reaches the call it belongs to.
func TestLoadThousandConcurrentCallsOneConn(t *testing.T) {
	checkNoLeak(t)
	for _, tc := range []struct {
		name   string
		cfg    ipctest.Config
		method string
		opts   ipc.Options
	}{
		{"jsonrpc", echoConfig(), "load.echo", ipc.Options{}},
		{"lean", ipctest.LeanDaemon(), "Echo", ipc.Options{Wire: ipc.WireLean}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := start(t, tc.cfg)
			c := dial(t, s, tc.opts)
			ctx := ctxT(t, 30*time.Second)
			const n = 1000
			errs := make(chan error, n)
			var wg sync.WaitGroup
			gate := make(chan struct{})
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-gate
					if err := callMatched(ctx, c, tc.method, i); err != nil {
						errs <- err
					}
				}()
			}
			close(gate)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if s.Calls() != n {
				t.Errorf("the peer saw %d calls, want %d", s.Calls(), n)
			}
			if c.InFlight() != 0 {
				t.Errorf("%d calls still in flight after every answer", c.InFlight())
			}
		})
	}
}

// TestLoadHundredConnections opens 100 connections at once, each sending
// 20 concurrent calls: every answer matches its call, on its connection.
func TestLoadHundredConnections(t *testing.T) {
	checkNoLeak(t)
	s := start(t, echoConfig())
	ctx := ctxT(t, 30*time.Second)
	const conns, per = 100, 20
	errs := make(chan error, conns*per+conns)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for ci := 0; ci < conns; ci++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			c, err := ipc.Dial(ctx, s.Endpoint(), ipc.Options{})
			if err != nil {
				errs <- fmt.Errorf("connection %d: %w", ci, err)
				return
			}
			defer c.Close()
			var cwg sync.WaitGroup
			for i := 0; i < per; i++ {
				cwg.Add(1)
				go func() {
					defer cwg.Done()
					if err := callMatched(ctx, c, "load.echo", ci*1_000_000+i); err != nil {
						errs <- fmt.Errorf("connection %d: %w", ci, err)
					}
				}()
			}
			cwg.Wait()
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s.Calls() != conns*per {
		t.Errorf("the peer saw %d calls, want %d", s.Calls(), conns*per)
	}
}

// floodLines is n notifications numbered from first, one a line.
func floodLines(first, n int) []byte {
	var b bytes.Buffer
	for i := first; i < first+n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"flood.tick","params":{"seq":%d}}`+"\n", i)
	}
	return b.Bytes()
}

// flood pushes total notifications on sc in batches and reports when done.
func flood(sc *ipctest.ServerConn, total int) <-chan error {
	done := make(chan error, 1)
	go func() {
		const batch = 1000
		for i := 0; i < total; i += batch {
			if err := sc.WriteRaw(floodLines(i, min(batch, total-i))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// TestLoadNotificationFloodDuringCalls pushes 100,000 notifications while
// calls go on. Unread, the buffer keeps the newest and the drop counter
// counts exactly the rest; read as they come, what was received plus what
// was dropped is everything, in order. Calls are answered throughout.
func TestLoadNotificationFloodDuringCalls(t *testing.T) {
	checkNoLeak(t)
	const total = 100_000
	for _, read := range []bool{false, true} {
		t.Run(fmt.Sprintf("read=%v", read), func(t *testing.T) {
			s := start(t, echoConfig())
			const buf = 256
			c := dial(t, s, ipc.Options{IncomingBuffer: buf})
			ctx := ctxT(t, 60*time.Second)
			if err := callMatched(ctx, c, "load.echo", -1); err != nil {
				t.Fatal(err)
			}
			var received atomic.Int64
			readerDone := make(chan error, 1)
			stopReader := make(chan struct{})
			if read {
				go func() {
					last := -1
					for {
						select {
						case m := <-c.Incoming():
							var p struct{ Seq int }
							if err := json.Unmarshal(m.Params, &p); err != nil || p.Seq <= last {
								readerDone <- fmt.Errorf("notification %s after seq %d: out of order", m.Params, last)
								return
							}
							last = p.Seq
							received.Add(1)
						case <-stopReader:
							readerDone <- nil
							return
						}
					}
				}()
			}
			sent := flood(s.Conns()[0], total)
			// Calls go on during the flood; each one is answered correctly.
			var calls, duringFlood int
			floodOver := false
			for i := 0; !floodOver; i++ {
				if err := callMatched(ctx, c, "load.echo", i); err != nil {
					t.Fatalf("during the flood: %v", err)
				}
				calls++
				if !floodOver {
					select {
					case err := <-sent:
						if err != nil {
							t.Fatal(err)
						}
						floodOver = true
					default:
						duringFlood++
					}
				}
			}
			// Every notification was sent before this call's answer, so the
			// reader has taken in all of them once it returns.
			if err := callMatched(ctx, c, "load.echo", -2); err != nil {
				t.Fatalf("after the flood: %v", err)
			}
			if read {
				// Wait for the reader to drain what is buffered.
				deadline := time.Now().Add(10 * time.Second)
				for received.Load()+int64(c.Dropped()) < total && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				close(stopReader)
				if err := <-readerDone; err != nil {
					t.Fatal(err)
				}
				if got := received.Load() + int64(c.Dropped()); got != total {
					t.Fatalf("received %d + dropped %d = %d, want %d", received.Load(), c.Dropped(), got, total)
				}
			} else {
				if got, want := c.Dropped(), uint64(total-buf); got != want {
					t.Fatalf("dropped %d, want %d (the %d newest kept)", got, want, buf)
				}
				if n := len(c.Incoming()); n != buf {
					t.Fatalf("%d notifications kept, want %d", n, buf)
				}
				var p struct{ Seq int }
				_ = json.Unmarshal((<-c.Incoming()).Params, &p)
				if p.Seq != total-buf {
					t.Fatalf("oldest kept is seq %d, want %d", p.Seq, total-buf)
				}
			}
			t.Logf("%d calls answered, %d of them while the flood was being sent; received %d, dropped %d", calls, duringFlood, received.Load(), c.Dropped())
		})
	}
}
