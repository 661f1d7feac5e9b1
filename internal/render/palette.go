package render

import (
	"image/color"
	"strconv"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/themes"
)

// class is the kind of a JSON token, for colouring.
type class uint8

const (
	clNone class = iota // whitespace; the terminal's default colours
	clKey
	clString
	clNumber
	clTrue
	clFalse
	clNull
	clPunct
	clError
	numClasses
)

const sgrReset = "\x1b[0m"

// Highlighter holds the precomputed SGR sequences of a JSON palette for one
// colour profile. A nil *Highlighter means plain output. It is immutable and
// safe for concurrent use; build it once per theme and profile.
type Highlighter struct {
	sgr [numClasses]string
	// canon maps each class to the first class with the same SGR sequence
	// (a theme often draws keys and punctuation alike): a printer tracks
	// the canonical class, so it never repeats the sequence in effect (the
	// key-colon pair of every member did, 4.9 MB of the 10 MB answer's
	// 35.7 MB coloured).
	canon [numClasses]class
}

// NewHighlighter compiles colours for a terminal of the given profile.
// It returns nil (plain output) when colors is nil or the profile has no
// colours (NoTTY, ASCII). Unknown is taken as TrueColor; colours are
// downsampled for ANSI256 and ANSI terminals.
func NewHighlighter(colors *themes.JSONColors, profile colorprofile.Profile) *Highlighter {
	if colors == nil || profile == colorprofile.NoTTY || profile == colorprofile.ASCII {
		return nil
	}
	if profile == colorprofile.Unknown {
		profile = colorprofile.TrueColor
	}
	h := &Highlighter{}
	h.sgr[clNone] = sgrReset
	for cl, ts := range map[class]themes.TokenStyle{
		clKey: colors.Key, clString: colors.String, clNumber: colors.Number,
		clTrue: colors.True, clFalse: colors.False, clNull: colors.Null,
		clPunct: colors.Punct, clError: colors.Error,
	} {
		h.sgr[cl] = sgrFor(ts, profile)
	}
	for c := range numClasses {
		h.canon[c] = c
		for d := range c {
			if h.sgr[d] == h.sgr[c] {
				h.canon[c] = d
				break
			}
		}
	}
	return h
}

// sgrFor builds one SGR sequence. It starts with 0 so that switching from
// any other token's style needs exactly one sequence.
func sgrFor(ts themes.TokenStyle, profile colorprofile.Profile) string {
	b := []byte("\x1b[0")
	if ts.Bold {
		b = append(b, ";1"...)
	}
	if ts.Italic {
		b = append(b, ";3"...)
	}
	if ts.Underline {
		b = append(b, ";4"...)
	}
	b = appendColour(b, ts.Fg, profile, false)
	b = appendColour(b, ts.Bg, profile, true)
	return string(append(b, 'm'))
}

func appendColour(b []byte, c color.Color, profile colorprofile.Profile, bg bool) []byte {
	if c == nil {
		return b
	}
	c = profile.Convert(c)
	if c == nil {
		return b
	}
	switch v := c.(type) {
	case ansi.BasicColor:
		n := int(v)
		base := 30
		if bg {
			base = 40
		}
		if n >= 8 {
			base += 60
			n -= 8
		}
		return strconv.AppendInt(append(b, ';'), int64(base+n), 10)
	case ansi.IndexedColor:
		if bg {
			b = append(b, ";48;5;"...)
		} else {
			b = append(b, ";38;5;"...)
		}
		return strconv.AppendInt(b, int64(v), 10)
	default:
		r, g, bl, _ := c.RGBA()
		if bg {
			b = append(b, ";48;2;"...)
		} else {
			b = append(b, ";38;2;"...)
		}
		b = strconv.AppendInt(b, int64(r>>8), 10)
		b = strconv.AppendInt(append(b, ';'), int64(g>>8), 10)
		return strconv.AppendInt(append(b, ';'), int64(bl>>8), 10)
	}
}
