package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/themes"
)

func TestHighlightLineClasses(t *testing.T) {
	th := themes.Dark()
	h := NewHighlighter(&th.JSON, colorprofile.TrueColor)
	s := h.sgr
	cases := map[string]string{
		`  "key": "value",`:          "  " + s[clKey] + `"key"` + s[clPunct] + ": " + s[clString] + `"value"` + s[clPunct] + "," + sgrReset,
		`    "a\"b": -1.5e3`:         "    " + s[clKey] + `"a\"b"` + s[clPunct] + ": " + s[clNumber] + "-1.5e3" + sgrReset,
		`  true, false, null`:        "  " + s[clTrue] + "true" + s[clPunct] + ", " + s[clFalse] + "false" + s[clPunct] + ", " + s[clNull] + "null" + sgrReset,
		`  "just a string"`:          "  " + s[clString] + `"just a string"` + sgrReset,
		`}`:                          s[clPunct] + "}" + sgrReset,
		``:                           ``,
		"  \"x\x1b[2J\": bogus \x9b": "  " + s[clKey] + `"x\x1b[2J"` + s[clPunct] + ": " + s[clError] + "bogus " + `\x9b` + sgrReset,
	}
	for in, want := range cases {
		if got := h.Line(in); got != want {
			t.Errorf("Line(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	if got := HighlightLine(`"a"`, nil, colorprofile.TrueColor); got != `"a"` {
		t.Errorf("nil colours: %q", got)
	}
	if got := HighlightLine("\x1b[31m", &th.JSON, colorprofile.NoTTY); got != `\x1b[31m` {
		t.Errorf("no-colour line not sanitized: %q", got)
	}
}

// Highlighting each line of Format's plain output gives, once colours are
// stripped, the same text, and colours keys and strings like the streaming
// printer does.
func TestHighlightLinesMatchPrinter(t *testing.T) {
	th := themes.Light()
	h := NewHighlighter(&th.JSON, colorprofile.ANSI256)
	in := []byte(`{"a":{"b":[1,"two",{"c:d":"e: f"}],"g":true},"h":null}`)
	plain, err := Format(in, Options{Indent: 2})
	if err != nil {
		t.Fatal(err)
	}
	coloured, err := Format(in, Options{Indent: 2, Highlighter: h})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(plain), "\n"), "\n") {
		got := h.Line(l)
		if stripSGR(got) != l {
			t.Errorf("line %q changed: %q", l, stripSGR(got))
		}
		lines = append(lines, got)
	}
	// Same colours per token, though resets fall at line ends.
	a := strings.ReplaceAll(strings.Join(lines, "\n"), sgrReset, "")
	b := strings.ReplaceAll(strings.TrimSuffix(string(coloured), "\n"), sgrReset, "")
	if tokens(a) != tokens(b) {
		t.Errorf("per-line colours differ:\n%q\n%q", a, b)
	}
}

// tokens reduces a coloured text to the sequence of (colour, non-space text).
func tokens(s string) string {
	var out bytes.Buffer
	last, written := "", ""
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			j := strings.IndexByte(s[i:], 'm') + i + 1
			last = s[i:j]
			i = j
			continue
		}
		if s[i] != ' ' && s[i] != '\n' {
			if last != written {
				out.WriteString(last)
				written = last
			}
			out.WriteByte(s[i])
		}
		i++
	}
	return out.String()
}
