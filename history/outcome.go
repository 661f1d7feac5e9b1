package history

import (
	"context"
	"errors"
	"strings"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// OutcomeOf names how a call ended from the error the dial or the call
// returned, in the terms of the command line's exit codes: a peer's
// JSON-RPC error is OutcomeError (1); a connection that could not be made
// (no socket there, connection refused) is OutcomeUnreachable and one that
// broke after it was made is OutcomeClosed (both 3); a timeout (also of a
// BTSP handshake) is OutcomeTimeout (4); a BTSP demand, a failed
// handshake or a BTSP session frame refused at any point (it does not
// authenticate, is replayed or is cleartext) is OutcomeRefused (5); a
// cancelled context is OutcomeCancelled. An error of no known kind is
// OutcomeClosed.
//
// Front ends with failures of their own (a name that resolves to nothing,
// a refusal before dialing) classify those first and pass the rest here.
func OutcomeOf(err error) Outcome {
	var (
		hs *btsp.HandshakeError
		fe *btsp.FrameError
		bt *ipc.BTSPRequiredError
		fp *ipc.ForeignPeerError
		de *ipc.DialError
		to *ipc.TimeoutError
		ce *ipc.ClosedError
		re *ipc.RPCError
	)
	switch {
	case err == nil:
		return OutcomeOK
	case errors.As(err, &hs) && hs.Reason == btsp.ReasonTimeout:
		return OutcomeTimeout // the handshake ran out of time: nothing was refused
	case errors.As(err, &bt), errors.As(err, &hs), errors.As(err, &fp), errors.As(err, &fe):
		return OutcomeRefused // fe: a session frame refused, even inside a *ipc.ClosedError
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	case errors.As(err, &de):
		return OutcomeUnreachable // even when connecting timed out
	case errors.As(err, &to), errors.Is(err, context.DeadlineExceeded):
		return OutcomeTimeout
	case errors.As(err, &ce):
		return OutcomeClosed
	case errors.As(err, &re):
		return OutcomeError
	}
	return OutcomeClosed
}

// OutcomeList is the outcomes for a help text or a message:
// "ok, error, ..., or cancelled".
func OutcomeList() string {
	all := Outcomes()
	words := make([]string, len(all))
	for i, o := range all {
		words[i] = string(o)
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
