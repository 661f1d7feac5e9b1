package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
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

// btspDemandNamingLine2 is the Accept hook of a peer that lets some
// methods through in cleartext and demands BTSP for others: on a
// cleartext connection it reads two lines, answers the second with
// refusal (a BTSP demand), then runs the first (slow.op) and answers it,
// and reads on. A BTSP hello goes to gate.
func btspDemandNamingLine2(rc *runCounter, refusal string, gate func(net.Conn, *bufio.Reader) (ipc.Framer, bool)) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		if btsp.IsHandshakeStart(peekStart(r)) {
			return gate(c, r)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line1, err := r.ReadBytes('\n')
		if err != nil {
			return nil, false
		}
		if _, err := r.ReadBytes('\n'); err != nil {
			return nil, false
		}
		_ = c.SetReadDeadline(time.Time{})
		_, _ = c.Write([]byte(refusal + "\n"))
		m, err := ipc.DecodeMessage(line1)
		if err != nil {
			return nil, false
		}
		time.Sleep(100 * time.Millisecond) // slow.op takes a while
		rc.mu.Lock()
		rc.runs[m.Method]++
		rc.mu.Unlock()
		_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"ran":"` + m.Method + `"}}` + "\n"))
		_, _ = r.ReadBytes('\n') // until the client hangs up
		return nil, false
	}
}

// TestBTSPDemandNamingACallIsItsAnswer: a "BTSP handshake required" that
// names a request's id is that call's own answer, not a refusal of the
// connection: nothing is resent. The peer ran slow.op (line 1) and
// refused m.b (line 2, id 2); slow.op was resent over BTSP and ran twice.
func TestBTSPDemandNamingACallIsItsAnswer(t *testing.T) {
	var rc runCounter
	seed := []byte(testFamilySeed)
	cfg := ipctest.Config{Methods: rc.methods("slow.op", "m.b", "m.c")}
	cfg.Accept = btspDemandNamingLine2(&rc, `{"jsonrpc":"2.0","error":{"code":-32600,"message":"BTSP handshake required"},"id":2}`,
		ipctest.BTSPGate(btsp.ServerConfig{Seed: seed}, false))
	s := startAt(t, "p.sock", cfg)
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t, 5*time.Second), "slow.op", nil)
		first <- err
	}()
	for c.InFlight() == 0 {
		time.Sleep(time.Millisecond)
	}
	_, err := c.Call(ctxT(t, 5*time.Second), "m.b", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || !re.IsBTSPRequired() {
		t.Errorf("m.b: want the peer's own BTSP demand as its answer, got %T: %v", err, err)
	}
	if err := <-first; err != nil {
		t.Errorf("slow.op: the peer answered it on the connection, got %v", err)
	}
	// Nothing more goes in cleartext to a peer that demanded BTSP.
	_, err = c.Call(ctxT(t, 5*time.Second), "m.c", nil)
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) {
		t.Errorf("m.c after the demand: want *ipc.BTSPRequiredError, got %T: %v", err, err)
	}
	time.Sleep(100 * time.Millisecond)
	if n := rc.get("slow.op"); n != 1 {
		t.Errorf("slow.op ran %d times on the peer; never twice", n)
	}
	if n := rc.get("m.c"); n != 0 {
		t.Errorf("m.c ran %d time(s) on the peer; after the demand it is refused", n)
	}
}

// TestNullIDRefusalWithTwoWrittenResendsNothing: a refusal with a null id
// does not say which line it answers. A peer that lets slow.op (line 1)
// through in cleartext and refuses line 2 with a null-id BTSP demand (or
// -32002) is running slow.op: with two requests written on the refused
// connection none is resent, both fail with *ipc.NotResentError, and the
// reconnected connection serves the next call. slow.op was resent and ran
// twice.
func TestNullIDRefusalWithTwoWrittenResendsNothing(t *testing.T) {
	for _, tc := range []struct {
		name, refusal string
		sec           ipc.Security
		next          func(net.Conn, *bufio.Reader) (ipc.Framer, bool)
	}{
		{"btsp", ipctest.BTSPRequiredLine, ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff},
			ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(testFamilySeed)}, false)},
		{"prefix", ipctest.PrefixRequiredLine, ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()},
			func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
				_, _ = r.Discard(2) // EC 01
				return nil, true
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rc runCounter
			cfg := ipctest.Config{Methods: rc.methods("slow.op", "m.b", "m.c")}
			hook := btspDemandNamingLine2(&rc, tc.refusal, tc.next)
			cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
				if b, err := r.Peek(1); err == nil && b[0] == 0xEC {
					return tc.next(c, r)
				}
				return hook(c, r)
			}
			s := startAt(t, "p.sock", cfg)
			c := mustDial(t, s.Endpoint(), ipc.Options{Security: tc.sec})
			first := make(chan error, 1)
			go func() {
				_, err := c.Call(ctxT(t, 5*time.Second), "slow.op", nil)
				first <- err
			}()
			for c.InFlight() == 0 {
				time.Sleep(time.Millisecond)
			}
			_, err := c.Call(ctxT(t, 5*time.Second), "m.b", nil)
			var nr *ipc.NotResentError
			if !errors.As(err, &nr) {
				t.Errorf("m.b: want *ipc.NotResentError, got %T: %v", err, err)
			}
			if err := <-first; !errors.As(err, &nr) {
				t.Errorf("slow.op: want *ipc.NotResentError, got %T: %v", err, err)
			}
			if _, err := c.Call(ctxT(t, 5*time.Second), "m.c", nil); err != nil {
				t.Errorf("m.c on the reconnected connection: %v", err)
			}
			time.Sleep(150 * time.Millisecond) // the peer runs slow.op 100 ms after its refusal
			if n := rc.get("slow.op"); n != 1 {
				t.Errorf("slow.op ran %d times on the peer; want once, never twice", n)
			}
			if n := rc.get("m.b"); n != 0 {
				t.Errorf("m.b ran %d time(s); the peer refused it", n)
			}
		})
	}
}

// TestResendAfterReconnectHonoursTheDeadline: the resend after a BTSP
// reconnect is bounded by the deadline of the call it resends. The peer
// demands BTSP, completes the handshake, then never reads: a 3 MB request
// cannot be resent whole. The call times out at its deadline, and the
// connection gives the resend up by then too; it stayed blocked in the
// resend until someone closed it.
func TestResendAfterReconnectHonoursTheDeadline(t *testing.T) {
	checkNoLeak(t)
	seed := []byte(testFamilySeed)
	stop := make(chan struct{})
	var conns sync.WaitGroup
	cfg := ipctest.Config{Accept: func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		if !btsp.IsHandshakeStart(peekStart(r)) {
			_, _ = r.ReadBytes('\n')
			_, _ = c.Write([]byte(ipctest.BTSPRequiredLine + "\n"))
			return nil, false
		}
		conns.Add(1)
		defer conns.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := btsp.Server(ctx, c, btsp.ServerConfig{Seed: seed, Reader: r})
		if err != nil {
			return nil, false
		}
		defer s.Close()
		select { // never read again
		case <-stop:
		case <-time.After(10 * time.Second):
		}
		return nil, false
	}}
	s := startAt(t, "p.sock", cfg)
	t.Cleanup(func() { close(stop); conns.Wait() })
	var trace traceLog
	// The null cipher: the session is up once the handshake is (no
	// btsp.negotiate, which this peer would not answer either).
	c := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add,
		Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff, Cipher: btsp.CipherNull}})
	defer func() {
		if t.Failed() || testing.Verbose() {
			t.Log(trimTrace(trace.String()))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	big := json.RawMessage(`"` + strings.Repeat("a", 3<<20) + `"`)
	_, err := c.Send(ctx, ipc.Request{Method: "m.big", Params: big})
	var te *ipc.TimeoutError
	if !errors.As(err, &te) {
		t.Errorf("want *ipc.TimeoutError, got %T: %v", err, err)
	}
	select {
	case <-c.Done():
	case <-time.After(time.Second):
		t.Fatal("the resend still blocks a second after the call's deadline")
	}
}

// trimTrace cuts the long lines of a trace for a test's log.
func trimTrace(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if len(l) > 300 {
			l = l[:300] + "…"
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// TestDeadlineDuringReconnectIsATimeout: a call whose deadline ends while
// the BTSP reconnect its refusal called for waits on a silent peer ends
// with *ipc.TimeoutError (exit 4), never with the *ipc.ClosedError of the
// reconnect cut by that same deadline (exit 3, or 5 around a handshake
// error), which raced with it.
func TestDeadlineDuringReconnectIsATimeout(t *testing.T) {
	h, err := ipctest.ListenHostileBTSP(filepath.Join(tempDir(t), "p.sock"), &ipctest.HostileBTSP{Hello: ipctest.HelloSilent})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep, err := ipc.ParseEndpoint(h.Path())
	if err != nil {
		t.Fatal(err)
	}
	closed := 0
	for i := range 8 {
		c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		_, err := c.Call(ctx, "health.liveness", nil)
		cancel()
		c.Close()
		var te *ipc.TimeoutError
		if !errors.As(err, &te) {
			closed++
			t.Logf("run %d: %T: %v", i, err, err)
		}
	}
	if closed > 0 {
		t.Errorf("%d of 8 calls cut by their deadline during the reconnect did not end with *ipc.TimeoutError", closed)
	}
}

// TestLateAnswerToANotResentCallIsStale: an answer that arrives for a
// call failed as not resent names a call primalscope sent and gave up,
// not one it never sent. The peer refuses two lines with -32002, then, on
// the prefixed connection, sends answers for ids 1 and 2 before serving:
// they were reported as "no call N was sent".
func TestLateAnswerToANotResentCallIsStale(t *testing.T) {
	var rc runCounter
	cfg := ipctest.Config{Methods: rc.methods("m.a", "m.b", "m.c")}
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		defer c.SetReadDeadline(time.Time{})
		if b, err := r.Peek(2); err == nil && b[0] == 0xEC {
			_, _ = r.Discard(2)
			_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":"late"}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":"late"}` + "\n"))
			return nil, true
		}
		for range 2 {
			if _, err := r.ReadBytes('\n'); err != nil {
				return nil, false
			}
		}
		_, _ = c.Write([]byte(ipctest.PrefixRequiredLine + "\n"))
		return nil, false
	}
	s := startAt(t, "p.sock", cfg)
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}})
	errs := make(chan error, 2)
	for _, m := range []string{"m.a", "m.b"} {
		go func() {
			_, err := c.Call(ctxT(t, 5*time.Second), m, nil)
			errs <- err
		}()
	}
	for range 2 {
		var nr *ipc.NotResentError
		if err := <-errs; !errors.As(err, &nr) {
			t.Fatalf("want *ipc.NotResentError, got %T: %v", err, err)
		}
	}
	if _, err := c.Call(ctxT(t, 5*time.Second), "m.c", nil); err != nil {
		t.Fatalf("m.c: %v", err)
	}
	for range 2 {
		select {
		case m := <-c.Incoming():
			if !strings.HasPrefix(m.Warning, "stale_response_id") {
				t.Errorf("a late answer to a call not resent: warning %q, want stale_response_id", m.Warning)
			}
		case <-time.After(time.Second):
			t.Fatal("the late answers were not delivered")
		}
	}
}

