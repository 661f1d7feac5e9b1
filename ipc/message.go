package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Kind says what a message from a peer is.
type Kind uint8

const (
	// KindResponse is an answer to a call (result or error, with an id).
	KindResponse Kind = iota + 1
	// KindNotification is a JSON-RPC notification: a method and no "id"
	// member at all (a null id makes a request).
	KindNotification
	// KindRequest is a request: a method and an id (null included); the
	// client is expected to answer it with Conn.Reply.
	KindRequest
	// KindEvent is a lean-wire event: {"type": ..., "data": ...}.
	KindEvent
	// KindUnmatched is a response whose id matches no call in flight
	// (unknown, duplicate or stale), or an error with a null id.
	KindUnmatched
	// KindInvalid is a frame that is JSON but none of the above, or not JSON.
	KindInvalid
)

func (k Kind) String() string {
	switch k {
	case KindResponse:
		return "response"
	case KindNotification:
		return "notification"
	case KindRequest:
		return "request"
	case KindEvent:
		return "event"
	case KindUnmatched:
		return "unmatched"
	case KindInvalid:
		return "invalid"
	}
	return "unknown"
}

// MarshalText renders a Kind by name in JSON output.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Message is one decoded frame from a peer. Raw always holds the frame's bytes.
type Message struct {
	Kind    Kind            `json:"kind"`
	JSONRPC string          `json:"jsonrpc,omitempty"` // "" when the peer left it out (lean wire)
	ID      json.RawMessage `json:"id,omitempty"`      // nil when absent; "null" when null
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"` // nil when absent; "null" when null
	Error   *RPCError       `json:"error,omitempty"`
	Type    string          `json:"type,omitempty"` // lean event tag
	Data    json.RawMessage `json:"data,omitempty"` // lean event payload
	// SessionID and Pool are the stdio bus routing fields, when present.
	SessionID string          `json:"sessionId,omitempty"`
	Pool      string          `json:"pool,omitempty"`
	Raw       json.RawMessage `json:"-"`
	Time      time.Time       `json:"time"`
	// Warning is a protocol deviation noticed while decoding ("" when none).
	Warning string `json:"warning,omitempty"`
	// JSONChecked says DecodeMessage read the frame as a JSON object: ID,
	// Params, Result and Data, when set, are each valid JSON (its scanner
	// validates as encoding/json does), so a consumer need not check them
	// again. False for a Message made any other way.
	JSONChecked bool `json:"-"`
	// ResultCuts are offsets in Result of commas between the elements of
	// its array or object, one every 128 KiB or so, for a Result of 2 MiB
	// or more that DecodeMessage checked: where a printer may cut it into
	// parts (render.Options.Cuts). Nil otherwise.
	ResultCuts []int `json:"-"`
}

// ErrNotObject is returned by DecodeMessage for a frame that is valid JSON but
// not an object (arrays, batches, scalars).
var ErrNotObject = errors.New("message is not a JSON object")

// DecodeMessage classifies one frame from a peer. It accepts JSON-RPC 2.0 and
// the lean NDJSON wire alike: responses with or without "jsonrpc", numeric or
// string ids, notifications, server-initiated requests and {type,data} events.
// On error the returned Message is still usable (Kind KindInvalid, Raw set).
func DecodeMessage(frame []byte) (*Message, error) { return decodeMessage(frame, nil) }

