package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/colorprofile"
)

// ColorChoice is the one decision about colour, shared by the command line
// and the TUI: never, only on a terminal, or always.
type ColorChoice int

// The outcomes of DecideColor.
const (
	ColorAuto   ColorChoice = iota // colour when the output is a colour terminal
	ColorNever                     // no colour at all
	ColorAlways                    // colour even into a pipe
)

// DecideColor applies primalscope's colour rules, in order:
//
//  1. --no-color means never, whatever else is set;
//  2. --color never means never, --color always means always: a flag the
//     user typed beats NO_COLOR (https://no-color.org: "user-level
//     configuration ... should override NO_COLOR");
//  3. --color auto (or unset): NO_COLOR set to anything non-empty means
//     never, else colour only on a terminal (decided per output by Profile, which
//     also honours CLICOLOR and CLICOLOR_FORCE).
//
// A mode other than auto, always or never is an error.
func DecideColor(mode string, noColor bool, getenv func(string) string) (ColorChoice, error) {
	var c ColorChoice
	switch mode {
	case "", "auto":
		c = ColorAuto
		if getenv != nil && getenv("NO_COLOR") != "" {
			c = ColorNever
		}
	case "never":
		c = ColorNever
	case "always":
		c = ColorAlways
	default:
		return ColorNever, fmt.Errorf("--color must be auto, always or never, not %q", mode)
	}
	if noColor {
		c = ColorNever
	}
	return c, nil
}

// Profile is the colour profile output to w gets under this choice. environ
// is the process environment (for TERM, COLORTERM); ColorAlways ignores
// NO_COLOR in it (the decision was already made) and gives at least 256
// colours; ColorAuto asks the terminal; ColorNever gives NoTTY.
func (c ColorChoice) Profile(w io.Writer, environ []string) colorprofile.Profile {
	switch c {
	case ColorNever:
		return colorprofile.NoTTY
	case ColorAlways:
		env := make([]string, 0, len(environ)+1)
		for _, kv := range environ {
			if !strings.HasPrefix(kv, "NO_COLOR=") {
				env = append(env, kv)
			}
		}
		p := colorprofile.Detect(w, append(env, "CLICOLOR_FORCE=1"))
		if p <= colorprofile.Ascii {
			p = colorprofile.ANSI256
		}
		return p
	}
	return colorprofile.Detect(w, environ)
}
