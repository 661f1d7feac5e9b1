package history

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// Outcome says how a recorded call ended.
type Outcome string

// The outcomes a call can have.
const (
	OutcomeOK        Outcome = "ok"        // the peer answered with a result
	OutcomeError     Outcome = "error"     // the peer answered with a JSON-RPC error
	OutcomeTimeout   Outcome = "timeout"   // no answer before the deadline (exit 4)
	OutcomeClosed    Outcome = "closed"    // the connection broke after it was made (exit 3)
	OutcomeRefused   Outcome = "refused"   // refused for security: BTSP required, handshake failed, bad signature (exit 5)
	OutcomeCancelled Outcome = "cancelled" // the user gave up (Ctrl-C, context cancelled)
	// OutcomeUnreachable: no connection could be made: no socket there, the
	// connection was refused, no route (exit 3).
	OutcomeUnreachable Outcome = "unreachable"
)

// Outcomes lists every outcome, in the order a user meets them.
func Outcomes() []Outcome {
	return []Outcome{OutcomeOK, OutcomeError, OutcomeTimeout, OutcomeUnreachable, OutcomeClosed, OutcomeRefused, OutcomeCancelled}
}

// Valid reports whether o is one of the known outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeOK, OutcomeError, OutcomeTimeout, OutcomeClosed, OutcomeRefused, OutcomeCancelled, OutcomeUnreachable:
		return true
	}
	return false
}

// Source says which front end made a call.
type Source string

// The front ends.
const (
	SourceCLI Source = "cli"
	SourceTUI Source = "tui"
)

// RPCError is the error object a peer answered with.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Entry is one recorded call. There is deliberately no field for BTSP keys,
// seeds or handshake material: they cannot be stored.
type Entry struct {
	ID       int64         // assigned by the store; 0 before it is stored
	Time     time.Time     // when the call was sent
	Duration time.Duration // from send to answer (or to the failure)

	Target   string // the name the user gave ("beardog", "ai", a path...)
	Endpoint string // the resolved endpoint ("unix:///run/...sock", "tcp://h:p", "ws://...")
	Wire     string // "jsonrpc", "lean", "holon", ...
	// Transport describes how the bytes travelled, e.g. "unix",
	// "unix+btsp(chacha20_poly1305)", "tcp", "ws", "stdio".
	Transport string
	Prefix    bool // the riboCipher first-byte prefix was sent

	Method string
	// Params is the JSON params as sent (redacted before storing). When
	// ParamsTruncated is set it holds only the first bytes and is not valid JSON.
	Params json.RawMessage
	// Result is the JSON result, nil when the call did not succeed. When
	// Truncated is set it holds only the first bytes and is not valid JSON.
	Result json.RawMessage
	// Error is the peer's error object, or for a failure without one (timeout,
	// closed...) a description with Code 0.
	Error *RPCError

	Session string // stdio bus session, when the target is a bus
	Pool    string // stdio bus pool

	Outcome Outcome
	// ResponseSize is the full size in bytes of the answer (result or error
	// data) as received, also when what is stored was cut.
	ResponseSize int64
	// Truncated is set when the stored result or error data was cut to the
	// store's entry limit.
	Truncated bool
	// ParamsTruncated is set when the stored params were cut to the entry
	// limit; such a call cannot be replayed.
	ParamsTruncated bool
	Source          Source
}

// entryJSON is the stable JSON form of an Entry (history --json, export json).
type entryJSON struct {
	ID              int64           `json:"id"`
	Time            time.Time       `json:"time"`
	DurationMS      float64         `json:"duration_ms"`
	Target          string          `json:"target"`
	Endpoint        string          `json:"endpoint"`
	Wire            string          `json:"wire,omitempty"`
	Transport       string          `json:"transport,omitempty"`
	Prefix          bool            `json:"prefix"`
	Method          string          `json:"method"`
	Params          json.RawMessage `json:"params,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           *RPCError       `json:"error,omitempty"`
	Session         string          `json:"session,omitempty"`
	Pool            string          `json:"pool,omitempty"`
	Outcome         Outcome         `json:"outcome"`
	ResponseSize    int64           `json:"response_size"`
	Truncated       bool            `json:"truncated"`
	ParamsTruncated bool            `json:"params_truncated,omitempty"`
	Source          Source          `json:"source,omitempty"`
}

// MarshalJSON renders an Entry in its stable JSON form. A cut result, error
// data or params (not valid JSON) is rendered as a JSON string of the bytes
// that were kept.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{
		ID: e.ID, Time: e.Time.UTC(), DurationMS: float64(e.Duration) / float64(time.Millisecond),
		Target: e.Target, Endpoint: e.Endpoint, Wire: e.Wire, Transport: e.Transport, Prefix: e.Prefix,
		Method: e.Method, Params: asJSON(e.Params), Result: asJSON(e.Result),
		Session: e.Session, Pool: e.Pool, Outcome: e.Outcome, ResponseSize: e.ResponseSize,
		Truncated: e.Truncated, ParamsTruncated: e.ParamsTruncated, Source: e.Source,
	}
	if e.Error != nil {
		er := *e.Error
		er.Data = asJSON(er.Data)
		j.Error = &er
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var j entryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("decode history entry: %w", err)
	}
	*e = Entry{
		ID: j.ID, Time: j.Time, Duration: time.Duration(j.DurationMS * float64(time.Millisecond)),
		Target: j.Target, Endpoint: j.Endpoint, Wire: j.Wire, Transport: j.Transport, Prefix: j.Prefix,
		Method: j.Method, Params: j.Params, Result: j.Result, Error: j.Error,
		Session: j.Session, Pool: j.Pool, Outcome: j.Outcome, ResponseSize: j.ResponseSize,
		Truncated: j.Truncated, ParamsTruncated: j.ParamsTruncated, Source: j.Source,
	}
	return nil
}

// asJSON returns b when it is valid JSON, nil when empty, and otherwise b as
// a JSON string (for cut values).
func asJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b)) // invalid UTF-8 becomes U+FFFD
	return s
}

// cutView returns b limited to at most limit bytes, not splitting a UTF-8
// sequence, and whether it was cut. The result shares b's bytes.
func cutView(b []byte, limit int) ([]byte, bool) {
	if limit <= 0 || len(b) <= limit {
		return b, false
	}
	n := limit
	for i := 0; i < utf8.UTFMax-1 && n > 0 && !utf8.RuneStart(b[n]); i++ {
		n--
	}
	return b[:n:n], true
}
