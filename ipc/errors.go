package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// RPCError is the error object a peer answered with (JSON-RPC 2.0 "error").
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string {
	if e == nil {
		return "<nil>"
	}
	return fmt.Sprintf("peer error %d: %s", e.Code, e.Message)
}

// Meaning returns the standard meaning of the error's code, or "" when the code
// is not one the JSON-RPC 2.0 or Holon-RPC standards name.
func (e *RPCError) Meaning() string { return CodeMeaning(e.Code) }

// CodeMeaning names a JSON-RPC 2.0 (and Holon-RPC gRPC-style) error code.
func CodeMeaning(code int64) string {
	switch {
	case code == -32700:
		return "parse error: the peer could not parse the JSON it received"
	case code == -32600:
		return "invalid request: the message is not a valid request object"
	case code == -32601:
		return "method not found"
	case code == -32602:
		return "invalid params"
	case code == -32603:
		return "internal error in the peer"
	case code == -32002:
		return "riboCipher prefix required by the peer: connect with --prefix auto (the default) or on"
	case code <= -32000 && code >= -32099:
		return "server error (implementation-defined)"
	case code == 4:
		return "deadline exceeded (Holon-RPC)"
	case code == 8:
		return "resource exhausted (Holon-RPC)"
	case code == 12:
		return "unimplemented: method not registered (Holon-RPC)"
	case code == 13:
		return "internal error (Holon-RPC)"
	case code == 14:
		return "unavailable (Holon-RPC)"
	}
	return ""
}

// IsBTSPRequired reports whether an error object is a peer's demand for a
// BTSP handshake: code -32600 or -32000 with a message starting
// "BTSP handshake required".
func (e *RPCError) IsBTSPRequired() bool {
	if e == nil {
		return false
	}
	return (e.Code == -32600 || e.Code == -32000) &&
		strings.HasPrefix(strings.ToLower(strings.TrimSpace(e.Message)), "btsp handshake required")
}

// TimeoutError is returned when a call's deadline passes before its answer.
type TimeoutError struct {
	Method string
	After  time.Duration // how long the call waited
	// Where says more about what went unanswered (for example a stdio bus pool
	// and session); it may be empty.
	Where string
	// Unsent is set when the deadline passed while the request was still
	// being written: the peer was not reading it.
	Unsent bool
}

func (e *TimeoutError) Error() string {
	s := fmt.Sprintf("%s: no answer within %s", e.Method, e.After.Round(time.Millisecond))
	if e.Unsent {
		s = fmt.Sprintf("%s: the peer did not read the request within %s (it was never sent whole)", e.Method, e.After.Round(time.Millisecond))
	}
	if e.Where != "" {
		s += " (" + e.Where + ")"
	}
	return s
}

// Timeout marks TimeoutError as a timeout for net.Error-style checks.
func (e *TimeoutError) Timeout() bool { return true }

// ClosedError is returned for calls that were in flight, or started, when the
// connection ended.
type ClosedError struct {
	InFlight int   // calls that were waiting when the connection ended
	Cause    error // why it ended (nil after a local Close)
}

