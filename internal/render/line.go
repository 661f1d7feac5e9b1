package render

import (
	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/themes"
)

// HighlightLine colours one line of pretty-printed JSON (as JSON or Format
// print it: every line starts outside a string). It is a convenience for
// NewHighlighter(colors, profile).Line(line); a TUI drawing many lines
// should build the Highlighter once.
func HighlightLine(line string, colors *themes.JSONColors, profile colorprofile.Profile) string {
	return NewHighlighter(colors, profile).Line(line)
}

// Line colours one line of pretty-printed JSON. A string followed by a colon
// is a member name. Control characters and invalid UTF-8 in the line are
// escaped as Sanitize does, so the result is safe for a terminal even if the
// line did not come from this package's printer. On a nil Highlighter it
// only sanitizes.
func (h *Highlighter) Line(line string) string {
	if h == nil {
		return Sanitize(line)
	}
	return string(h.AppendLine(make([]byte, 0, len(line)+64), line))
}

// AppendLine appends the coloured line to dst and returns the extended buffer.
func (h *Highlighter) AppendLine(dst []byte, s string) []byte {
	if h == nil {
		return textsafe.AppendSanitizedString(dst, s, false)
	}
	cur := clNone
	set := func(c class) {
		if c != cur {
			dst = append(dst, h.sgr[c]...)
			cur = c
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ':
			dst = append(dst, c)
			i++
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j < len(s) {
				j++ // closing quote
			} else {
				j = len(s)
			}
			k := j
			for k < len(s) && s[k] == ' ' {
				k++
			}
			if k < len(s) && s[k] == ':' {
				set(clKey)
			} else {
				set(clString)
			}
			dst = textsafe.AppendSanitizedString(dst, s[i:j], false)
			i = j
		case c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':':
			set(clPunct)
			dst = append(dst, c)
			i++
		case c == '-' || (c >= '0' && c <= '9'):
			j := i + 1
			for j < len(s) && isNumByte(s[j]) {
				j++
			}
			set(clNumber)
			dst = append(dst, s[i:j]...)
			i = j
		case c >= 'a' && c <= 'z':
			j := i + 1
			for j < len(s) && s[j] >= 'a' && s[j] <= 'z' {
				j++
			}
			switch s[i:j] {
			case "true":
				set(clTrue)
			case "false":
				set(clFalse)
			case "null":
				set(clNull)
			default:
				set(clError)
			}
			dst = append(dst, s[i:j]...)
			i = j
		default:
			// Anything else is not JSON: show it, escaped, as an error, up
			// to the next character that could start a token.
			j := i + 1
			for j < len(s) && !startsToken(s[j]) {
				j++
			}
			set(clError)
			dst = textsafe.AppendSanitizedString(dst, s[i:j], false)
			i = j
		}
	}
	if cur != clNone {
		dst = append(dst, sgrReset...)
	}
	return dst
}

func isNumByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func startsToken(c byte) bool {
	switch c {
	case ' ', '"', '{', '}', '[', ']', ',', ':':
		return true
	}
	return c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')
}
