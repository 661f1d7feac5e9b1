package textsafe

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// firstUnsafe returns the byte offset of the first thing in s a terminal
// must not get as it is (a control, invalid UTF-8, a rune Classify does
// not call Safe after the rune before it), or -1. With multiline, newlines
// and tabs are allowed.
func firstUnsafe(s string, multiline bool) int {
	var prev rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return i
		case multiline && (r == '\n' || r == '\t'):
		case Classify(prev, r) != Safe:
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
		t.Errorf("%s: %U (%v) at byte %d reaches the terminal: %q", what, r, Classify(0, r), i, s)
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		r    rune
		want Class
	}{
		{'a', Safe}, {' ', Safe}, {'~', Safe}, {0, C0}, {'\n', C0}, {'\t', C0}, {0x1b, C0}, {0x7f, DEL},
		{0x80, C1}, {0x9b, C1}, {0x9c, C1}, {0x9d, C1}, {0x9f, C1}, {0xa0, Safe}, {'é', Safe},
		{0x061c, Bidi}, {0x200e, Bidi}, {0x200f, Bidi}, {0x202a, Bidi}, {0x202e, Bidi}, {0x2066, Bidi}, {0x2069, Bidi},
		{0x2028, Separator}, {0x2029, Separator},
		{0x00ad, Invisible}, {0x034f, Invisible}, {0x115f, Invisible}, {0x1160, Invisible}, {0x17b4, Invisible},
		{0x180e, Invisible}, {0x200b, Invisible}, {0x2060, Invisible}, {0x2061, Invisible}, {0x2064, Invisible},
		{0x206a, Invisible}, {0x206f, Invisible}, {0x3164, Invisible}, {0xfeff, Invisible}, {0xffa0, Invisible},
		{0xfff9, Invisible}, {0xfffb, Invisible}, {0x1d173, Invisible}, {0xe0001, Invisible}, {0xe0041, Invisible},
		{0xe007f, Invisible}, {0xe0100, Invisible}, // a selector at the start
		{0x200c, Invisible}, {0x200d, Invisible}, {0xfe0f, Invisible},
		{0x0600, Safe}, {0x06dd, Safe}, {0x110bd, Safe}, // number signs: visible
		{'日', Safe}, {'🐿', Safe}, {0xfffd, Safe}, {0x10ffff, Safe}, {0x2010, Safe}, {0x3000, Safe},
	}
	for _, c := range cases {
		if got := Classify(0, c.r); got != c.want {
			t.Errorf("Classify(0, %U) = %v, want %v", c.r, got, c.want)
		}
	}
}

// TestClassifyEveryFormatCharacter holds Classify to the Unicode tables Go
// knows: every format character (Cf) is escaped except the few that print
// a visible sign, and every default-ignorable code point is escaped.
func TestClassifyEveryFormatCharacter(t *testing.T) {
	visible := map[rune]bool{0x0600: true, 0x0601: true, 0x0602: true, 0x0603: true, 0x0604: true, 0x0605: true,
		0x06dd: true, 0x070f: true, 0x0890: true, 0x0891: true, 0x08e2: true, 0x110bd: true, 0x110cd: true}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.Is(unicode.Cf, r) {
			continue
		}
		got := Classify(0, r)
		if visible[r] != (got == Safe) {
			t.Errorf("Classify(0, %U) = %v (format character; visible sign: %v)", r, got, visible[r])
		}
		if got != Safe {
			// Wherever it stands.
			if c := Classify('a', r); c == Safe {
				t.Errorf("Classify('a', %U) = Safe", r)
			}
		}
	}
	// Default_Ignorable_Code_Point (DerivedCoreProperties.txt), less what
	// Cf covers above.
	for _, rg := range [][2]rune{{0x034f, 0x034f}, {0x115f, 0x1160}, {0x17b4, 0x17b5}, {0x180b, 0x180f},
		{0x2065, 0x2065}, {0x3164, 0x3164}, {0xfe00, 0xfe0f}, {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0xe0000, 0xe0fff}} {
		for r := rg[0]; r <= rg[1]; r++ {
			if c := Classify('a', r); c == Safe {
				t.Errorf("Classify('a', %U) = Safe: a default-ignorable code point after ASCII", r)
			}
		}
	}
}

