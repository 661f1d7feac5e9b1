package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestOutcomeOfRealFailures makes each failure happen against a socket (no
// error is built by hand) and checks the outcome recorded for it.
func TestOutcomeOfRealFailures(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })

	// A socket file nobody listens on any more: the connect is refused.
	refusedPath := filepath.Join(dir, "refused.sock")
	ln, err := net.Listen("unix", refusedPath)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()

	serve := func(name string, cfg ipctest.Config) string {
		s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Path
	}
	methods := map[string]ipctest.HandlerFunc{
		"fail": ipctest.Error(-32000, "boom"),
		"ok":   func(context.Context, json.RawMessage) (any, error) { return "fine", nil },
	}
	healthy := serve("healthy.sock", ipctest.Config{Methods: methods})
	silent := serve("silent.sock", ipctest.Config{Methods: methods, Behavior: ipctest.Behavior{Silent: true}})
	cut := serve("cut.sock", ipctest.Config{Methods: methods, Behavior: ipctest.Behavior{CloseMidLine: true}})
	garbage, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "garbage-fam1.sock"), &ipctest.HostileBTSP{Hello: ipctest.HelloGarbage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(garbage.Close)

	seeded := ipc.Security{Seed: ipc.NewSeed("family-seed-for-outcome-tests-0123456789"), Family: "fam1"}
	for _, tc := range []struct {
		name, path, method string
		sec                ipc.Security
		ctx                func() (context.Context, context.CancelFunc)
		want               Outcome
	}{
		{name: "answered", path: healthy, method: "ok", want: OutcomeOK},
		{name: "peer error", path: healthy, method: "fail", want: OutcomeError},
		{name: "missing socket", path: filepath.Join(dir, "nothing-here.sock"), method: "ok", want: OutcomeUnreachable},
		{name: "refused connect", path: refusedPath, method: "ok", want: OutcomeUnreachable},
		{name: "no answer", path: silent, method: "ok", want: OutcomeTimeout},
		{name: "broke mid-answer", path: cut, method: "ok", want: OutcomeClosed},
		{name: "failed handshake", path: garbage.Path(), method: "ok", sec: seeded, want: OutcomeRefused},
		{name: "cancelled", path: silent, method: "ok", want: OutcomeCancelled, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(50*time.Millisecond, cancel)
			return ctx, cancel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			if tc.ctx != nil {
				cancel()
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			err := callOnce(ctx, tc.path, tc.method, tc.sec)
			if got := OutcomeOf(err); got != tc.want {
				t.Fatalf("OutcomeOf(%v) = %s, want %s", err, got, tc.want)
			}
		})
	}
}

func callOnce(ctx context.Context, path, method string, sec ipc.Security) error {
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Security: sec})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Send(ctx, ipc.Request{Method: method})
	return err
}

// TestOutcomeOfWrapped: what a front end wraps around an error does not
// change its outcome, and the order of the checks is that of the exit
// codes (a BTSP demand carrying the peer's error object is a refusal, not
// a peer error; a handshake that ran out of time is a timeout).
func TestOutcomeOfWrapped(t *testing.T) {
	peerWords := &ipc.RPCError{Code: -32001, Message: "BTSP required"}
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{fmt.Errorf("beardog: %w", &ipc.BTSPRequiredError{Peer: peerWords}), OutcomeRefused},
		{&ipc.DialError{Endpoint: "x", Err: &btsp.HandshakeError{Reason: btsp.ReasonMalformed}}, OutcomeRefused},
		{&btsp.HandshakeError{Reason: btsp.ReasonTimeout, Err: context.DeadlineExceeded}, OutcomeTimeout},
		{&ipc.DialError{Endpoint: "x", Err: context.DeadlineExceeded}, OutcomeUnreachable},
		{fmt.Errorf("call: %w", &ipc.TimeoutError{Method: "m", After: time.Second}), OutcomeTimeout},
		{&ipc.ClosedError{Cause: errors.New("EOF")}, OutcomeClosed},
		{fmt.Errorf("x: %w", peerWords), OutcomeError},
		{errors.New("something else"), OutcomeClosed},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("OutcomeOf(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
	for _, o := range Outcomes() {
		if !o.Valid() || !strings.Contains(OutcomeList(), string(o)) {
			t.Errorf("outcome %q not valid or not listed in %q", o, OutcomeList())
		}
	}
}
