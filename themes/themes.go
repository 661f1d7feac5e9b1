// Package themes holds primalscope's palettes: the UI colours of every pane,
// the JSON token colours and the chroma style used for anything that is not
// JSON. Built-in themes are returned fresh by functions (there is no global
// mutable state); user themes are loaded from TOML files.
//
// Colours are image/color.Color values, the type lipgloss v2 uses, so they
// can be handed to lipgloss.Style methods directly. A nil colour means "the
// terminal's default".
package themes

import (
	"errors"
	"fmt"
	"image/color"

	"charm.land/lipgloss/v2"
)

// TokenStyle is how one kind of JSON token is drawn.
type TokenStyle struct {
	Fg        color.Color // nil: terminal default
	Bg        color.Color // nil: terminal default
	Bold      bool
	Italic    bool
	Underline bool
}

// IsZero reports whether the style changes nothing (plain text).
func (s TokenStyle) IsZero() bool {
	return s.Fg == nil && s.Bg == nil && !s.Bold && !s.Italic && !s.Underline
}

// JSONColors are the styles of the JSON token kinds.
type JSONColors struct {
	Key    TokenStyle // object member names
	String TokenStyle // string values
	Number TokenStyle
	True   TokenStyle
	False  TokenStyle
	Null   TokenStyle
	Punct  TokenStyle // { } [ ] , :
	Error  TokenStyle // text after a parse error, invalid tokens
}

// UIColors are the colours of the TUI's chrome. Every field is set in the
// built-in themes; Bg is nil (the terminal's own background is kept).
type UIColors struct {
	Fg          color.Color // normal text
	Bg          color.Color // pane background; nil keeps the terminal's
	Muted       color.Color // secondary text: latencies, timestamps, hints
	Accent      color.Color // names, highlights, the cursor in lists
	Title       color.Color // pane titles
	Border      color.Color // unfocused pane border
	FocusBorder color.Color // focused pane border
	SelectionFg color.Color // selected row text
	SelectionBg color.Color // selected row background
	StatusFg    color.Color // status bar text
	StatusBg    color.Color // status bar background
	HelpKey     color.Color // key names in help and the status bar
	HelpDesc    color.Color // what the key does
	OK          color.Color // healthy, live, success
	Warn        color.Color // stale, degraded, slow
	Error       color.Color // down, failed, JSON-RPC error
	Info        color.Color // informational badges
	Heartbeat   color.Color // heartbeat lines in the events pane
	Event       color.Color // {type,data} events
	Notify      color.Color // JSON-RPC notifications
	Sent        color.Color // trace: frames we sent
	Received    color.Color // trace: frames we received
	Match       color.Color // search / filter matches
}

// Theme is a complete palette.
type Theme struct {
	Name        string
	Dark        bool   // meant for a dark terminal background
	ChromaStyle string // name of the chroma/v2 style for non-JSON highlighting
	UI          UIColors
	JSON        JSONColors
}

// Chroma returns the theme's chroma style (chroma's fallback style if the
// name is unknown). The returned style is shared and must not be modified.
func (t Theme) Chroma() *ChromaStyle { return chromaStyle(t.ChromaStyle) }

// Names of the built-in themes.
const (
	DarkName         = "dark"
	LightName        = "light"
	HighContrastName = "high-contrast"
)

// ErrUnknownTheme is returned (wrapped) by Lookup for a name that is not a theme.
var ErrUnknownTheme = errors.New("unknown theme")

// Names returns the built-in theme names, the default first.
func Names() []string { return []string{DarkName, LightName, HighContrastName} }

// Lookup returns a fresh copy of the built-in theme with the given name.
func Lookup(name string) (Theme, error) {
	switch name {
	case DarkName, "":
		return Dark(), nil
	case LightName:
		return Light(), nil
	case HighContrastName:
		return HighContrast(), nil
	}
	return Theme{}, fmt.Errorf("theme %q: %w (built-in: %v)", name, ErrUnknownTheme, Names())
}

// Default returns the theme that suits the terminal's background.
func Default(darkBackground bool) Theme {
	if darkBackground {
		return Dark()
	}
	return Light()
}

func hex(s string) color.Color { return lipgloss.Color(s) }

// Dark is the default theme: Catppuccin Mocha colours, JSON colours derived
// from chroma's catppuccin-mocha style.
func Dark() Theme {
	t := Theme{
		Name: DarkName, Dark: true, ChromaStyle: "catppuccin-mocha",
		UI: UIColors{
			Fg: hex("#cdd6f4"), Muted: hex("#7f849c"), Accent: hex("#89b4fa"),
			Title: hex("#cdd6f4"), Border: hex("#45475a"), FocusBorder: hex("#cba6f7"),
			SelectionFg: hex("#cdd6f4"), SelectionBg: hex("#45475a"),
			StatusFg: hex("#bac2de"), StatusBg: hex("#313244"),
			HelpKey: hex("#cba6f7"), HelpDesc: hex("#7f849c"),
			OK: hex("#a6e3a1"), Warn: hex("#f9e2af"), Error: hex("#f38ba8"), Info: hex("#89dceb"),
			Heartbeat: hex("#f5c2e7"), Event: hex("#94e2d5"), Notify: hex("#fab387"),
			Sent: hex("#89b4fa"), Received: hex("#a6e3a1"), Match: hex("#f9e2af"),
		},
	}
	t.JSON = JSONFromChroma(t.Chroma())
	return t
}

