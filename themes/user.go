package themes

import (
	"errors"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/BurntSushi/toml"
)

// MaxThemeFileSize bounds a user theme file; larger files are rejected.
const MaxThemeFileSize = 64 << 10

// File is the TOML form of a user theme. Every field is optional:
//
//	name   = "solar"            # default: the file name without .toml
//	base   = "dark"             # built-in theme to start from (default: dark)
//	dark   = true               # default: the base theme's
//	chroma = "solarized-dark"   # any chroma style; JSON colours are derived from it
//
//	[ui]                        # any UIColors field in snake_case
//	accent       = "#268bd2"    # "#rgb", "#rrggbb" or an ANSI index "0".."255"
//	focus_border = "#b58900"
//
//	[json]                      # key string number true false null punct error,
//	key   = "bold #268bd2"      # in chroma style-entry syntax:
//	error = "#ffffff bg:#dc322f" # [bold] [italic] [underline] [#fg] [bg:#bg]
type File struct {
	Name   string            `toml:"name"`
	Base   string            `toml:"base"`
	Dark   *bool             `toml:"dark"`
	Chroma string            `toml:"chroma"`
	UI     map[string]string `toml:"ui"`
	JSON   map[string]string `toml:"json"`
}

// Parse builds a theme from the TOML text of a user theme file. name is used
// when the file sets none.
func Parse(name string, data []byte) (Theme, error) {
	var f File
	md, err := toml.Decode(string(data), &f)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return Theme{}, fmt.Errorf("theme %s: unknown keys %s", name, strings.Join(keys, ", "))
	}
	return f.Theme(name)
}

// Theme resolves the file against its base theme. fallbackName is used when
// the file sets no name.
func (f File) Theme(fallbackName string) (Theme, error) {
	base := f.Base
	if base == "" {
		base = DarkName
	}
	t, err := Lookup(base)
	if err != nil {
		return Theme{}, fmt.Errorf("theme %s: base: %w", fallbackName, err)
	}
	t.Name = fallbackName
	if f.Name != "" {
		t.Name = f.Name
	}
	if f.Dark != nil {
		t.Dark = *f.Dark
	}
	if f.Chroma != "" {
		if !chromaStyleExists(f.Chroma) {
			return Theme{}, fmt.Errorf("theme %s: unknown chroma style %q", t.Name, f.Chroma)
		}
		t.ChromaStyle = f.Chroma
		t.JSON = JSONFromChroma(t.Chroma())
	}
	var errs []error
	uiv := reflect.ValueOf(&t.UI).Elem()
	for _, k := range sortedKeys(f.UI) {
		fi, ok := uiFields()[k]
		if !ok {
			errs = append(errs, fmt.Errorf("ui.%s: no such colour", k))
			continue
		}
		c, err := ParseColor(f.UI[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("ui.%s: %w", k, err))
			continue
		}
		uiv.Field(fi).Set(reflect.ValueOf(&c).Elem())
	}
	for _, k := range sortedKeys(f.JSON) {
		dst := jsonField(&t.JSON, k)
		if dst == nil {
			errs = append(errs, fmt.Errorf("json.%s: no such token kind", k))
			continue
		}
		ts, err := ParseTokenStyle(f.JSON[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("json.%s: %w", k, err))
			continue
		}
		*dst = ts
	}
	if err := errors.Join(errs...); err != nil {
		return Theme{}, fmt.Errorf("theme %s: %w", t.Name, err)
	}
	return t, nil
}

func sortedKeys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

// uiFields maps snake_case names to UIColors field indexes. Built on first
// use, not at start: a one-shot command that loads no user theme never pays
// for it.
var uiFields = sync.OnceValue(func() map[string]int {
	m := map[string]int{}
	t := reflect.TypeOf(UIColors{})
	for i := 0; i < t.NumField(); i++ {
		m[snake(t.Field(i).Name)] = i
	}
	return m
})

