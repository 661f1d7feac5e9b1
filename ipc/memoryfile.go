package ipc

import "bytes"

// decodeRecordFast decodes a record file as writeRecord writes it, without
// reflection: a call reads one record before it dials, and encoding/json's
// first use of these types in a process (its type caches, reflect look-ups
// that fault in pages of a large binary) costs about 0.15 ms there. ok is
// false when b holds anything the writer does not produce (a member name
// in other case, an escape in a name, a value of another type, invalid
// JSON...): the caller then decodes it with encoding/json. Whenever ok is
// true, key and f are what json.Unmarshal into a record gives.
func decodeRecordFast(b []byte) (key string, f EndpointFacts, ok bool) {
	if len(b) == 0 || b[0] != '{' {
		return "", f, false
	}
	ok = true
	seen := false
	err := scanTopObject(b, func(name, value []byte, _ []int) error {
		switch memberName(name) {
		case "endpoint":
			k, good := plainString(value)
			if !good {
				ok = false
			}
			key, seen = k, true
		case "":
			ok = false // escaped or not ASCII: it might still name a member
		default:
			if bytes.EqualFold(name[1:len(name)-1], []byte("endpoint")) {
				ok = false
			}
		}
		return nil
	})
	if err != nil || !ok || !seen {
		return "", f, false
	}
	f, ok = decodeFacts(b)
	return key, f, ok
}

// memberName returns a raw member name (quotes included) without its
// quotes, or "" when it holds an escape or a byte outside ASCII (left to
// encoding/json).
func memberName(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	for _, c := range inner {
		if c == '\\' || c >= 0x80 {
			return ""
		}
	}
	return string(inner)
}

// factNames are EndpointFacts' JSON member names.
var factNames = [...]string{"prefix", "btsp_required", "btsp_framing", "btsp_prefix", "socket_id", "updated"}

func decodeFacts(value []byte) (EndpointFacts, bool) {
	var f EndpointFacts
	if len(value) == 0 || value[0] != '{' {
		return f, false
	}
	ok := true
	err := scanTopObject(value, func(name, v []byte, _ []int) error {
		var good bool
		switch memberName(name) {
		case "prefix":
			f.Prefix, good = optBool(v)
		case "btsp_prefix":
			f.BTSPPrefix, good = optBool(v)
		case "btsp_required":
			f.BTSPRequired, good = plainBool(v)
		case "btsp_framing":
			f.Framing, good = plainString(v)
		case "socket_id":
			f.Socket, good = plainString(v)
		case "updated":
			good = f.Updated.UnmarshalJSON(v) == nil
		case "":
			good = false
		case "endpoint":
			good = true // the record's key (decodeRecordFast)
		default:
			good = true // ignored, unless encoding/json would match it by case
			for _, n := range factNames {
				if bytes.EqualFold(name[1:len(name)-1], []byte(n)) {
					good = false
				}
			}
		}
		if !good {
			ok = false
		}
		return nil
	})
	return f, ok && err == nil
}

// optBool decodes a *bool member: true, false or null (nil).
func optBool(v []byte) (*bool, bool) {
	if string(v) == "null" {
		return nil, true
	}
	b, ok := plainBool(v)
	if !ok {
		return nil, false
	}
	return &b, true
}

func plainBool(v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

func plainString(v []byte) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	s, err := unquote(v)
	return s, err == nil
}
