package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

func TestExitCodeOrder(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&ipc.DialError{Endpoint: "x", Err: fmt.Errorf("dial: %w", context.DeadlineExceeded)}, exitConnect},
		{&ipc.DialError{Endpoint: "x", Err: &btsp.HandshakeError{Reason: btsp.ReasonFamilyVerification}}, exitSecurity},
		{&ipc.DialError{Endpoint: "x", Err: &btsp.HandshakeError{Reason: btsp.ReasonTimeout}}, exitTimeout},
		{&ipc.TimeoutError{Method: "m"}, exitTimeout},
		{&ipc.ClosedError{Cause: errors.New("peer closed")}, exitConnect},
		{&ipc.NotResentError{Method: "m", Refusal: "BTSP required"}, exitConnect},                          // the transport broke under it; not 1
		{&ipc.UnattributedError{Method: "m", Peer: &ipc.RPCError{Code: -32700}, InFlight: 3}, exitConnect}, // no answer of its own: not the peer's answer (4), not 1
		{&ipc.BTSPRequiredError{}, exitSecurity},
		{&ipc.DialError{Endpoint: "x", Err: &ipc.UnknownOwnerError{Endpoint: "tcp://127.0.0.1:9", Err: errors.New("no socket listens")}}, exitSecurity}, // a skipped owner check: not "cannot connect"
		{fmt.Errorf("t: %w", &ipc.RPCError{Code: -32601}), exitPeer},
		{usageErr(errors.New("bad")), exitUsage},
		{&connectError{errors.New("nothing found")}, exitConnect},
		{errors.New("open history: disk full"), exitOther}, // not "cannot connect"
		{fmt.Errorf("%w", context.Canceled), 130},
	} {
		if got := exitCode(tc.err); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.err, got, tc.want)
		}
	}
}
