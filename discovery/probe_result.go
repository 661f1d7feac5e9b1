package discovery

// What a probe found: the Probe and each call's CallResult.

import (
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/ipc"
)

// CallResult is how one method answered during a probe.
type CallResult struct {
	// OK is true when the peer answered with a result.
	OK bool `json:"ok"`
	// Code and Message are the peer's error object, when it answered one.
	Code    int64  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Err is a transport problem or timeout (no answer at all).
	Err     string        `json:"err,omitempty"`
	Latency time.Duration `json:"latency"`
}

// Implemented reports whether the method exists: it answered with a result
// or with an error other than "method not found".
func (c CallResult) Implemented() bool {
	return c.OK || (c.Err == "" && c.Refused() == "" && !isMethodNotFound(c.Code, c.Message))
}

// Refused says why the peer answered that it did not process the call
// ("riboCipher prefix required (-32002)", "BTSP handshake required"), or
// "" when it did not say so: such an answer proves neither that the
// method exists nor that it does not.
func (c CallResult) Refused() string {
	switch {
	case c.OK || c.Err != "":
		return ""
	case c.Code == -32002:
		return "riboCipher prefix required (-32002)"
	case (&ipc.RPCError{Code: c.Code, Message: c.Message}).IsBTSPRequired():
		return "BTSP handshake required"
	}
	return ""
}

func isMethodNotFound(code int64, msg string) bool {
	if code == -32601 || code == 12 {
		return true
	}
	m := strings.ToLower(msg)
	return code != 0 && (strings.Contains(m, "method not found") || strings.Contains(m, "unknown method"))
}

// Probe is what one probe of a target found.
type Probe struct {
	State State     `json:"state"`
	Err   string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
	// Connect is how long connect() took.
	Connect time.Duration `json:"connect"`
	// Latency is the health.liveness round trip.
	Latency time.Duration `json:"latency"`
	// Wire is what the peer's answers looked like: "jsonrpc" or "lean".
	Wire     string             `json:"wire,omitempty"`
	Liveness *capability.Health `json:"liveness,omitempty"`
	// Readiness is the health.readiness answer, if any.
	Readiness *capability.Health `json:"readiness,omitempty"`
	// Calls records each method sent and how it answered.
	Calls        map[string]CallResult    `json:"calls,omitempty"`
	Identity     *capability.Identity     `json:"identity,omitempty"`
	Capabilities *capability.Capabilities `json:"capabilities,omitempty"`
	// CapsMethod is the method that answered with capabilities
	// (capabilities.list or capability.list).
	CapsMethod string `json:"caps_method,omitempty"`
	// CapsKeys are the top-level keys of the capabilities answer (to tell
	// an absent field from an empty one).
	CapsKeys []string `json:"caps_keys,omitempty"`
	// BTSPRequired is true when the peer demanded a BTSP handshake (or its
	// transport_security says one is mandatory).
	BTSPRequired bool `json:"btsp_required,omitempty"`
	// BTSPRejection is the peer's own rejection error, when it sent one.
	BTSPRejection *ipc.RPCError `json:"btsp_rejection,omitempty"`
	// Secured is true when the probe went through a BTSP handshake.
	Secured bool `json:"secured,omitempty"`
	// Session says what protected the probe's connection when BTSP was
	// involved (a session, or cleartext sent on purpose): whether the
	// server was authenticated and the messages encrypted. Nil otherwise.
	Session *ipc.SessionSecurity `json:"session,omitempty"`
	// Owner is who serves the socket when the user does not trust it:
	// another local user than the user and root (SO_PEERCRED), or a socket
	// file another user owns. A call to it is refused (exit 5) unless that
	// user is trusted (--trust-uid); the probe only looked. Nil otherwise.
	Owner *ipc.PeerIdentity `json:"owner,omitempty"`
	// Cached is true when the result came from the dead-endpoint cache.
	Cached bool `json:"cached,omitempty"`
	// Full is true when identity and capabilities were asked too.
	Full bool `json:"full,omitempty"`
	// CutOff is true when a sweep that prints as soon as it can
	// (SweepUntilJudged) stopped waiting for the target's liveness answer
	// before its own deadline: every other target had been judged and it
	// had been silent far longer than they took. That is no verdict: State
	// is unknown (never stale: only the probe's own deadline passing makes a
	// target stale), Incomplete is set, and Err says how long it was waited
	// for and what the probe timeout is.
	CutOff bool `json:"cut_off,omitempty"`
	// Incomplete is true when the probe did not run to its own end: the
	// caller's context ended while it waited for its turn ("not probed
	// yet") or while it ran ("probe cut short"), or it was cut off
	// (CutOff). Its State is then unknown
	// unless the peer had already answered: nothing was learned, and a
	// sweep keeps the target's last judged probe instead.
	Incomplete bool `json:"incomplete,omitempty"`
	// stamp is the socket file the probe reached (Unix sockets): a later
	// sweep only knocks on a live target whose file is still this one
	// (see WatchOptions.HealthEvery).
	stamp fileStamp
}

// timedOut reports whether one of the probe's calls got no answer in time.
func (r Probe) timedOut() bool {
	for _, c := range r.Calls {
		if strings.HasPrefix(c.Err, "timeout") {
			return true
		}
	}
	return false
}
