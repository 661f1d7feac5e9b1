package holon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Envelope is what Inspect learned about one frame: its shape and every rule
// of holon-rpc.md the peer bent in it.
type Envelope struct {
	// ID is the id as sent (a JSON string, number or null; nil when absent).
	ID json.RawMessage
	// IDString is the id's text when it is a JSON string ("" otherwise).
	IDString string
	// Method is set for requests and notifications.
	Method string
	// IsRequest: a method and an id. IsResponse: a result or an error.
	IsRequest, IsResponse bool
	// IsError is a response carrying an error object.
	IsError bool
	// Warnings lists every rule the frame bends, in words.
	Warnings []string
	// Invalid is set when the frame is not a JSON object at all.
	Invalid bool
}

var allowedFields = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true, "result": true, "error": true}

// Inspect checks one incoming frame against the Holon-RPC envelope rules
// without rejecting it: the tolerant reader reports, the Conn decides.
// It never panics, whatever the input.
func Inspect(frame []byte) Envelope {
	var e Envelope
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(frame, &fields); err != nil || fields == nil {
		e.Invalid = true
		e.Warnings = append(e.Warnings, "frame is not a JSON object")
		return e
	}
	var unknown []string
	for k := range fields {
		if !allowedFields[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		e.Warnings = append(e.Warnings, "unknown top-level field(s): "+clip(strings.Join(unknown, ", "), 120))
	}
	if v, ok := fields["jsonrpc"]; !ok {
		e.Warnings = append(e.Warnings, `"jsonrpc" is missing`)
	} else if string(bytes.TrimSpace(v)) != `"2.0"` {
		e.Warnings = append(e.Warnings, `"jsonrpc" is not "2.0"`)
	}
	id, hasID := fields["id"]
	if hasID {
		e.ID = id
	}
	idKind := jsonKind(id)
	switch {
	case !hasID:
	case idKind == 's':
		if err := json.Unmarshal(id, &e.IDString); err != nil || e.IDString == "" {
			e.Warnings = append(e.Warnings, "id is an empty string")
		}
	case idKind == 'n':
		e.Warnings = append(e.Warnings, "numeric id "+clip(string(id), 40)+" (Holon-RPC ids are strings)")
	case idKind == '0':
	default:
		e.Warnings = append(e.Warnings, "id is neither a string nor a number")
	}
	method, hasMethod := fields["method"]
	_, hasResult := fields["result"]
	errField, hasError := fields["error"]
	if hasError && jsonKind(errField) == '0' {
		hasError = false
	}
	switch {
	case hasMethod:
		if err := json.Unmarshal(method, &e.Method); err != nil || e.Method == "" {
			e.Warnings = append(e.Warnings, "method is not a non-empty string")
		}
		if hasID && idKind != '0' {
			e.IsRequest = true
		} else if hasID {
			e.Warnings = append(e.Warnings, "request with a null id")
		} else {
			e.Warnings = append(e.Warnings, "request without an id (Holon-RPC has no notifications)")
		}
		if p, ok := fields["params"]; ok && jsonKind(p) != 'o' {
			e.Warnings = append(e.Warnings, "params is not an object")
		}
		if hasResult || hasError {
			e.Warnings = append(e.Warnings, "request also carries result or error")
		}
	case hasResult || hasError:
		e.IsResponse = true
		e.IsError = hasError
		if !hasID {
			e.Warnings = append(e.Warnings, "response without an id")
		} else if idKind == '0' {
			e.Warnings = append(e.Warnings, "response with a null id")
		}
		if hasResult && hasError {
			e.Warnings = append(e.Warnings, "response has both result and error")
		}
		if _, ok := fields["params"]; ok {
			e.Warnings = append(e.Warnings, "response carries params")
		}
		if hasError {
			e.Warnings = append(e.Warnings, checkError(errField)...)
		}
	default:
		e.Warnings = append(e.Warnings, "neither a request nor a response")
	}
	return e
}

func checkError(raw json.RawMessage) []string {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return []string{"error is not an object"}
	}
	var w []string
	code, ok := obj["code"]
	if !ok {
		w = append(w, "error.code is missing")
	} else {
		var n json.Number
		d := json.NewDecoder(bytes.NewReader(code))
		d.UseNumber()
		if d.Decode(&n) != nil {
			w = append(w, "error.code is not a number")
		} else if _, err := n.Int64(); err != nil {
			w = append(w, "error.code is not an integer")
		}
	}
	if m, ok := obj["message"]; !ok || jsonKind(m) != 's' {
		w = append(w, "error.message is not a string")
	}
	return w
}

// jsonKind returns 's' string, 'n' number, 'o' object, 'a' array, 'b' bool,
// '0' null, 0 for absent or anything else.
func jsonKind(raw json.RawMessage) byte {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return 0
	}
	switch c := t[0]; {
	case c == '"':
		return 's'
	case c == '-' || c >= '0' && c <= '9':
		return 'n'
	case c == '{':
		return 'o'
	case c == '[':
		return 'a'
	case c == 't' || c == 'f':
		return 'b'
	case c == 'n':
		return '0'
	}
	return 0
}

// clip shortens s for a warning, keeping it valid UTF-8 and free of control
// characters.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xc0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Check validates an outgoing frame strictly: the rules primalscope keeps in
// what it sends. It returns nil for a frame that follows holon-rpc.md.
func Check(frame []byte) error {
	e := Inspect(frame)
	if len(e.Warnings) > 0 {
		return fmt.Errorf("holon-rpc envelope: %s", strings.Join(e.Warnings, "; "))
	}
	if !e.IsRequest && !e.IsResponse {
		return fmt.Errorf("holon-rpc envelope: neither a request nor a response")
	}
	return nil
}