// TestReconnectOutOfTimeSendsNothingInCleartext: as
// TestFailedReconnectSendsNothingInCleartext, with a reconnect that runs
// out of time (the peer never answers the hello, the first call's
// deadline ends it): the call that waited is not written on the refused
// connection, and ends as the timeout it is (exit 4), not a refusal.
func TestReconnectOutOfTimeSendsNothingInCleartext(t *testing.T) {
	var rc runCounter
	silent := func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_, _ = io.Copy(io.Discard, r) // never answers, until the client hangs up
		return nil, false
	}
	s := startAt(t, "p.sock", ipctest.Config{Methods: rc.methods("m.first", "m.second"),
		Accept: ipctest.LenientRefusal(ipctest.BTSPRequiredLine, 1, silent)})
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t, 400*time.Millisecond), "m.first", nil)
		first <- err
	}()
	time.Sleep(100 * time.Millisecond) // the reconnect is under way
	_, err2 := c.Call(ctxT(t, 5*time.Second), "m.second", nil)
	err1 := <-first
	var te *ipc.TimeoutError
	if !errors.As(err1, &te) {
		t.Errorf("m.first: want *ipc.TimeoutError, got %T: %v", err1, err1)
	}
	var be *ipc.BTSPRequiredError
	if !errors.As(err2, &be) || !isTimeout(err2) {
		t.Errorf("m.second: want *ipc.BTSPRequiredError carrying the timeout, got %T: %v", err2, err2)
	}
	time.Sleep(200 * time.Millisecond)
	for _, m := range []string{"m.first", "m.second"} {
		if n := rc.get(m); n != 0 {
			t.Errorf("%s ran %d time(s) on the peer: it was sent in cleartext after the peer demanded BTSP", m, n)
		}
	}
}

// isTimeout reports whether err carries a timeout (a net.Error-style
// Timeout method anywhere in its chain).
func isTimeout(err error) bool {
	var to interface{ Timeout() bool }
	return errors.As(err, &to) && to.Timeout()
}
