package ipc_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// callThree sends m.a, m.b and m.big (over the peer's line limit) at once
// and returns each call's error and how long it took.
func callThree(t *testing.T, c *ipc.Conn) (map[string]error, map[string]time.Duration) {
	t.Helper()
	type out struct {
		m    string
		err  error
		took time.Duration
	}
	ch := make(chan out, 3)
	big := json.RawMessage(`"` + strings.Repeat("a", 2048) + `"`)
	for _, m := range []string{"m.a", "m.b", "m.big"} {
		go func() {
			var params json.RawMessage
			if m == "m.big" {
				params = big
			}
			start := time.Now()
			_, err := c.Send(ctxT(t, 3*time.Second), ipc.Request{Method: m, Params: params})
			ch <- out{m, err, time.Since(start)}
		}()
	}
	errs, took := map[string]error{}, map[string]time.Duration{}
	for range 3 {
		o := <-ch
		errs[o.m], took[o.m] = o.err, o.took
	}
	return errs, took
}

// TestParseErrorWithManyInFlight: a peer that answers a parse error
// (-32700, id null, as JSON-RPC 2.0 says) while three calls are in flight
// does not say which request it could not parse. The peer here
// (ipctest.ParseErrorPeer) cannot parse m.big (over its 1 KiB line limit)
// and reads on: m.a and m.b get their answers by id, and m.big, the one
// left unanswered, fails at once with *ipc.UnattributedError (it may have
// reached the peer; it is not resent), not with a timeout at its deadline
// (3 s), as it did. The connection takes no new call after the parse
// error and is closed once the three are settled: a later call fails
// without reaching the peer.
func TestParseErrorWithManyInFlight(t *testing.T) {
	checkNoLeak(t)
	p, err := ipctest.ListenParseErrorPeer(filepath.Join(tempDir(t), "p.sock"), &ipctest.ParseErrorPeer{MaxLine: 1024, Batch: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ep, err := ipc.ParseEndpoint(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ep, ipc.Options{})
	errs, took := callThree(t, c)
	for _, m := range []string{"m.a", "m.b"} {
		if errs[m] != nil {
			t.Errorf("%s: the peer answered it by id, got %T: %v", m, errs[m], errs[m])
		}
	}
	var ue *ipc.UnattributedError
	if !errors.As(errs["m.big"], &ue) {
		t.Fatalf("m.big: want *ipc.UnattributedError, got %T: %v", errs["m.big"], errs["m.big"])
	}
	if ue.Method != "m.big" || ue.InFlight != 3 || ue.Peer == nil || ue.Peer.Code != -32700 {
		t.Errorf("m.big: %+v", ue)
	}
	if !strings.Contains(ue.Error(), "may have reached the peer") {
		t.Errorf("the error does not say the request may have reached the peer: %v", ue)
	}
	if took["m.big"] > 2*time.Second {
		t.Errorf("m.big took %v: it waited for its deadline", took["m.big"])
	}
	select {
	case <-c.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the connection is still in use after the parse error")
	}
	_, err = c.Call(ctxT(t, 2*time.Second), "m.later", nil)
	var ce *ipc.ClosedError
	if !errors.As(err, &ce) {
		t.Errorf("m.later: want *ipc.ClosedError, got %T: %v", err, err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := p.Ran("m.later"); n != 0 {
		t.Errorf("m.later reached the peer %d time(s) after the parse error", n)
	}
	if p.Ran("m.a") != 1 || p.Ran("m.b") != 1 || p.Ran("m.big") != 0 {
		t.Errorf("runs: m.a %d, m.b %d, m.big %d; want 1, 1, 0", p.Ran("m.a"), p.Ran("m.b"), p.Ran("m.big"))
	}
}

// TestParseErrorThenCloseWithManyInFlight: a peer that answers a parse
// error with a null id and closes (the stdio bus) leaves three calls in
// flight with no answer, any of which it may have read and passed on:
// each fails with *ipc.UnattributedError (not resent), not with a bare
// *ipc.ClosedError that does not say a request may have reached the peer.
func TestParseErrorThenCloseWithManyInFlight(t *testing.T) {
	checkNoLeak(t)
	p, err := ipctest.ListenParseErrorPeer(filepath.Join(tempDir(t), "p.sock"), &ipctest.ParseErrorPeer{MaxLine: 1024, Batch: 3, CloseOnError: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ep, err := ipc.ParseEndpoint(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ep, ipc.Options{})
	errs, _ := callThree(t, c)
	for m, err := range errs {
		var ue *ipc.UnattributedError
		if !errors.As(err, &ue) || ue.Method != m {
			t.Errorf("%s: want *ipc.UnattributedError for it, got %T: %v", m, err, err)
		}
	}
	select {
	case <-c.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the connection did not end")
	}
}

// TestParseErrorThenSilenceEndsTheConnection: after a parse error with
// three calls in flight, a peer that answers nothing more leaves them to
// their deadlines; as they leave, the last one left is the refused one
// (*ipc.UnattributedError) and the connection is closed. It stayed open
// for good, refusing every new call ("takes no new call"), since only an
// answer or another such error settled the calls left: a TUI keeps a
// connection until it ends, so every later call to that target failed.
func TestParseErrorThenSilenceEndsTheConnection(t *testing.T) {
	checkNoLeak(t)
	p, err := ipctest.ListenParseErrorPeer(filepath.Join(tempDir(t), "p.sock"), &ipctest.ParseErrorPeer{MaxLine: 1024, Batch: 3, Mute: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ep, err := ipc.ParseEndpoint(p.Path())
	if err != nil {
		t.Fatal(err)
	}
	c := mustDial(t, ep, ipc.Options{})
	big := json.RawMessage(`"` + strings.Repeat("a", 2048) + `"`)
	errs := make(chan error, 3)
	for i, m := range []string{"m.a", "m.b", "m.big"} {
		go func() {
			var params json.RawMessage
			if m == "m.big" {
				params = big
			}
			// Deadlines apart, so the calls leave one by one.
			_, err := c.Send(ctxT(t, time.Duration(300+200*i)*time.Millisecond), ipc.Request{Method: m, Params: params})
			errs <- err
		}()
	}
	timeouts, unattributed := 0, 0
	for range 3 {
		err := <-errs
		var te *ipc.TimeoutError
		var ue *ipc.UnattributedError
		switch {
		case errors.As(err, &te):
			timeouts++
		case errors.As(err, &ue):
			unattributed++
		default:
			t.Errorf("want a timeout or an unattributed error, got %T: %v", err, err)
		}
	}
	if timeouts != 2 || unattributed != 1 {
		t.Errorf("%d timeouts, %d unattributed; want 2 and 1", timeouts, unattributed)
	}
	select {
	case <-c.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the connection is still open, taking no call, after its calls left")
	}
}
