package ipc_test

import (
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

type warnings struct {
	mu sync.Mutex
	w  []string
}

func (w *warnings) trace(ev ipc.TraceEvent) {
	if ev.Warning != "" {
		w.mu.Lock()
		w.w = append(w.w, ev.Warning)
		w.mu.Unlock()
	}
}

func (w *warnings) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.w, "\n")
}

func wrongIDPeer(t *testing.T, cfg ipctest.WrongIDConfig) *ipctest.WrongIDPeer {
	t.Helper()
	p, err := ipctest.ListenWrongIDs(filepath.Join(tempDir(t), "w.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// dialWrongIDs connects to p; the connection is closed when the test ends.
func dialWrongIDs(t *testing.T, p *ipctest.WrongIDPeer, opts ipc.Options) *ipc.Conn {
	t.Helper()
	c, err := ipc.Dial(ctxT(t, 2*time.Second), ipc.Endpoint{Transport: ipc.Unix, Path: p.Path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestAnswerIDsMatchExactly: primalscope sends the number 1 (JSON-RPC and
// lean wires); an answer carrying the string "1" or "01", the number 1.0 or
// 01, another type, or a null or missing id with a result, is no answer to
// it: each is a protocol warning in the trace, the call times out, and the
// timeout names the last one.
func TestAnswerIDsMatchExactly(t *testing.T) {
	for _, tc := range []struct{ id, warn string }{
		{`"1"`, `id "1" is a string`},
		{`"01"`, `id "01" is a string`},
		{`1.0`, `id 1.0 is not one primalscope sent`},
		{`1e0`, `id 1e0 is not one primalscope sent`},
		{`-1`, `id -1 is not one primalscope sent`},
		{`true`, `id true is neither a string nor a number`},
		{`[1]`, `id [1] is neither a string nor a number`},
		{`null`, `a result with a null or missing id`},
		{``, `a result with a null or missing id`},
	} {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			p := wrongIDPeer(t, ipctest.WrongIDConfig{AnswerIDs: []string{tc.id}})
			var w warnings
			for _, wire := range []ipc.Wire{ipc.WireJSONRPC, ipc.WireLean} {
				c := dialWrongIDs(t, p, ipc.Options{Wire: wire, Trace: w.trace})
				start := time.Now()
				_, err := c.Call(ctxT(t, 200*time.Millisecond), "x", nil)
				var te *ipc.TimeoutError
				if !errors.As(err, &te) {
					t.Fatalf("%s, id %s: want a timeout (the answer is not this call's), got %v", wire, tc.id, err)
				}
				if took := time.Since(start); took > 200*time.Millisecond+time.Second {
					t.Errorf("took %s", took)
				}
				if !strings.Contains(te.Error(), "matching no call") {
					t.Errorf("the timeout does not name the unmatched answer: %v", te)
				}
				c.Close()
			}
			if !strings.Contains(w.String(), "unknown_response_id: ") || !strings.Contains(w.String(), tc.warn) {
				t.Errorf("trace warnings lack %q:\n%s", tc.warn, w.String())
			}
		})
	}
}

// TestExactIDIsTakenAfterWrongOnes: the wrong answers are skipped and the
// right one, arriving after them, answers the call.
func TestExactIDIsTakenAfterWrongOnes(t *testing.T) {
	p := wrongIDPeer(t, ipctest.WrongIDConfig{AnswerIDs: []string{`"1"`, `null`, `1.0`}, ThenRealID: true})
	var w warnings
	c := dialWrongIDs(t, p, ipc.Options{Trace: w.trace})
	resp, err := c.Call(ctxT(t, 5*time.Second), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.ID) != "1" || resp.Warning != "" {
		t.Fatalf("answer %+v", resp)
	}
	if n := strings.Count(w.String(), "unknown_response_id"); n != 3 {
		t.Errorf("%d warnings, want 3:\n%s", n, w.String())
	}
}

// TestHolonWireWantsStringIDs: on the Holon wire primalscope sends the
// string "1"; the number 1 and the string "01" are no answer to it, an
// escaped "\u0031" is (it is the same string).
func TestHolonWireWantsStringIDs(t *testing.T) {
	p := wrongIDPeer(t, ipctest.WrongIDConfig{AnswerIDs: []string{`1`, `"01"`, `"\u0031"`}})
	var w warnings
	c := dialWrongIDs(t, p, ipc.Options{Wire: ipc.WireHolon, Trace: w.trace})
	resp, err := c.Call(ctxT(t, 5*time.Second), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.ID) != `"\u0031"` {
		t.Fatalf("answered by %s", resp.ID)
	}
	for _, want := range []string{`id 1 is a number`, `id "01" is not one primalscope sent`} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("warnings lack %q:\n%s", want, w.String())
		}
	}
}

// TestIDlessErrorStillEndsTheOnlyCall: an error with a null id (a parse
// error, as real peers send it) still answers the one call in flight.
func TestIDlessErrorStillEndsTheOnlyCall(t *testing.T) {
	p := wrongIDPeer(t, ipctest.WrongIDConfig{AnswerIDs: []string{`null`}, Error: true})
	c := dialWrongIDs(t, p, ipc.Options{})
	start := time.Now()
	_, err := c.Call(ctxT(t, 5*time.Second), "x", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != -32700 {
		t.Fatalf("want the peer's parse error, got %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the id-less error did not end the call at once")
	}
}
