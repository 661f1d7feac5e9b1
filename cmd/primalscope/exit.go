package main

import (
	"context"
	"errors"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// Exit codes (a contract: see DESIGN.md and --help).
const (
	exitOK       = 0
	exitPeer     = 1 // the peer answered with a JSON-RPC error; or another failure
	exitOther    = 1 // a failure on this side that fits no other code (history database, output)
	exitUsage    = 2 // bad usage or bad input
	exitConnect  = 3 // cannot connect or the transport broke
	exitTimeout  = 4
	exitSecurity = 5 // BTSP required and no seed, handshake failed, a session frame refused, bad signature, a socket another user serves
)

// usageError marks bad usage or bad input (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error { return &usageError{err: err} }

// quietError carries an exit code for an outcome already reported on stdout
// or stderr (a peer error that was printed, for example).
type quietError struct {
	code int
	err  error
}

func (e *quietError) Error() string { return e.err.Error() }
func (e *quietError) Unwrap() error { return e.err }

func isQuiet(err error) bool {
	var q *quietError
	return errors.As(err, &q)
}

// securityError marks a refusal for security reasons (exit 5).
type securityError struct{ err error }

func (e *securityError) Error() string { return e.err.Error() }
func (e *securityError) Unwrap() error { return e.err }

// exitCode maps an error to the process exit code. The order matters: a
// BTSP demand arrives as a closed connection, a timeout may wrap a peer's
// earlier words.
func exitCode(err error) int {
	var (
		q   *quietError
		u   *usageError
		sec *securityError
		bt  *ipc.BTSPRequiredError
		hs  *btsp.HandshakeError
		fp  *ipc.ForeignPeerError
		uo  *ipc.UnknownOwnerError
		fe  *btsp.FrameError
		to  *ipc.TimeoutError
		re  *ipc.RPCError
		ce  *ipc.ClosedError
		nr  *ipc.NotResentError
		ua  *ipc.UnattributedError
		de  *ipc.DialError
		nf  *discovery.NotFoundError
		cn  *connectError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &q):
		return q.code
	case errors.As(err, &u):
		return exitUsage
	case errors.As(err, &hs) && hs.Reason == btsp.ReasonTimeout:
		return exitTimeout // the handshake ran out of time: nothing was refused
	case errors.As(err, &sec), errors.As(err, &bt), errors.As(err, &hs), errors.As(err, &fp), errors.As(err, &fe), errors.As(err, &uo):
		// fe: a BTSP frame refused at any point of a session (it does not
		// authenticate, is replayed, is cleartext), even when the
		// connection it ended is all the caller saw (a *ipc.ClosedError).
		return exitSecurity
	case errors.As(err, &de), errors.As(err, &nf), errors.As(err, &cn):
		// Could not connect, even when connecting timed out (net's dial
		// timeout also matches context.DeadlineExceeded).
		return exitConnect
	case errors.As(err, &to), errors.Is(err, context.DeadlineExceeded):
		return exitTimeout
	case errors.As(err, &ce), errors.As(err, &nr), errors.As(err, &ua):
		// nr: the peer refused the connection the request was written
		// on, after its first request; the request was not resent. ua:
		// the peer refused a request in flight without naming it, and
		// this call got no answer of its own.
		return exitConnect
	case errors.As(err, &re):
		return exitPeer
	case errors.Is(err, context.Canceled):
		return 130 // interrupted, as a shell reports SIGINT
	}
	// Every usage error is marked (usage.go: cobra's own refusals too), and
	// every connection failure is typed; anything else went wrong on this
	// side, which is neither.
	return exitOther
}

// connectError marks "nothing to connect to" found without dialing (no
// target discovered): exit 3, like a failed dial.
type connectError struct{ err error }

func (e *connectError) Error() string { return e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }
