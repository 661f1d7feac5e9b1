package holon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
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
func Inspect(frame []byte) Envelope { return inspect(frame, true) }

func inspect(frame []byte, fast bool) Envelope {
	var e Envelope
	var f envelopeFields
	ok := false
	if fast {
		f, ok = knownFields(frame)
	}
	if !ok {
		var all map[string]json.RawMessage
		if err := json.Unmarshal(frame, &all); err != nil || all == nil {
			e.Invalid = true
			e.Warnings = append(e.Warnings, "frame is not a JSON object")
			return e
		}
		var unknown []string
		for k := range all {
			if !allowedFields[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			e.Warnings = append(e.Warnings, "unknown top-level field(s): "+clip(strings.Join(unknown, ", "), 120))
		}
		f = envelopeFields{JSONRPC: all["jsonrpc"], ID: all["id"], Method: all["method"], Params: all["params"], Result: all["result"], Error: all["error"]}
	}
	fields := f
	if v := fields.JSONRPC; v == nil {
		e.Warnings = append(e.Warnings, `"jsonrpc" is missing`)
	} else if string(bytes.TrimSpace(v)) != `"2.0"` {
		e.Warnings = append(e.Warnings, `"jsonrpc" is not "2.0"`)
	}
	id, hasID := fields.ID, fields.ID != nil
	if hasID {
		e.ID = id
	}
	idKind := jsonKind(id)
	switch {
	case !hasID:
	case idKind == 's':
		if e.IDString = plainString(id); e.IDString == "" {
			_ = json.Unmarshal(id, &e.IDString)
		}
		if e.IDString == "" {
			e.Warnings = append(e.Warnings, "id is an empty string")
		}
	case idKind == 'n':
		e.Warnings = append(e.Warnings, "numeric id "+clip(string(id), 40)+" (Holon-RPC ids are strings)")
	case idKind == '0':
	default:
		e.Warnings = append(e.Warnings, "id is neither a string nor a number")
	}
	method, hasMethod := fields.Method, fields.Method != nil
	hasResult := fields.Result != nil
	errField, hasError := fields.Error, fields.Error != nil
	if hasError && jsonKind(errField) == '0' {
		hasError = false
	}
	switch {
	case hasMethod:
		if e.Method = plainString(method); e.Method == "" {
			_ = json.Unmarshal(method, &e.Method)
		}
		if e.Method == "" {
			e.Warnings = append(e.Warnings, "method is not a non-empty string")
		}
		if hasID && idKind != '0' {
			e.IsRequest = true
		} else if hasID {
			e.Warnings = append(e.Warnings, "request with a null id")
		} else {
			e.Warnings = append(e.Warnings, "request without an id (Holon-RPC has no notifications)")
		}
		if p := fields.Params; p != nil && jsonKind(p) != 'o' {
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
		if fields.Params != nil {
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

// envelopeFields are the fields Holon-RPC allows.
type envelopeFields struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// knownFields is the fast path for well-formed frames: one decode into a
// struct that refuses unknown fields. ok=false sends the caller to the slow
// path, which names what was wrong. Field names match exactly (the JSON
// decoder would otherwise accept "ID" for "id").
func knownFields(frame []byte) (envelopeFields, bool) {
	t := bytes.Trim(frame, " \t\r\n") // JSON whitespace only
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return envelopeFields{}, false
	}
	return scanFields(t)
}

// scanFields walks the top level of the valid JSON object t and slices out
// the values of the allowed Holon-RPC fields, without copying. It answers
// false for any key that is not one of them spelled exactly, a repeated
// key, or an escaped key: the slow path names those.
func scanFields(t []byte) (envelopeFields, bool) {
	var f envelopeFields
	var seen [6]bool
	i := 1
	for {
		i = skipWS(t, i)
		if i >= len(t) {
			return f, false
		}
		if t[i] == '}' {
			return f, true
		}
		if t[i] != '"' {
			return f, false
		}
		j := i + 1
		for j < len(t) && t[j] != '"' {
			if t[j] == '\\' {
				return f, false
			}
			j++
		}
		if j >= len(t) {
			return f, false
		}
		k := -1
		switch string(t[i+1 : j]) {
		case "jsonrpc":
			k = 0
		case "id":
			k = 1
		case "method":
			k = 2
		case "params":
			k = 3
		case "result":
			k = 4
		case "error":
			k = 5
		}
		if k < 0 || seen[k] {
			return f, false
		}
		seen[k] = true
		i = skipWS(t, j+1)
		if i >= len(t) || t[i] != ':' {
			return f, false
		}
		start := skipWS(t, i+1)
		end := skipValue(t, start)
		if end < 0 {
			return f, false
		}
		v := json.RawMessage(bytes.TrimRight(t[start:end], " \t\r\n"))
		switch k {
		case 0:
			f.JSONRPC = v
		case 1:
			f.ID = v
		case 2:
			f.Method = v
		case 3:
			f.Params = v
		case 4:
			f.Result = v
		case 5:
			f.Error = v
		}
		i = skipWS(t, end)
		if i >= len(t) {
			return f, false
		}
		switch t[i] {
		case ',':
			i++
		case '}':
			return f, skipWS(t, i+1) == len(t)
		default:
			return f, false
		}
	}
}

// plainString returns the text of a JSON string without escapes, or "" when
// raw is not such a string (the caller then decodes it properly).
func plainString(raw json.RawMessage) string {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return ""
	}
	in := raw[1 : len(raw)-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 || c >= 0x80 {
			return ""
		}
	}
	return string(in)
}

func skipWS(t []byte, i int) int {
	for i < len(t) && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index after the JSON value starting at i, or -1.
// It only balances brackets and strings: json.Unmarshal validates the rest.
func skipValue(t []byte, i int) int {
	depth := 0
	for i < len(t) {
		switch c := t[i]; c {
		case '"':
			i++
			for i < len(t) && t[i] != '"' {
				if t[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(t) {
				return -1
			}
			i++
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(t) && (t[i] == ',' || t[i] == '}') {
			return i
		}
	}
	if depth == 0 {
		return i
	}
	return -1
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

// clip makes peer text safe for a warning or an error (textsafe's visible
// escapes) and bounds it to n bytes (human.Clip). It clips before it
// escapes too, so a large frame is not copied whole.
func clip(s string, n int) string {
	return human.Clip(textsafe.Sanitize(human.Clip(s, n)), n)
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