// decodeMessage is DecodeMessage taking its short strings (jsonrpc,
// method, type, sessionId, pool) from names when it has them: a
// connection's messages repeat a few, and a flood made two strings a
// message. names may be nil.
func decodeMessage(frame []byte, names *nameCache) (*Message, error) {
	m := &Message{Raw: frame, Kind: KindInvalid}
	trimmed := bytes.TrimSpace(frame)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		if json.Valid(trimmed) {
			return m, ErrNotObject
		}
		return m, fmt.Errorf("decode message: %w", syntaxError(trimmed))
	}
	var (
		jsonrpc, method, typ, session, pool, errRaw json.RawMessage
		// twice names a routing field (id, sessionId, pool) that appears
		// more than once: which one counts is up to the parser (the last,
		// here), so the frame answers nothing.
		twice string
	)
	once := func(field string, dst *json.RawMessage, value []byte) {
		if *dst != nil && twice == "" {
			twice = field
		}
		*dst = value
	}
	err := scanTopObject(trimmed, func(name, value []byte, cuts []int) error {
		switch string(name) {
		case `"jsonrpc"`:
			jsonrpc = value
		case `"id"`:
			once("id", &m.ID, value)
		case `"method"`:
			method = value
		case `"params"`:
			m.Params = value
		case `"result"`:
			m.Result, m.ResultCuts = value, cuts
		case `"error"`:
			errRaw = value
		case `"type"`:
			typ = value
		case `"data"`:
			m.Data = value
		case `"sessionId"`:
			once("sessionId", &session, value)
		case `"pool"`:
			once("pool", &pool, value)
		}
		return nil
	})
	if err == nil && twice != "" {
		// JSON leaves duplicate names undefined (RFC 8259 §4): one parser
		// takes the first, another the last. A frame whose id or routing
		// could be read two ways is not matched to any call or answered.
		err = fmt.Errorf("%q appears more than once (duplicate keys: which one counts is ambiguous, so it answers no call)", twice)
	}
	if err != nil {
		m.ID, m.Params, m.Result, m.Data = nil, nil, nil, nil
		return m, fmt.Errorf("decode message: %w", err)
	}
	m.JSONChecked = true
	str := func(field string, raw json.RawMessage, dst *string) (bool, error) {
		if raw == nil || isNull(raw) {
			return false, nil
		}
		v, err := names.unquote(raw)
		if err != nil {
			return false, fmt.Errorf("decode message: %q is not a string", field)
		}
		*dst = v
		return true, nil
	}
	hasJSONRPC, err := str("jsonrpc", jsonrpc, &m.JSONRPC)
	if err != nil {
		return m, err
	}
	if hasJSONRPC && m.JSONRPC != "2.0" {
		m.Warning = fmt.Sprintf("jsonrpc is %q, not \"2.0\"", m.JSONRPC)
	}
	hasMethod, err := str("method", method, &m.Method)
	if err != nil {
		return m, err
	}
	hasType, err := str("type", typ, &m.Type)
	if err != nil {
		return m, err
	}
	if _, err := str("sessionId", session, &m.SessionID); err != nil {
		return m, err
	}
	if _, err := str("pool", pool, &m.Pool); err != nil {
		return m, err
	}
	if errRaw != nil && !isNull(errRaw) {
		var e RPCError
		if err := json.Unmarshal(errRaw, &e); err != nil {
			// Some peers answer a bare string as the error.
			var s string
			if json.Unmarshal(errRaw, &s) == nil {
				e = RPCError{Code: -32603, Message: s}
				m.Warning = "error is a string, not an object"
			} else {
				e = RPCError{Code: -32603, Message: "malformed error object", Data: errRaw}
				m.Warning = "malformed error object"
			}
		}
		m.Error = &e
	}
	hasID := m.ID != nil && !isNull(m.ID)
	switch {
	case hasMethod:
		// JSON-RPC 2.0 §4: only a request without an "id" member is a
		// notification; "id":null is a request, answered with "id":null.
		if m.ID != nil {
			m.Kind = KindRequest
		} else {
			m.Kind = KindNotification
		}
	case hasType && m.Result == nil && m.Error == nil:
		m.Kind = KindEvent
	case m.Result != nil || m.Error != nil:
		m.Kind = KindResponse
		if !hasID {
			m.Kind = KindUnmatched
		}
		if m.Result != nil && m.Error != nil {
			m.Warning = "response has both result and error"
		}
	case hasID:
		// An id and nothing else: an empty answer. Treat it as a null result.
		m.Kind = KindResponse
		m.Result = json.RawMessage("null")
		m.Warning = "response has neither result nor error"
	default:
		return m, errors.New("decode message: neither a request, a response nor an event")
	}
	return m, nil
}

// NumericID returns the message id as an unsigned integer, accepting a JSON
// number or a string holding one (some peers stringify ids).
func (m *Message) NumericID() (uint64, bool) { return parseNumericID(m.ID) }

func parseNumericID(id json.RawMessage) (uint64, bool) {
	if len(id) == 0 {
		return 0, false
	}
	s := id
	if s[0] == '"' {
		if len(s) < 3 || s[len(s)-1] != '"' {
			return 0, false
		}
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(string(s), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

func isNull(b json.RawMessage) bool { return string(bytes.TrimSpace(b)) == "null" }

// syntaxError finds where a non-object frame stops being JSON.
func syntaxError(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("not JSON")
}
