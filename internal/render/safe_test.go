package render

import (
	"testing"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// firstUnsafe returns the byte offset of the first thing in s a terminal
// must not get as it is (a control, invalid UTF-8, a rune textsafe.Classify
// does not call Safe after the rune before it), or -1. With multiline,
// newlines and tabs are allowed.
func firstUnsafe(s string, multiline bool) int {
	var prev rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i
		case multiline && (r == '\n' || r == '\t'):
		case textsafe.Classify(prev, r) != textsafe.Safe:
			return i
		}
		prev = r
		i += size
	}
	return -1
}

func assertNoUnsafe(t *testing.T, what, s string, multiline bool) {
	t.Helper()
	if i := firstUnsafe(s, multiline); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		t.Errorf("%s: %U (%v) at byte %d reaches the terminal: %q", what, r, textsafe.Classify(0, r), i, s)
	}
}

// assertTerminalSafe fails if s could change terminal state: any C0 control
// other than (if multiline) \n and \t, DEL, any C1 control, or invalid UTF-8.
func assertTerminalSafe(t *testing.T, s string, multiline bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Errorf("invalid UTF-8 in %q", s)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Errorf("control %U in %q", r, s)
			return
		}
	}
}

// TestSanitizeForwards: render's Sanitize family is textsafe's, and the
// highlighter escapes every class the same way.
func TestSanitizeForwards(t *testing.T) {
	for _, in := range []string{
		"x\x1b]52;c;AAAA\x07y", "a\nb\tc\r", "\xff\xfe", "evil\u202etxt", "a\u2060b", "\u3164name",
		"line\u2028sep", "tag\U000e0041", "ok\u061c", "\u009d8;;x\u009c", "grüße 👩\u200d💻",
	} {
		if got, want := Sanitize(in), textsafe.Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, textsafe says %q", in, got, want)
		}
		if got, want := SanitizeMultiline(in), textsafe.SanitizeMultiline(in); got != want {
			t.Errorf("SanitizeMultiline(%q) = %q, textsafe says %q", in, got, want)
		}
		if got := string(AppendSanitized([]byte("p:"), []byte(in), false)); got != "p:"+Sanitize(in) {
			t.Errorf("AppendSanitized(%q) = %q", in, got)
		}
		h := stripSGR(NewHighlighter(nil, 0).Line(`"` + in + `"`))
		if want := `"` + Sanitize(in) + `"`; h != want {
			t.Errorf("Line(%q) = %q, want %q", in, h, want)
		}
		assertNoUnsafe(t, "Line", h, false)
	}
}
