package themes

import (
	"errors"
	"image/color"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func rgb(c color.Color) [3]uint32 {
	r, g, b, _ := c.RGBA()
	return [3]uint32{r >> 8, g >> 8, b >> 8}
}

func TestBuiltinsComplete(t *testing.T) {
	for _, name := range Names() {
		th, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if th.Name != name {
			t.Errorf("Lookup(%q).Name = %q", name, th.Name)
		}
		if !chromaStyleExists(th.ChromaStyle) {
			t.Errorf("%s: chroma style %q does not exist", name, th.ChromaStyle)
		}
		v := reflect.ValueOf(th.UI)
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Name == "Bg" {
				continue
			}
			if v.Field(i).IsNil() {
				t.Errorf("%s: UI.%s unset", name, v.Type().Field(i).Name)
			}
		}
		j := reflect.ValueOf(th.JSON)
		for i := 0; i < j.NumField(); i++ {
			if j.Field(i).Interface().(TokenStyle).Fg == nil {
				t.Errorf("%s: JSON.%s has no colour", name, j.Type().Field(i).Name)
			}
		}
		_ = NewStyles(th)
	}
	if _, err := Lookup("nope"); !errors.Is(err, ErrUnknownTheme) {
		t.Errorf("Lookup(nope) err = %v", err)
	}
	if !Default(true).Dark || Default(false).Dark {
		t.Error("Default picks the wrong theme")
	}
}

func TestBuiltinsFresh(t *testing.T) {
	a := Dark()
	a.UI.Accent = color.Black
	a.Name = "changed"
	if b := Dark(); b.Name != DarkName || rgb(b.UI.Accent) == rgb(color.Black) {
		t.Error("modifying a returned theme changed the built-in")
	}
}

func TestJSONFromChroma(t *testing.T) {
	j := JSONFromChroma(chromaStyle("monokai"))
	want := map[string][3]uint32{
		"key":    {0xf9, 0x26, 0x72}, // NameTag
		"string": {0xe6, 0xdb, 0x74}, // LiteralString
		"number": {0xae, 0x81, 0xff}, // LiteralNumber
		"true":   {0x66, 0xd9, 0xef}, // KeywordConstant inherits Keyword
		"punct":  {0xf8, 0xf8, 0xf2}, // Punctuation
	}
	got := map[string]TokenStyle{"key": j.Key, "string": j.String, "number": j.Number, "true": j.True, "punct": j.Punct}
	for k, w := range want {
		if got[k].Fg == nil || rgb(got[k].Fg) != w {
			t.Errorf("%s = %v, want %x", k, got[k].Fg, w)
		}
	}
	if j.Error.Bg == nil || rgb(j.Error.Bg) != [3]uint32{0x1e, 0x00, 0x10} {
		t.Errorf("error bg = %v", j.Error.Bg)
	}
}

func TestParseUserTheme(t *testing.T) {
	src := `
base = "light"
chroma = "monokai"
dark = true
[ui]
accent = "#ff0000"
focus_border = "#0f0"
selection_bg = "236"
[json]
key = "bold #123456"
error = "#ffffff bg:#ff0000"
`
	th, err := Parse("mine", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if th.Name != "mine" || !th.Dark || th.ChromaStyle != "monokai" {
		t.Errorf("theme = %+v", th)
	}
	if rgb(th.UI.Accent) != [3]uint32{0xff, 0, 0} || rgb(th.UI.FocusBorder) != [3]uint32{0, 0xff, 0} {
		t.Errorf("ui overrides not applied: %v %v", th.UI.Accent, th.UI.FocusBorder)
	}
	if rgb(th.JSON.Key.Fg) != [3]uint32{0x12, 0x34, 0x56} || !th.JSON.Key.Bold {
		t.Errorf("key = %+v", th.JSON.Key)
	}
	if rgb(th.JSON.String.Fg) != [3]uint32{0xe6, 0xdb, 0x74} {
		t.Errorf("string not derived from monokai: %v", th.JSON.String.Fg)
	}
	// Untouched UI colours come from the base.
	if rgb(th.UI.OK) != rgb(Light().UI.OK) {
		t.Error("base colours not kept")
	}
}

func TestParseUserThemeErrors(t *testing.T) {
	for name, src := range map[string]string{
		"badbase":   `base = "nope"`,
		"badchroma": `chroma = "nope"`,
		"badcolour": "[ui]\naccent = \"red\"",
		"badfield":  "[ui]\nnope = \"#fff\"",
		"badjson":   "[json]\nkey = \"#zzzzzz\"",
		"badkind":   "[json]\nnope = \"#fff\"",
		"unknown":   `colour = 1`,
		"syntax":    `name = `,
	} {
		if _, err := Parse(name, []byte(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestLoadDirAndCatalog(t *testing.T) {
	dir := t.TempDir()
	write := func(n, s string) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.toml", "chroma = \"dracula\"\n")
	write("b.toml", "name = \"light\"\nbase = \"light\"\n[ui]\naccent = \"#010203\"\n")
	write("bad.toml", "base = 3\n")
	write("ignored.txt", "x")
	ths, err := LoadDir(dir)
	if err == nil || !strings.Contains(err.Error(), "bad.toml") {
		t.Errorf("LoadDir err = %v", err)
	}
	if len(ths) != 2 || ths[0].Name != "a" || ths[1].Name != "light" {
		t.Fatalf("themes = %d", len(ths))
	}
	c := NewCatalog(ths)
	if got := c.Names(); !reflect.DeepEqual(got, []string{"dark", "light", "high-contrast", "a"}) {
		t.Errorf("Names = %v", got)
	}
	l, err := c.Lookup("light")
	if err != nil || rgb(l.UI.Accent) != [3]uint32{1, 2, 3} {
		t.Errorf("user theme does not shadow built-in: %v", err)
	}
	if _, err := c.Lookup("high-contrast"); err != nil {
		t.Error(err)
	}
	if ths, err := LoadDir(filepath.Join(dir, "missing")); err != nil || len(ths) != 0 {
		t.Errorf("missing dir: %v %v", ths, err)
	}
	write("huge.toml", strings.Repeat("#", MaxThemeFileSize+1))
	if _, err := LoadFile(filepath.Join(dir, "huge.toml")); err == nil {
		t.Error("huge file accepted")
	}
}

func TestStyles(t *testing.T) {
	th := HighContrast()
	s := NewStyles(th)
	if c := s.PaneFocused.GetBorderTopForeground(); c == nil || rgb(c) != rgb(th.UI.FocusBorder) {
		t.Errorf("focused border = %v", c)
	}
	if c := s.Pane.GetBorderTopForeground(); c == nil || rgb(c) != rgb(th.UI.Border) {
		t.Errorf("border = %v", c)
	}
	if c := s.Selected.GetBackground(); c == nil || rgb(c) != rgb(th.UI.SelectionBg) {
		t.Errorf("selection bg = %v", c)
	}
	if !s.ErrBadge.GetReverse() || !s.ErrBadge.GetBold() {
		t.Error("error badge is not reversed and bold")
	}
	if out := s.PaneFocused.Render("x"); !strings.Contains(out, "╭") {
		t.Errorf("pane has no rounded border: %q", out)
	}
}
