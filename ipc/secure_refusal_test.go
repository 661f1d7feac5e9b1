package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// runCounter counts how many times each method ran on a fake peer.
type runCounter struct {
	mu   sync.Mutex
	runs map[string]int
}

func (r *runCounter) methods(names ...string) map[string]ipctest.HandlerFunc {
	r.runs = map[string]int{}
	m := map[string]ipctest.HandlerFunc{}
	for _, n := range names {
		m[n] = func(context.Context, json.RawMessage) (any, error) {
			r.mu.Lock()
			r.runs[n]++
			r.mu.Unlock()
			return map[string]string{"ran": n}, nil
		}
	}
	return m
}

func (r *runCounter) get(n string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[n]
}

// TestFailedReconnectSendsNothingInCleartext: a peer that demands BTSP
// and then reads on (a lenient one) must get nothing in cleartext after
// its demand. While the BTSP reconnect runs (the peer takes 300 ms, then
// fails the handshake: another family's seed), a second call waits to be
// written; when the reconnect fails, that call fails unsent, and is not
// written on the refused cleartext connection, where the peer would run
// it. A later call fails with *ipc.BTSPRequiredError (exit 5).
func TestFailedReconnectSendsNothingInCleartext(t *testing.T) {
	var rc runCounter
	gate := ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte("another-family-seed-0123456789")}, false)
	slow := func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		time.Sleep(300 * time.Millisecond)
		return gate(c, r)
	}
	s := startAt(t, "p.sock", ipctest.Config{Methods: rc.methods("m.first", "m.second", "m.third"),
		Accept: ipctest.LenientRefusal(ipctest.BTSPRequiredLine, 1, slow)})
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t, 5*time.Second), "m.first", nil)
		first <- err
	}()
	time.Sleep(100 * time.Millisecond) // the reconnect is under way
	_, err2 := c.Call(ctxT(t, 5*time.Second), "m.second", nil)
	err1 := <-first
	if err1 == nil || err2 == nil {
		t.Fatalf("calls succeeded against a peer that failed the handshake: %v, %v", err1, err2)
	}
	for i, err := range []error{err1, err2} {
		if !ipc.SecurityFailure(err) {
			t.Errorf("call %d: want a security failure (exit 5), got %T: %v", i+1, err, err)
		}
	}
	_, err3 := c.Call(ctxT(t, 5*time.Second), "m.third", nil)
	var be *ipc.BTSPRequiredError
	if !errors.As(err3, &be) {
		t.Errorf("a call after the failed reconnect: want *ipc.BTSPRequiredError, got %T: %v", err3, err3)
	}
	time.Sleep(200 * time.Millisecond) // what the lenient peer read, it runs by now
	for _, m := range []string{"m.first", "m.second", "m.third"} {
		if n := rc.get(m); n != 0 {
			t.Errorf("%s ran %d time(s) on the peer: it was sent in cleartext after the peer demanded BTSP", m, n)
		}
	}
}