// Light is the theme for light backgrounds: Catppuccin Latte colours, JSON
// colours derived from chroma's catppuccin-latte style.
func Light() Theme {
	t := Theme{
		Name: LightName, Dark: false, ChromaStyle: "catppuccin-latte",
		UI: UIColors{
			Fg: hex("#4c4f69"), Muted: hex("#8c8fa1"), Accent: hex("#1e66f5"),
			Title: hex("#4c4f69"), Border: hex("#bcc0cc"), FocusBorder: hex("#8839ef"),
			SelectionFg: hex("#4c4f69"), SelectionBg: hex("#ccd0da"),
			StatusFg: hex("#5c5f77"), StatusBg: hex("#e6e9ef"),
			HelpKey: hex("#8839ef"), HelpDesc: hex("#8c8fa1"),
			OK: hex("#40a02b"), Warn: hex("#df8e1d"), Error: hex("#d20f39"), Info: hex("#04a5e5"),
			Heartbeat: hex("#ea76cb"), Event: hex("#179299"), Notify: hex("#fe640b"),
			Sent: hex("#1e66f5"), Received: hex("#40a02b"), Match: hex("#df8e1d"),
		},
	}
	t.JSON = JSONFromChroma(t.Chroma())
	return t
}

// HighContrast is a dark theme of saturated, bright colours for readability.
// Its JSON colours are set explicitly (chroma's hr_high_contrast style, used
// for other languages, colours too few JSON token kinds apart).
func HighContrast() Theme {
	return Theme{
		Name: HighContrastName, Dark: true, ChromaStyle: "hr_high_contrast",
		UI: UIColors{
			Fg: hex("#ffffff"), Muted: hex("#c0c0c0"), Accent: hex("#00ffff"),
			Title: hex("#ffffff"), Border: hex("#c0c0c0"), FocusBorder: hex("#ffff00"),
			SelectionFg: hex("#000000"), SelectionBg: hex("#ffff00"),
			StatusFg: hex("#000000"), StatusBg: hex("#ffffff"),
			HelpKey: hex("#ffff00"), HelpDesc: hex("#ffffff"),
			OK: hex("#00ff00"), Warn: hex("#ffff00"), Error: hex("#ff5f5f"), Info: hex("#00ffff"),
			Heartbeat: hex("#ff87ff"), Event: hex("#00ffff"), Notify: hex("#ffaf00"),
			Sent: hex("#5fafff"), Received: hex("#00ff00"), Match: hex("#ffff00"),
		},
		JSON: JSONColors{
			Key:    TokenStyle{Fg: hex("#00ffff"), Bold: true},
			String: TokenStyle{Fg: hex("#00ff00")},
			Number: TokenStyle{Fg: hex("#ffff00")},
			True:   TokenStyle{Fg: hex("#ff87ff")},
			False:  TokenStyle{Fg: hex("#ff87ff")},
			Null:   TokenStyle{Fg: hex("#c0c0c0"), Italic: true},
			Punct:  TokenStyle{Fg: hex("#ffffff")},
			Error:  TokenStyle{Fg: hex("#ffffff"), Bg: hex("#d70000"), Bold: true},
		},
	}
}

// JSONFromChroma derives JSON token styles from a chroma style: keys from
// NameTag (chroma's JSON lexer), else NameAttribute, Name or Keyword; strings
// from LiteralString; numbers from LiteralNumber; true, false and null from
// KeywordConstant; punctuation from Punctuation; errors from Error.
func JSONFromChroma(s *ChromaStyle) JSONColors {
	if s == nil {
		s = chromaStyle(chromaFallback)
	}
	key := s.entry(ttText)
	for _, tt := range []tokenType{ttNameTag, ttNameAttribute, ttName, ttKeyword} {
		if s.has(tt) && s.entry(tt).Colour.isSet() {
			key = s.entry(tt)
			break
		}
	}
	constant := s.entry(ttKeywordConstant)
	return JSONColors{
		Key:    fromEntry(key),
		String: fromEntry(s.entry(ttLiteralString)),
		Number: fromEntry(s.entry(ttLiteralNumber)),
		True:   fromEntry(constant),
		False:  fromEntry(constant),
		Null:   fromEntry(constant),
		Punct:  fromEntry(s.entry(ttPunctuation)),
		Error:  errorStyle(s.entry(ttError)),
	}
}

func errorStyle(e StyleEntry) TokenStyle {
	ts := fromEntry(e)
	if e.Background.isSet() {
		ts.Bg = rgbOf(e.Background)
	}
	return ts
}

// fromEntry converts one chroma style entry. The background is kept only
// for error tokens' sake: chroma sets a page background on Background,
// which is never copied here.
func fromEntry(e StyleEntry) TokenStyle {
	ts := TokenStyle{
		Bold:      e.Bold == yes,
		Italic:    e.Italic == yes,
		Underline: e.Underline == yes,
	}
	if e.Colour.isSet() {
		ts.Fg = rgbOf(e.Colour)
	}
	return ts
}

func rgbOf(c chromaColour) color.Color {
	return color.RGBA{R: c.red(), G: c.green(), B: c.blue(), A: 0xff}
}

// ChromaStyles lists the chroma style names a user theme may name.
func ChromaStyles() []string {
	return chromaNames()
}
