package textsafe

import (
	"unicode/utf8"
	"unsafe"
)

// safeByte[b] is true for bytes that can go to a terminal as they are:
// printable ASCII. Everything else takes the slow path. Read only.
var safeByte = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = true
	}
	return t
}()

// SafeByte reports whether the byte c can go to a terminal as it is:
// printable ASCII. Other bytes are controls or start a multi-byte rune
// that must be decoded and classified.
func SafeByte(c byte) bool { return safeByte[c] }

// HexDigits are the lower-case hexadecimal digits the escapes are written
// with.
const HexDigits = "0123456789abcdef"

// Sanitize makes peer text safe to put on one line of a terminal. Every
// character Classify does not call Safe, and every byte of invalid UTF-8,
// is replaced by a visible escape: \n \t \r, \xNN for other C0 controls,
// DEL and invalid bytes, \u00NN for C1 controls, \uNNNN (\UNNNNNNNN above
// U+FFFF) for bidirectional controls, line separators and invisible
// characters (which make text read as something else). Other text,
// backslashes included, is kept.
// A string that needs no change is returned as it is, without copying.
func Sanitize(s string) string {
	if IsSafe(s, false) {
		return s
	}
	return string(AppendSanitizedString(make([]byte, 0, len(s)+16), s, false))
}

// SanitizeMultiline is Sanitize for multi-line text: newlines and tabs are
// kept, every other control is escaped.
func SanitizeMultiline(s string) string {
	if IsSafe(s, true) {
		return s
	}
	return string(AppendSanitizedString(make([]byte, 0, len(s)+16), s, true))
}

// AppendSanitized appends the sanitized form of s to dst (see Sanitize and
// SanitizeMultiline) and returns the extended buffer.
func AppendSanitized(dst []byte, s []byte, multiline bool) []byte {
	if len(s) == 0 {
		return dst
	}
	return AppendSanitizedString(dst, unsafe.String(&s[0], len(s)), multiline)
}

// IsSafe reports whether s needs no escape: Sanitize (with multiline,
// SanitizeMultiline) would return it unchanged.
func IsSafe(s string, multiline bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if safeByte[c] || (multiline && (c == '\n' || c == '\t')) {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			return false
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !AlwaysSafe(r) && ((r == utf8.RuneError && size == 1) || Classify(lastRuneInString(s[:i]), r) != Safe) {
			return false
		}
		i += size
	}
	return true
}

// lastRune is the last rune of b if it is not ASCII, else 0: the context
// Classify needs, taken from what was written before.
func LastRune(b []byte) rune {
	if n := len(b); n > 0 && b[n-1] >= utf8.RuneSelf {
		r, _ := utf8.DecodeLastRune(b)
		return r
	}
	return 0
}

func lastRuneInString(s string) rune {
	if n := len(s); n > 0 && s[n-1] >= utf8.RuneSelf {
		r, _ := utf8.DecodeLastRuneInString(s)
		return r
	}
	return 0
}

// AppendSanitizedString is AppendSanitized for a string.
func AppendSanitizedString(dst []byte, s string, multiline bool) []byte {
	for i := 0; i < len(s); {
		start := i
		for i < len(s) && safeByte[s[i]] {
			i++
		}
		dst = append(dst, s[start:i]...)
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case multiline && (c == '\n' || c == '\t'):
				dst = append(dst, c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			default:
				dst = append(dst, '\\', 'x', HexDigits[c>>4], HexDigits[c&15])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case AlwaysSafe(r):
			dst = append(dst, s[i:i+size]...)
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', HexDigits[c>>4], HexDigits[c&15])
		case Classify(LastRune(dst), r) != Safe:
			// The context is what was written before: an escape ends
			// in ASCII.
			dst = AppendEscape(dst, r)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

// AppendEscape appends the visible escape of a non-ASCII rune:
// \uNNNN, or \UNNNNNNNN above U+FFFF.
func AppendEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		return append(dst, '\\', 'U', '0', '0', HexDigits[r>>20&15], HexDigits[r>>16&15], HexDigits[r>>12&15], HexDigits[r>>8&15], HexDigits[r>>4&15], HexDigits[r&15])
	}
	return append(dst, '\\', 'u', HexDigits[r>>12&15], HexDigits[r>>8&15], HexDigits[r>>4&15], HexDigits[r&15])
}
