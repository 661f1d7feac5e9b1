package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

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

func TestSanitizeAttacks(t *testing.T) {
	cases := []struct{ name, in, want, wantML string }{
		{"osc52 clipboard", "x\x1b]52;c;cm0gLXJmIH4=\x07y", `x\x1b]52;c;cm0gLXJmIH4=\x07y`, ""},
		{"osc52 st", "\x1b]52;c;AAAA\x1b\\", `\x1b]52;c;AAAA\x1b\`, ""},
		{"csi cursor", "ok\x1b[2J\x1b[H\x1b[10;10Hfake", `ok\x1b[2J\x1b[H\x1b[10;10Hfake`, ""},
		{"osc8 link", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", `\x1b]8;;http://evil/\x1b\click\x1b]8;;\x1b\`, ""},
		{"title", "\x1b]0;owned\x07\x1b]2;t\x9c", `\x1b]0;owned\x07\x1b]2;t\x9c`, ""},
		{"8-bit csi raw byte", "a\x9b31mb", `a\x9b31mb`, ""},
		{"8-bit csi as UTF-8 C1", "a\u009b31mb\u0090q\u009c", `a\u009b31mb\u0090q\u009c`, ""},
		{"newline tab cr", "a\nb\tc\rd", `a\nb\tc\rd`, "a\nb\tc\\rd"},
		{"del nul bel bs", "\x00\x07\x08\x7f", `\x00\x07\x08\x7f`, ""},
		{"invalid utf8", "\xff\xfe\xc3(\xe2\x82", `\xff\xfe\xc3(\xe2\x82`, ""},
		{"clean unicode kept", "grüße ✓ 日本 🐿 \\n", "grüße ✓ 日本 🐿 \\n", ""},
		{"bidi override", "evil\u202etxt.exe", `evil\u202etxt.exe`, ""},
		{"bidi isolates and zero width", "a\u2066b\u2069c\u200bd\ufeff", `a\u2066b\u2069c\u200bd\ufeff`, ""},
		{"joiners kept", "👩\u200d💻", "👩\u200d💻", ""},
	}
	for _, c := range cases {
		got := Sanitize(c.in)
		if got != c.want {
			t.Errorf("%s: Sanitize = %q, want %q", c.name, got, c.want)
		}
		assertTerminalSafe(t, got, false)
		ml := SanitizeMultiline(c.in)
		want := c.wantML
		if want == "" {
			want = c.want
		}
		if ml != want {
			t.Errorf("%s: SanitizeMultiline = %q, want %q", c.name, ml, want)
		}
		assertTerminalSafe(t, ml, true)
		if string(AppendSanitized([]byte("p:"), []byte(c.in), false)) != "p:"+c.want {
			t.Errorf("%s: AppendSanitized differs", c.name)
		}
	}
}

func TestSanitizeNoCopyWhenClean(t *testing.T) {
	s := strings.Repeat("clean ✓ ", 100)
	if n := testing.AllocsPerRun(100, func() { _ = Sanitize(s) }); n != 0 {
		t.Errorf("%v allocs for clean input", n)
	}
}