func (e *ClosedError) Error() string {
	s := "connection closed"
	var fe *btsp.FrameError
	if errors.As(e.Cause, &fe) {
		// Not a closed connection: the session ended on a frame it
		// refused (the cause says so).
		s = "connection ended"
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	if e.InFlight > 0 {
		s += fmt.Sprintf(" (%d call(s) in flight)", e.InFlight)
	}
	return s
}

func (e *ClosedError) Unwrap() error { return e.Cause }

// NotResentError is returned for a call whose request was written on a
// connection the peer then refused (BTSP required, riboCipher prefix
// required), when more than one request was written on it: the refusal
// does not say which line it answers, so this request may have reached
// the peer (a lenient peer reads on) and is not sent again, never twice.
// A request is resent on the new connection only when it was the only one
// written on the refused one.
type NotResentError struct {
	Method  string
	Refusal string // what the peer refused, as the trace says it
}

func (e *NotResentError) Error() string {
	return fmt.Sprintf("%s: not resent: the peer refused the connection it was written on (%s) with more than one request on it; "+
		"this one may have reached the peer, so it is not sent again (retry it yourself if it is safe to repeat)", e.Method, e.Refusal)
}

// UnattributedError is returned for a call that was in flight when the
// peer sent an error naming no call (an id null or absent: a parse error,
// -32700, most often) while more than one call was in flight, and that
// got no answer of its own: the peer's error may be this call's or
// another's, so this request may have reached the peer, and the peer may
// be running it. It is not sent again. The connection takes no new call
// after such an error (it is closed once the calls in flight are settled).
type UnattributedError struct {
	Method   string
	Peer     *RPCError // what the peer said, with no id
	InFlight int       // calls in flight when it said so
}

func (e *UnattributedError) Error() string {
	return fmt.Sprintf("%s: no answer of its own: the peer answered an error with no id (%v) while %d calls were in flight on the connection, "+
		"so which request it refused cannot be told; this one may have reached the peer and is not sent again (retry it yourself if it is safe to repeat)",
		e.Method, e.Peer, e.InFlight)
}

// FrameTooLargeError is returned when a peer sends a message longer than the
// limit. The connection cannot be resynchronised and is closed.
type FrameTooLargeError struct {
	Limit int64
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("peer sent a message larger than the %s limit (raise it with --max-frame)", human.Bytes(e.Limit))
}

// BTSPRequiredError is returned when a peer demands a BTSP handshake before
// JSON-RPC, or when primalscope refuses to send cleartext to an endpoint known
// to require BTSP.
type BTSPRequiredError struct {
	Endpoint string
	Peer     *RPCError // the peer's own words, when it said so
	// Family is set when the endpoint belongs to another family than the
	// user's own (OwnFamily) and no seed is known for it: the user's seed
	// is not that family's, and was not used.
	Family, OwnFamily string
	// Claimed says Family is only the peer's own claim (identity.get, a
	// manifest, a registry's answer), which never picks a seed.
	Claimed bool
	// Unbound says a seed was set with no family (OwnFamily ""): it was
	// not offered to Family, which the user did not give it for.
	Unbound bool
	// Failed is how the BTSP handshake tried with the seed after the
	// peer's demand failed (nil when none was tried).
	Failed error
}

func (e *BTSPRequiredError) Error() string {
	s := "BTSP handshake required"
	if e.Endpoint != "" {
		s += " by " + e.Endpoint
	}
	if e.Failed != nil {
		return s + ", and no BTSP session could be opened with the family seed; nothing was sent in cleartext after the demand: " + e.Failed.Error()
	}
	if e.Family != "" && e.Claimed {
		return fmt.Sprintf("%s, which says it is of family %q: its name does not carry that family, and a peer's own word never picks a seed (none was used); "+
			"if you trust it, call it by its address, or by a socket name ending in -%s.sock", s, e.Family, e.Family)
	}
	if e.Family != "" && e.Unbound {
		return fmt.Sprintf("%s, of family %q: the family seed set (FAMILY_SEED or --family-seed-file) was given with no family "+
			"(no --family, no FAMILY_ID), and is not offered to a family it was not given for (none was used); "+
			"if it is family %q's, say so: --family %s (or FAMILY_ID=%s); another family's seed goes in the config file ([families.%s] seed_file = \"FILE\", mode 0600)",
			s, e.Family, e.Family, e.Family, e.Family, e.Family)
	}
	if e.Family != "" && e.OwnFamily == "" {
		return fmt.Sprintf("%s, of family %q: no seed is known for family %q; give it with --family %s and FAMILY_SEED or --family-seed-file FILE, "+
			"or in the config file ([families.%s] seed_file = \"FILE\", mode 0600) (or --btsp-cipher null to send cleartext on purpose)", s, e.Family, e.Family, e.Family, e.Family)
	}
	if e.Family != "" {
		return fmt.Sprintf("%s, of family %q: no seed is known for family %q (FAMILY_SEED and --family-seed-file are family %q's); "+
			"give it in the config file ([families.%s] seed_file = \"FILE\", mode 0600), or as your own with --family %s --family-seed-file FILE",
			s, e.Family, e.Family, e.OwnFamily, e.Family, e.Family)
	}
	return s + ": set FAMILY_SEED or pass --family-seed-file (or --btsp-cipher null to send cleartext on purpose)"
}

func (e *BTSPRequiredError) Unwrap() []error {
	var errs []error
	if e.Peer != nil {
		errs = append(errs, e.Peer)
	}
	if e.Failed != nil {
		errs = append(errs, e.Failed)
	}
	return errs
}

// DialError is returned when a transport cannot be opened.
type DialError struct {
	Endpoint string
	Err      error
}

func (e *DialError) Error() string { return fmt.Sprintf("dial %s: %v", e.Endpoint, e.Err) }
func (e *DialError) Unwrap() error { return e.Err }

// ErrNotAddress is returned by ParseEndpoint for a string that names no
// address (for example a primal name), so that callers can resolve it by name.
var ErrNotAddress = errors.New("not an address")

// refusedForSecurity reports whether err says the peer or its session
// failed a security check, not only that time ran out: a BTSP handshake
// that failed otherwise than by timeout, a refused session frame, a
// foreign peer. (A *BTSPRequiredError is the peer's demand; whether the
// attempt to meet it was refused or ran out of time is in its Failed.)
func refusedForSecurity(err error) bool {
	var (
		hs *btsp.HandshakeError
		fe *btsp.FrameError
		fp *ForeignPeerError
	)
	switch {
	case errors.As(err, &hs):
		return hs.Reason != btsp.ReasonTimeout
	case errors.As(err, &fe), errors.As(err, &fp):
		return true
	}
	return false
}

// SecurityFailure reports whether err is a refusal for security reasons
// (the CLI's exit 5, the history's "refused"): a BTSP demand with no seed
// to meet it (*BTSPRequiredError), a failed BTSP handshake other than one
// that ran out of time (*btsp.HandshakeError), or a BTSP session frame
// refused at any point of the session (*btsp.FrameError: it does not
// authenticate, is replayed, or is cleartext inside an encrypted session),
// also when it reaches the caller inside a *ClosedError, or a Unix socket
// served by a local user the user does not trust (*ForeignPeerError), or
// a loopback TCP port whose owner cannot be told (*UnknownOwnerError). A long-running
// watcher does not reconnect on its own after one: the same peer would
// only be refused again, or the impostor be given another try.
func SecurityFailure(err error) bool {
	var (
		bt *BTSPRequiredError
		hs *btsp.HandshakeError
		fe *btsp.FrameError
		fp *ForeignPeerError
		uo *UnknownOwnerError
	)
	switch {
	case errors.As(err, &hs):
		return hs.Reason != btsp.ReasonTimeout
	case errors.As(err, &bt), errors.As(err, &fe), errors.As(err, &fp), errors.As(err, &uo):
		return true
	}
	return false
}
