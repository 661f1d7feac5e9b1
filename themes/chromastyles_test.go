package themes

import (
	"slices"
	"testing"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/styles"
)

// The embedded copy must match the chroma version in go.mod (a test-only
// import: the binary never pays for parsing every style at start).
func TestEmbeddedChromaStylesMatchChroma(t *testing.T) {
	want := styles.Names()
	if got := chromaNames(); !slices.Equal(got, want) {
		t.Fatalf("embedded styles differ from chroma's: copy styles/*.xml from the chroma module again\n got %v\nwant %v", got, want)
	}
	for _, name := range want {
		got, ref := chromaStyle(name), styles.Get(name)
		for _, tt := range []chroma.TokenType{chroma.Text, chroma.LiteralString, chroma.NameTag, chroma.Punctuation} {
			if got.Get(tt) != ref.Get(tt) {
				t.Fatalf("%s: %v differs: %v vs %v", name, tt, got.Get(tt), ref.Get(tt))
			}
		}
	}
	if chromaStyle("no-such-style").Name != chromaFallback {
		t.Fatal("an unknown style must fall back")
	}
}
