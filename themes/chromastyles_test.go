package themes

import (
	"bytes"
	"image/color"
	"regexp"
	"slices"
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/styles"
)

// The embedded copy must match the chroma version in go.mod, and the
// chroma-free reading of it must agree with chroma (a test-only import: the
// binary never links chroma).
func TestEmbeddedChromaStylesMatchChroma(t *testing.T) {
	want := styles.Names()
	if got := chromaNames(); !slices.Equal(got, want) {
		t.Fatalf("embedded styles differ from chroma's: copy styles/*.xml from the chroma module again\n got %v\nwant %v", got, want)
	}
	if chromaStyle("no-such-style").Name != chromaFallback {
		t.Fatal("an unknown style must fall back")
	}
}

var themeTokenTypes = []tokenType{ttEOF, ttBackground, ttError, ttKeyword, ttKeywordConstant, ttName,
	ttNameAttribute, ttNameTag, ttLiteral, ttLiteralString, ttLiteralNumber, ttPunctuation, ttText}

func fromChromaEntry(e chroma.StyleEntry) StyleEntry {
	return StyleEntry{
		Colour: chromaColour(e.Colour), Background: chromaColour(e.Background), Border: chromaColour(e.Border),
		Bold: trilean(e.Bold), Italic: trilean(e.Italic), Underline: trilean(e.Underline), NoInherit: e.NoInherit,
	}
}

// TestChromaStyleMatchesChroma: for every embedded style, every token type
// the themes read has the same entry (with inheritance) and the same Has as
// chroma's, and the derived JSON colours are those the chroma-based code
// derived.
func TestChromaStyleMatchesChroma(t *testing.T) {
	for _, name := range chromaNames() {
		data, err := chromaXML.ReadFile("chroma/" + name + ".xml")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := chroma.NewXMLStyle(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: chroma: %v", name, err)
		}
		got, err := parseChromaXML(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Name != ref.Name {
			t.Errorf("%s: name %q, chroma %q", name, got.Name, ref.Name)
		}
		for _, tt := range themeTokenTypes {
			ct := chroma.TokenType(tt)
			if tt != ttEOF && ct.String() == "" {
				t.Fatalf("token type %d unknown to chroma", tt)
			}
			if g, w := got.entry(tt), fromChromaEntry(ref.Get(ct)); g != w {
				t.Errorf("%s: %v: %+v, chroma %+v", name, ct, g, w)
			}
			if g, w := got.has(tt), ref.Has(ct); g != w {
				t.Errorf("%s: has %v: %v, chroma %v", name, ct, g, w)
			}
		}
		if g, w := JSONFromChroma(got), jsonFromChromaRef(ref); !sameJSONColors(g, w) {
			t.Errorf("%s: JSON colours %+v, from chroma %+v", name, g, w)
		}
	}
}

// TestParseStyleEntryMatchesChroma runs every style string of the embedded
// styles and some hand-written ones through both parsers.
func TestParseStyleEntryMatchesChroma(t *testing.T) {
	cases := []string{"", "bold", "nobold italic noitalic", "underline nounderline", "noinherit", "inherit",
		"#fff", "#FFF", "#123456", "#12345", "#1234567", "#12345678", "#ffffffff", "#", "#ggg", "#ansired", "#red",
		"#ansiwhite bg:#ansiblack", "#black", "#ansi", "bg:", "bg:#000", "bg:#zzz", "border:#abc", "border:#",
		"bold #f00 bg:#0f0 border:#00f noinherit", "fff", "ansired", "blink", "  bold   #abc  "}
	for n := range chroma.ANSI2RGB {
		cases = append(cases, n, "bg:"+n, n[1:])
	}
	re := regexp.MustCompile(`style="([^"]*)"`)
	for _, name := range chromaNames() {
		data, _ := chromaXML.ReadFile("chroma/" + name + ".xml")
		for _, m := range re.FindAllSubmatch(data, -1) {
			cases = append(cases, string(m[1]))
		}
	}
	for _, c := range cases {
		g, gerr := parseStyleEntry(c)
		w, werr := chroma.ParseStyleEntry(c)
		if (gerr == nil) != (werr == nil) || g != fromChromaEntry(w) {
			t.Errorf("%q: %+v, %v; chroma %+v, %v", c, g, gerr, fromChromaEntry(w), werr)
		}
	}
}

func TestParseChromaXMLRejects(t *testing.T) {
	for _, in := range []string{"", "<style>", `<style name="">`, `<style name="x"><entry type="Text" style="blink"/></style>`,
		`<style name="x"><entry type="Text" style="#fff"/>`} {
		if _, err := parseChromaXML([]byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// jsonFromChromaRef is JSONFromChroma as it was written against chroma.
func jsonFromChromaRef(s *chroma.Style) JSONColors {
	conv := func(e chroma.StyleEntry) TokenStyle {
		ts := TokenStyle{Bold: e.Bold == chroma.Yes, Italic: e.Italic == chroma.Yes, Underline: e.Underline == chroma.Yes}
		if e.Colour.IsSet() {
			ts.Fg = color.RGBA{R: e.Colour.Red(), G: e.Colour.Green(), B: e.Colour.Blue(), A: 0xff}
		}
		return ts
	}
	key := s.Get(chroma.Text)
	for _, tt := range []chroma.TokenType{chroma.NameTag, chroma.NameAttribute, chroma.Name, chroma.Keyword} {
		if s.Has(tt) && s.Get(tt).Colour.IsSet() {
			key = s.Get(tt)
			break
		}
	}
	constant := s.Get(chroma.KeywordConstant)
	errE := s.Get(chroma.Error)
	errS := conv(errE)
	if errE.Background.IsSet() {
		errS.Bg = color.RGBA{R: errE.Background.Red(), G: errE.Background.Green(), B: errE.Background.Blue(), A: 0xff}
	}
	return JSONColors{Key: conv(key), String: conv(s.Get(chroma.LiteralString)), Number: conv(s.Get(chroma.LiteralNumber)),
		True: conv(constant), False: conv(constant), Null: conv(constant), Punct: conv(s.Get(chroma.Punctuation)), Error: errS}
}

func sameJSONColors(a, b JSONColors) bool {
	same := func(x, y TokenStyle) bool {
		return colorKey(x.Fg) == colorKey(y.Fg) && colorKey(x.Bg) == colorKey(y.Bg) &&
			x.Bold == y.Bold && x.Italic == y.Italic && x.Underline == y.Underline
	}
	return same(a.Key, b.Key) && same(a.String, b.String) && same(a.Number, b.Number) && same(a.True, b.True) &&
		same(a.False, b.False) && same(a.Null, b.Null) && same(a.Punct, b.Punct) && same(a.Error, b.Error)
}

func colorKey(c color.Color) [4]uint32 {
	if c == nil {
		return [4]uint32{1 << 31}
	}
	r, g, b, a := c.RGBA()
	return [4]uint32{r, g, b, a}
}
