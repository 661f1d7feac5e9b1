package ipc_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func dialBus(t *testing.T, cfg ipctest.HostileBusConfig, opts ipc.Options) *ipc.Conn {
	t.Helper()
	b, err := ipctest.ListenHostileBus(filepath.Join(tempDir(t), "bus.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := ipc.Dial(ctxT(t, 2*time.Second), ipc.Endpoint{Transport: ipc.Unix, Path: b.Path}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// An answer carrying another session or pool than the call's is not its
// answer, even with the right id: the call times out (saying so), and the
// trace has the warning.
func TestBusAnswerOfAnotherSessionOrPoolIsNotTaken(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer ipctest.BusAnswer
		req    ipc.Request
		warn   string
	}{
		{"other session", ipctest.BusAnswer{SessionID: "S2"}, ipc.Request{Method: "x", SessionID: "S1"}, `sent in session "S1"; this answer is of session "S2"`},
		{"session unasked", ipctest.BusAnswer{SessionID: "S2"}, ipc.Request{Method: "x"}, `sent without a session; this answer is of session "S2"`},
		{"other pool", ipctest.BusAnswer{Pool: "evil"}, ipc.Request{Method: "x", Pool: "echo"}, `sent to pool "echo"; this answer is from pool "evil"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w warnings
			c := dialBus(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{tc.answer}}, ipc.Options{Trace: w.trace})
			_, err := c.Send(ctxT(t, 300*time.Millisecond), tc.req)
			var te *ipc.TimeoutError
			if !errors.As(err, &te) || !strings.Contains(te.Error(), "matching no call") {
				t.Fatalf("want a timeout naming the foreign answer, got %v", err)
			}
			if !strings.Contains(w.String(), "foreign_response: call 1 was "+tc.warn) {
				t.Fatalf("trace warnings lack %q:\n%s", tc.warn, w.String())
			}
		})
	}
}

// The call's own answer is taken after foreign ones and one for an id
// never sent; those wait on Incoming as unmatched, with their warnings.
func TestBusOwnAnswerTakenAfterForeignOnes(t *testing.T) {
	var w warnings
	c := dialBus(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{
		{SessionID: "S2", Result: `{"from":"S2"}`},
		{Pool: "evil", Result: `{"from":"evil"}`},
		{ID: "99", Result: `{"from":"99"}`},
		{SessionID: "-", Pool: "-", Result: `{"from":"worker"}`}, // a worker need not echo them
	}}, ipc.Options{Trace: w.trace})
	resp, err := c.Send(ctxT(t, 5*time.Second), ipc.Request{Method: "x", SessionID: "S1", Pool: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"from":"worker"}` {
		t.Fatalf("took %s as the answer", resp.Result)
	}
	var got []string
	for len(got) < 3 {
		select {
		case m := <-c.Incoming():
			if m.Kind != ipc.KindUnmatched {
				t.Fatalf("a %s on Incoming: %s", m.Kind, m.Raw)
			}
			got = append(got, m.Warning)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d unmatched answers on Incoming: %q", len(got), got)
		}
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{`session "S2"`, `pool "evil"`, `no call 99 was sent`} {
		if !strings.Contains(all, want) {
			t.Errorf("Incoming warnings lack %q:\n%s", want, all)
		}
	}
}

// Two answers to one call sent together: the first answers it, and the
// second is said in the answer's Warning (and in the trace), not lost.
func TestBusSecondAnswerIsReported(t *testing.T) {
	var w warnings
	c := dialBus(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{
		{Result: `{"n":1}`}, {Result: `{"n":2}`},
	}}, ipc.Options{Trace: w.trace})
	for i := 0; i < 20; i++ { // the same every time, not by luck of timing
		resp, err := c.Send(ctxT(t, 5*time.Second), ipc.Request{Method: "x", SessionID: "S1"})
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Result) != `{"n":1}` || !strings.Contains(resp.Warning, "duplicate_response_id") || !strings.Contains(resp.Warning, `{"n":2}`) {
			t.Fatalf("call %d: answer %s, warning %q; want the first taken and the second named", i+1, resp.Result, resp.Warning)
		}
	}
}

// A frame with "id" (or a routing field) twice answers nothing: JSON
// parsers disagree on which one counts.
func TestDuplicateIDKeysAnswerNothing(t *testing.T) {
	for _, raw := range []string{
		`{"jsonrpc":"2.0","id":99,"id":$ID,"result":{"forged":true}}` + "\n",
		`{"jsonrpc":"2.0","id":$ID,"id":99,"result":{"forged":true}}` + "\n",
		`{"jsonrpc":"2.0","id":$ID,"sessionId":"S2","sessionId":"S1","result":{"forged":true}}` + "\n",
	} {
		var w warnings
		c := dialBus(t, ipctest.HostileBusConfig{Raw: raw}, ipc.Options{Trace: w.trace})
		_, err := c.Send(ctxT(t, 300*time.Millisecond), ipc.Request{Method: "x", SessionID: "S1"})
		var te *ipc.TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("%s: want a timeout (the answer is ambiguous), got %v", raw, err)
		}
		if !strings.Contains(w.String(), "appears more than once") {
			t.Fatalf("%s: trace warnings lack the duplicate key:\n%s", raw, w.String())
		}
	}
}
