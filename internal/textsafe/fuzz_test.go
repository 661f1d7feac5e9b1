package textsafe

import (
	"testing"
	"unicode/utf8"
)

// checkSafe fails if s holds invalid UTF-8 or a C0, DEL or C1 control
// (but for newlines and tabs with multiline).
func checkSafe(t *testing.T, what string, s []byte, multiline bool) {
	t.Helper()
	if !utf8.Valid(s) {
		t.Fatalf("%s: invalid UTF-8 in output %q", what, s)
	}
	for _, r := range string(s) {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("%s: control %U in output %q", what, r, s)
		}
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2J\x1b[H", "\x1b]8;;http://x/\x1b\\y\x1b]8;;\x1b\\",
		"\x1b]0;title\x07", "\x9b31m", "\u009b31m", "a\nb\tc\r", "\xff\xfe", "日本 ✓", "\x00\x7f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		one := Sanitize(s)
		checkSafe(t, "Sanitize", []byte(one), false)
		ml := SanitizeMultiline(s)
		checkSafe(t, "SanitizeMultiline", []byte(ml), true)
		if Sanitize(one) != one || SanitizeMultiline(ml) != ml {
			t.Fatalf("not idempotent: %q", s)
		}
		if i := firstUnsafe(one, false); i >= 0 {
			t.Fatalf("Sanitize left an unsafe character at %d: %q", i, one)
		}
		if i := firstUnsafe(ml, true); i >= 0 {
			t.Fatalf("SanitizeMultiline left an unsafe character at %d: %q", i, ml)
		}
		if firstUnsafe(s, false) < 0 && one != s {
			t.Fatalf("clean text changed: %q -> %q", s, one)
		}
		if IsSafe(s, false) != (one == s) || IsSafe(s, true) != (ml == s) {
			t.Fatalf("IsSafe disagrees with Sanitize for %q", s)
		}
	})
}
