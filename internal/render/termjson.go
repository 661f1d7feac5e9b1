package render

import (
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// TerminalJSON makes JSON text safe for a terminal without changing what it
// means: inside strings, every character Classify does not call Safe (C0
// and C1 controls, DEL, bidirectional controls, line separators, invisible
// characters) becomes a JSON \uXXXX escape and invalid UTF-8 becomes
// \ufffd; between tokens a carriage return becomes a space (newlines and
// tabs stay). What cannot be part of valid JSON outside a string (other
// controls, invalid UTF-8, unsafe characters) is escaped as Sanitize does.
// Valid JSON stays valid and decodes to the same values (invalid UTF-8 to
// U+FFFD, as encoding/json decodes it). When nothing needs a change, b
// itself is returned, without copying.
func TerminalJSON(b []byte) []byte {
	out, changed := appendTerminalJSON(nil, b)
	if !changed {
		return b
	}
	return out
}

// AppendTerminalJSON appends TerminalJSON(b) to dst and returns the
// extended buffer.
func AppendTerminalJSON(dst, b []byte) []byte {
	out, changed := appendTerminalJSON(dst, b)
	if !changed {
		return append(dst, b...)
	}
	return out
}

var replacementEsc = []byte(`\ufffd`)

// appendTerminalJSON appends b made safe to dst, and reports whether that
// changed anything; if not, dst is returned as it was.
func appendTerminalJSON(dst, b []byte) ([]byte, bool) {
	changed := false
	w := 0 // b[:w] is in dst
	put := func(i, skip int, esc ...byte) {
		if !changed {
			changed = true
			dst = append(dst, b[:i]...)
		} else {
			dst = append(dst, b[w:i]...)
		}
		dst = append(dst, esc...)
		w = i + skip
	}
	var esc [12]byte
	inStr := false
	var prev rune // for Classify: the last rune kept as it is
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			prev = rune(c)
			switch {
			case c == '"':
				inStr = !inStr
			case c == '\\' && inStr:
				if i+1 < len(b) && textsafe.SafeByte(b[i+1]) {
					i++ // the escaped character
				}
			case textsafe.SafeByte(c):
			case inStr:
				prev = 0
				if e := shortEscape[c]; e != 0 {
					put(i, 1, '\\', e)
				} else {
					put(i, 1, '\\', 'u', '0', '0', textsafe.HexDigits[c>>4], textsafe.HexDigits[c&15])
				}
			case c == '\n' || c == '\t':
			case c == '\r':
				put(i, 1, ' ')
			default:
				prev = 0
				put(i, 1, '\\', 'x', textsafe.HexDigits[c>>4], textsafe.HexDigits[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case textsafe.AlwaysSafe(r):
			prev = r
		case r == utf8.RuneError && size == 1:
			prev = 0
			if inStr {
				put(i, 1, replacementEsc...)
			} else {
				put(i, 1, '\\', 'x', textsafe.HexDigits[c>>4], textsafe.HexDigits[c&15])
			}
		case textsafe.Classify(prev, r) != textsafe.Safe:
			prev = 0
			if inStr {
				put(i, size, appendJSONEscape(esc[:0], r)...)
			} else {
				put(i, size, textsafe.AppendEscape(esc[:0], r)...)
			}
		default:
			prev = r
		}
		i += size
	}
	if changed {
		dst = append(dst, b[w:]...)
	}
	return dst, changed
}
