package textsafe

// Class is what kind of character a rune is, for a terminal: Safe runes
// are shown as they are; every other class is escaped wherever peer text
// reaches a terminal (Sanitize here; render's JSON printer with
// Options.Terminal and render.TerminalJSON).
type Class uint8

// The classes of characters that are escaped before a terminal.
const (
	// Safe is shown as it is.
	Safe Class = iota
	// C0 is a C0 control, U+0000–U+001F (newline and tab included: the
	// caller decides where they may stay).
	C0
	// DEL is U+007F.
	DEL
	// C1 is a C1 control, U+0080–U+009F (U+009B is CSI, U+009D OSC, U+009C ST).
	C1
	// Bidi is a bidirectional control: U+061C, U+200E, U+200F,
	// U+202A–U+202E and U+2066–U+2069. They reorder the text around them.
	Bidi
	// Separator is U+2028 LINE SEPARATOR or U+2029 PARAGRAPH SEPARATOR.
	Separator
	// Invisible is a character that shows nothing, or nothing of its own,
	// and so hides text or makes two texts look alike: every Unicode format
	// character (Cf) that is not Bidi (zero-width space U+200B, word joiner
	// and invisible operators U+2060–U+2064, U+206A–U+206F, U+FEFF, U+180E,
	// soft hyphen U+00AD, interlinear annotation U+FFF9–U+FFFB, tag
	// characters U+E0000–U+E007F, ...), the other default-ignorable code
	// points (U+034F, U+17B4, U+17B5, U+FFF0–U+FFF8, U+E0000–U+E0FFF) and
	// the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0. Two exceptions,
	// see Classify: the Cf characters that print a visible sign (the Arabic
	// number signs U+0600–U+0605, U+06DD, U+070F, U+0890, U+0891, U+08E2 and
	// the Kaithi number signs U+110BD, U+110CD) are Safe; joiners and
	// variation selectors are Safe where they modify the character before.
	Invisible
)

var classNames = [...]string{"safe", "C0 control", "DEL", "C1 control", "bidi control", "line separator", "invisible"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Classify says what kind of character r is, given prev, the character
// written just before it (0 at the start of the text and after anything
// that was escaped).
//
// Zero-width non-joiner and joiner (U+200C, U+200D) and the variation
// selectors (U+FE00–U+FE0F, U+E0100–U+E01EF, the Mongolian U+180B–U+180D and
// U+180F) are needed by scripts and emoji (👩‍💻, ❤️, ي‌ه): they are Safe
// right after a non-ASCII character written as it is; a selector not after
// a selector or a joiner, a joiner not after a joiner (runs of them carry
// hidden data, not meaning). After ASCII, at the start or after an escape
// they are Invisible, so "ad\u200dmin" does not pass for "admin".
func Classify(prev, r rune) Class {
	// Ordered for speed: ASCII, then the big blocks with nothing to escape
	// (most scripts, CJK, emoji) are found in a few comparisons.
	if r < 0xa0 {
		switch {
		case r < 0x20:
			return C0
		case r < 0x7f:
			return Safe
		case r == 0x7f:
			return DEL
		}
		return C1
	}
	if r < 0x2000 {
		switch {
		case r < 0x115f:
			switch r {
			case 0x00ad, 0x034f:
				return Invisible
			case 0x061c:
				return Bidi
			}
			return Safe
		case r <= 0x1160, r == 0x17b4, r == 0x17b5, r == 0x180e:
			return Invisible
		case r >= 0x180b && r <= 0x180f:
			return contextual(prev, selectorMayFollow)
		}
		return Safe
	}
	if r <= 0x206f {
		switch {
		case r < 0x200b:
			return Safe
		case r == 0x200c || r == 0x200d:
			return contextual(prev, joinerMayFollow)
		case r == 0x200e || r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return Bidi
		case r == 0x2028 || r == 0x2029:
			return Separator
		case r == 0x200b, r >= 0x2060:
			return Invisible
		}
		return Safe
	}
	if r < 0xfe00 {
		if r == 0x3164 {
			return Invisible
		}
		return Safe
	}
	if r < 0x10000 {
		switch {
		case r <= 0xfe0f:
			return contextual(prev, selectorMayFollow)
		case r == 0xfeff, r == 0xffa0, r >= 0xfff0 && r <= 0xfffb:
			return Invisible
		}
		return Safe
	}
	if r < 0xe0000 {
		switch {
		case r > 0x1d17a, r < 0x13430:
			return Safe
		case r <= 0x1343f, r >= 0x1bca0 && r <= 0x1bca3, r >= 0x1d173:
			return Invisible
		}
		return Safe
	}
	switch {
	case r >= 0xe0100 && r <= 0xe01ef:
		return contextual(prev, selectorMayFollow)
	case r <= 0xe0fff:
		return Invisible
	}
	return Safe
}

// AlwaysSafe is an inlinable shortcut for the common case: r is Safe
// whatever comes before it, so Classify need not be asked (Latin-1 letters, Latin Extended, CJK, ...).
func AlwaysSafe(r rune) bool {
	return (r >= 0xa0 && r < 0x300 && r != 0xad) || (r >= 0x2070 && r < 0xfe00 && r != 0x3164)
}

// contextual classifies a joiner or variation selector after prev.
func contextual(prev rune, mayFollow func(rune) bool) Class {
	if prev >= 0xa0 && mayFollow(prev) {
		return Safe
	}
	return Invisible
}

// selectorMayFollow: a variation selector modifies a character that is
// neither a selector nor a joiner.
func selectorMayFollow(prev rune) bool { return !isJoiner(prev) && !isSelector(prev) }

// joinerMayFollow: a joiner follows a character or its variation selector
// (❤️‍🔥 is U+2764 U+FE0F U+200D U+1F525), never another joiner.
func joinerMayFollow(prev rune) bool { return !isJoiner(prev) }

func isJoiner(r rune) bool { return r == 0x200c || r == 0x200d }

func isSelector(r rune) bool {
	return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef) || (r >= 0x180b && r <= 0x180f && r != 0x180e)
}
