package ipc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

func marshalParams(params any) (json.RawMessage, error) {
	switch p := params.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return p, nil
	case []byte:
		return p, nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode params: %w", err)
	}
	return b, nil
}

func (c *Conn) encodeRequest(id uint64, req Request) []byte {
	b := make([]byte, 0, 64+len(req.Method)+len(req.Params))
	b = append(b, '{')
	if c.opts.Wire != WireLean {
		b = append(b, `"jsonrpc":"2.0",`...)
	}
	if !req.Notify {
		b = append(b, `"id":`...)
		if c.opts.Wire == WireHolon {
			b = append(b, '"')
			b = appendUint(b, id)
			b = append(b, '"')
		} else {
			b = appendUint(b, id)
		}
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = AppendJSONString(b, req.Method)
	if req.Params != nil {
		b = append(b, `,"params":`...)
		b = appendCompact(b, req.Params)
	} else if c.opts.Wire == WireHolon {
		b = append(b, `,"params":{}`...)
	}
	if req.SessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = AppendJSONString(b, req.SessionID)
	}
	if req.Pool != "" {
		b = append(b, `,"pool":`...)
		b = AppendJSONString(b, req.Pool)
	}
	return append(b, '}')
}

func (c *Conn) encodeReply(id, res json.RawMessage, rpcErr *RPCError) []byte {
	b := make([]byte, 0, 64+len(res))
	b = append(b, '{')
	if c.opts.Wire != WireLean {
		b = append(b, `"jsonrpc":"2.0",`...)
	}
	b = append(b, `"id":`...)
	b = appendCompact(b, id)
	if rpcErr != nil {
		e, _ := json.Marshal(rpcErr)
		b = append(b, `,"error":`...)
		b = append(b, e...)
	} else {
		if res == nil {
			res = json.RawMessage("null")
		}
		b = append(b, `,"result":`...)
		b = appendCompact(b, res)
	}
	return append(b, '}')
}

// appendCompact appends JSON without newlines (pretty params typed by a
// person would otherwise break NDJSON framing).
func appendCompact(b []byte, raw json.RawMessage) []byte {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return append(b, "null"...)
	}
	return append(b, buf.Bytes()...)
}

func appendUint(b []byte, n uint64) []byte {
	var tmp [20]byte
	i := len(tmp)
	for {
		i--
		tmp[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, tmp[i:]...)
}

// AppendJSONString appends s as a JSON string literal. Invalid UTF-8 becomes
// U+FFFD; control characters are escaped.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