func TestClassifyJoinersAndSelectors(t *testing.T) {
	kept := []string{
		"👩\u200d💻",        // ZWJ sequence
		"❤\ufe0f\u200d🔥",  // selector then joiner
		"❤\ufe0f",         // emoji presentation
		"می\u200cخواهم",   // ZWNJ in Persian
		"葛\U000e0100",     // ideographic variation sequence
		"ᠠ\u180b",         // Mongolian free variation selector
		"👨\u200d👩\u200d👧", // family
	}
	for _, s := range kept {
		if got := Sanitize(s); got != s {
			t.Errorf("Sanitize(%q) = %q, want it kept", s, got)
		}
	}
	escaped := map[string]string{
		"ad\u200dmin":           `ad\u200dmin`,
		"\u200dx":               `\u200dx`,
		"é\u200d\u200d":         "é\u200d" + `\u200d`,
		"😀\ufe00\ufe01":         "😀\ufe00" + `\ufe01`,
		"😀\ufe0f\u200d\ufe0f":   "😀\ufe0f\u200d" + `\ufe0f`,
		"a\ufe0f":               `a\ufe0f`,
		"\u200b\u200d":          `\u200b\u200d`,
		"x\U000e0100":           `x\U000e0100`,
		"🏴\U000e0067\U000e007f": `🏴\U000e0067\U000e007f`,
	}
	for in, want := range escaped {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSanitizeEveryClass(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a\u2060b", `a\u2060b`},
		{"\u3164name", `\u3164name`},
		{"\u115f\u1160", `\u115f\u1160`},
		{"\ufeffbom", `\ufeffbom`},
		{"x\u00ady", `x\u00ady`},
		{"line\u2028sep\u2029", `line\u2028sep\u2029`},
		{"tag\U000e0041\U000e0042", `tag\U000e0041\U000e0042`},
		{"ok\u061c", `ok\u061c`},
		{"\u009d8;;x\u009c", `\u009d8;;x\u009c`},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := SanitizeMultiline(c.in); got != c.want {
			t.Errorf("SanitizeMultiline(%q) = %q, want %q", c.in, got, c.want)
		}
		assertNoUnsafe(t, "Sanitize", Sanitize(c.in), false)
	}
}

// classifyRef is Classify written plainly, one range after another, to
// check the ordered-for-speed one against.
func classifyRef(prev, r rune) Class {
	ctx := func(mayFollow func(rune) bool) Class {
		if prev >= 0xa0 && mayFollow(prev) {
			return Safe
		}
		return Invisible
	}
	switch {
	case r < 0x20:
		return C0
	case r == 0x7f:
		return DEL
	case r >= 0x80 && r <= 0x9f:
		return C1
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return Bidi
	case r == 0x2028, r == 0x2029:
		return Separator
	case r == 0x200c, r == 0x200d:
		return ctx(joinerMayFollow)
	case r >= 0x180b && r <= 0x180d, r == 0x180f, r >= 0xfe00 && r <= 0xfe0f, r >= 0xe0100 && r <= 0xe01ef:
		return ctx(selectorMayFollow)
	case r == 0x00ad, r == 0x034f, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e,
		r == 0x200b, r >= 0x2060 && r <= 0x206f, r == 0x3164, r == 0xfeff, r == 0xffa0, r >= 0xfff0 && r <= 0xfffb,
		r >= 0x13430 && r <= 0x1343f, r >= 0x1bca0 && r <= 0x1bca3, r >= 0x1d173 && r <= 0x1d17a, r >= 0xe0000 && r <= 0xe0fff:
		return Invisible
	}
	return Safe
}

func TestClassifyMatchesReference(t *testing.T) {
	for _, prev := range []rune{0, 'a', 'é', '日', 0x200d, 0xfe0f, 0x1f600} {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if got, want := Classify(prev, r), classifyRef(prev, r); got != want {
				t.Fatalf("Classify(%U, %U) = %v, want %v", prev, r, got, want)
			}
			if AlwaysSafe(r) && classifyRef(prev, r) != Safe {
				t.Fatalf("AlwaysSafe(%U) but it is %v after %U", r, classifyRef(prev, r), prev)
			}
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	text := []rune("héllo 日本語 🐿 grüße ✓ Привет مرحبا 👩\u200d💻 ❤\ufe0f")
	for b.Loop() {
		prev := rune(0)
		for _, r := range text {
			if Classify(prev, r) == Safe {
				prev = r
			} else {
				prev = 0
			}
		}
	}
}