// snake turns a Go field name into snake_case: an underscore goes between a
// lower-case ASCII letter and the upper-case one after it ("FocusBorder" ->
// "focus_border", "URLText" -> "urltext"), then everything is lower-cased.
func snake(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i > 0 && s[i] >= 'A' && s[i] <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteByte(s[i])
	}
	return strings.ToLower(b.String())
}

func jsonField(j *JSONColors, k string) *TokenStyle {
	switch k {
	case "key":
		return &j.Key
	case "string":
		return &j.String
	case "number":
		return &j.Number
	case "true":
		return &j.True
	case "false":
		return &j.False
	case "null":
		return &j.Null
	case "punct", "punctuation":
		return &j.Punct
	case "error":
		return &j.Error
	}
	return nil
}

// hexColour matches "#rgb" and "#rrggbb"; compiled on first use.
var hexColour = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
})

// ParseColor parses "#rgb", "#rrggbb" or an ANSI colour index "0".."255".
func ParseColor(s string) (color.Color, error) {
	s = strings.TrimSpace(s)
	if hexColour().MatchString(s) {
		return lipgloss.Color(s), nil
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && n <= 255 {
		return lipgloss.Color(s), nil
	}
	return nil, fmt.Errorf("bad colour %q (want #rrggbb, #rgb or 0-255)", s)
}

// ParseTokenStyle parses a chroma style entry such as "bold #ff0000 bg:#000000".
func ParseTokenStyle(s string) (TokenStyle, error) {
	e, err := parseStyleEntry(s)
	if err != nil {
		return TokenStyle{}, fmt.Errorf("bad style %q: %w", s, err)
	}
	ts := fromEntry(e)
	if e.Background.isSet() {
		ts.Bg = rgbOf(e.Background)
	}
	return ts, nil
}

// LoadDir loads every *.toml file in dir as a user theme, in file-name order.
// A missing directory yields no themes and no error. Files that fail to load
// are reported together in the error; the themes that did load are returned.
func LoadDir(dir string) ([]Theme, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.toml"))
	if err != nil {
		return nil, fmt.Errorf("list themes in %s: %w", dir, err)
	}
	sort.Strings(paths)
	var out []Theme
	var errs []error
	for _, p := range paths {
		t, err := LoadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// LoadFile loads one user theme file.
func LoadFile(path string) (Theme, error) {
	f, err := os.Open(path)
	if err != nil {
		return Theme{}, fmt.Errorf("load theme: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Theme{}, fmt.Errorf("load theme: %w", err)
	}
	if !st.Mode().IsRegular() {
		return Theme{}, fmt.Errorf("load theme %s: not a regular file", path)
	}
	if st.Size() > MaxThemeFileSize {
		return Theme{}, fmt.Errorf("load theme %s: %d bytes, limit %d", path, st.Size(), MaxThemeFileSize)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return Theme{}, fmt.Errorf("load theme %s: %w", path, err)
	}
	t, err := Parse(strings.TrimSuffix(filepath.Base(path), ".toml"), data)
	if err != nil {
		return Theme{}, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// Catalog is the set of themes a user can pick from: the built-ins plus user
// themes (which may shadow a built-in of the same name).
type Catalog struct {
	user []Theme
}

// NewCatalog returns a catalog of the built-ins and the given user themes.
func NewCatalog(user []Theme) *Catalog {
	return &Catalog{user: append([]Theme(nil), user...)}
}

// Lookup finds a theme by name, user themes first.
func (c *Catalog) Lookup(name string) (Theme, error) {
	for i := len(c.user) - 1; i >= 0; i-- {
		if c.user[i].Name == name {
			return c.user[i], nil
		}
	}
	return Lookup(name)
}

// Names lists every theme name: built-ins first, then user themes, no repeats.
func (c *Catalog) Names() []string {
	names := Names()
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for _, t := range c.user {
		if !seen[t.Name] {
			seen[t.Name] = true
			names = append(names, t.Name)
		}
	}
	return names
}
