package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestReconnectBoundedByTheCallersDeadline: after a "BTSP handshake
// required" refusal the reconnect and handshake run within the deadline of
// the call that is waiting for them, not on a budget of their own: with a
// peer that never answers the handshake, a call with a 300 ms deadline ends
// with a timeout, and the connection gives up the reconnect by then too
// (it does not keep the peer, and the writers, waiting ~22 s).
func TestReconnectBoundedByTheCallersDeadline(t *testing.T) {
	checkNoLeak(t)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(tempDir(t), "p.sock"), &ipctest.HostileBTSP{Hello: ipctest.HelloSilent})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep, err := ipc.ParseEndpoint(h.Path())
	if err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = c.Call(ctx, "health.liveness", nil)
	took := time.Since(start)
	var te *ipc.TimeoutError
	var he interface{ Timeout() bool }
	if !errors.As(err, &te) && !(errors.As(err, &he) && he.Timeout()) {
		t.Fatalf("want a timeout, got %T: %v", err, err)
	}
	if took > time.Second {
		t.Fatalf("the call took %v with a 300 ms deadline", took)
	}
	// The reconnect itself ends with the deadline: the connection is over
	// without anyone closing it.
	select {
	case <-c.Done():
	case <-time.After(time.Second):
		t.Fatalf("the reconnect still runs %v after the call's deadline", time.Since(start)-300*time.Millisecond)
	}
}

// TestRefusalWithManyWrittenResendsNone: a refusal of the connection
// ("BTSP handshake required", or -32002 for want of the riboCipher prefix,
// id null) does not say which line it answered. Against a lenient peer
// that refuses the first line but processes the lines after it, with three
// requests written none is resent on the new connection: all three fail
// with *ipc.NotResentError, no request reaches the peer twice, and the new
// connection serves the next call.
func TestRefusalWithManyWrittenResendsNone(t *testing.T) {
	seed := []byte(testFamilySeed)
	for _, tc := range []struct {
		name string
		hook func(net.Conn, *bufio.Reader) (ipc.Framer, bool)
		sec  ipc.Security
	}{
		{"btsp", ipctest.LenientRefusal(ipctest.BTSPRequiredLine, 3, ipctest.BTSPGate(btsp.ServerConfig{Seed: seed}, false)),
			ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}},
		{"prefix", ipctest.LenientRefusal(ipctest.PrefixRequiredLine, 3, nil),
			ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			runs := map[string]int{}
			methods := map[string]ipctest.HandlerFunc{}
			for _, m := range []string{"m.a", "m.b", "m.c", "m.d"} {
				methods[m] = func(context.Context, json.RawMessage) (any, error) {
					mu.Lock()
					runs[m]++
					mu.Unlock()
					return map[string]string{"ran": m}, nil
				}
			}
			s := startAt(t, "p.sock", ipctest.Config{Methods: methods, Accept: tc.hook})
			var trace traceLog
			c := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add, Security: tc.sec})
			errs := make(chan error, 3)
			for _, m := range []string{"m.a", "m.b", "m.c"} {
				go func() {
					_, err := c.Call(ctxT(t, 5*time.Second), m, nil)
					errs <- err
				}()
			}
			ok, notResent := 0, 0
			for range 3 {
				err := <-errs
				var nr *ipc.NotResentError
				switch {
				case err == nil:
					ok++
				case errors.As(err, &nr):
					notResent++
					if !strings.Contains(err.Error(), "may have reached the peer") {
						t.Errorf("the error does not say the request may have reached the peer: %v", err)
					}
				default:
					t.Errorf("unexpected error %T: %v", err, err)
				}
			}
			if ok != 0 || notResent != 3 {
				t.Errorf("%d call(s) answered, %d not resent; want 0 and 3", ok, notResent)
			}
			if _, err := c.Call(ctxT(t, 5*time.Second), "m.d", nil); err != nil {
				t.Errorf("m.d on the new connection: %v", err)
			}
			// The lenient peer processes what it read on the refused
			// connection after the line it refused: wait for those two
			// and m.d, then count.
			deadline := time.Now().Add(2 * time.Second)
			for {
				mu.Lock()
				total := runs["m.a"] + runs["m.b"] + runs["m.c"] + runs["m.d"]
				mu.Unlock()
				if total >= 3 || time.Now().After(deadline) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			mu.Lock()
			defer mu.Unlock()
			for m, n := range runs {
				if n > 1 {
					t.Errorf("%s reached the peer %d times; a request is never sent twice", m, n)
				}
			}
			if !strings.Contains(trace.String(), "resending 0 message") {
				t.Errorf("the trace does not say no message is resent:\n%s", trace.String())
			}
		})
	}
}

// TestCancelledCallIsNotResentAfterReconnect: a call cancelled (no
// deadline) while the connection reconnects after the peer's BTSP demand
// is not sent again on the new connection: its caller has given it up, and
// a request reaches a peer at most once, only while someone waits for it.
// The peer (HostileBTSP, from ECOSYSTEM-FACTS.md) demands BTSP, then holds
// the handshake until the call is cancelled; a later call is written on
// the new connection after whatever the reconnect resent. The cancelled
// request was resent there (the reconnect is bounded only by the call's
// deadline, and a cancelled call has none).
func TestCancelledCallIsNotResentAfterReconnect(t *testing.T) {
	checkNoLeak(t)
	helloRead := make(chan struct{}, 4)
	release := make(chan struct{})
	h, err := ipctest.ListenHostileBTSP(filepath.Join(tempDir(t), "p.sock"), &ipctest.HostileBTSP{
		Seed: []byte(testFamilySeed),
		BeforeHello: func() {
			helloRead <- struct{}{}
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep, err := ipc.ParseEndpoint(h.Path())
	if err != nil {
		t.Fatal(err)
	}
	var trace traceLog
	c := mustDial(t, ep, ipc.Options{Trace: trace.add,
		Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff, Cipher: btsp.CipherNull}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(ctx, "m.once", nil)
		done <- err
	}()
	select {
	case <-helloRead:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the client never started the BTSP handshake")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled call: want context.Canceled, got %T: %v", err, err)
		}
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("cancelling did not end the call")
	}
	close(release)
	// Written on the new connection after anything the reconnect resent.
	if _, err := c.Call(ctxT(t, 5*time.Second), "m.after", nil); err != nil {
		t.Errorf("m.after on the reconnected connection: %v", err)
	}
	got := h.Received()
	if len(got) < 2 {
		t.Fatalf("the peer saw %d connection(s), want the refused one and the BTSP one", len(got))
	}
	if !strings.Contains(string(got[0]), `"m.once"`) {
		t.Errorf("the first connection did not carry m.once: %q", got[0])
	}
	for i, b := range got[1:] {
		if strings.Contains(string(b), `"m.once"`) {
			t.Errorf("connection %d carried the cancelled m.once again after the reconnect:\n%s", i+2, trimTrace(trace.String()))
		}
	}
	if !strings.Contains(trace.String(), "cancelled") {
		t.Errorf("the trace does not say the cancelled call was not resent:\n%s", trimTrace(trace.String()))
	}
}
