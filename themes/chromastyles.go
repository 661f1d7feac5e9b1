package themes

import (
	"embed"
	"sort"
	"strings"
)

// The chroma styles, copied from github.com/alecthomas/chroma/v2/styles (MIT,
// see chroma/COPYING) and parsed only when a theme asks for one. Importing
// chroma's styles package instead would parse all of them at every start of
// the binary (6 ms and 2 MB, most of a one-shot `primalscope call`).
//
//go:embed chroma/*.xml
var chromaXML embed.FS

const chromaFallback = "swapoff"

// chromaStyle parses the named chroma style (case-insensitive), or chroma's
// fallback style when there is no such style.
func chromaStyle(name string) *ChromaStyle {
	if s := loadChromaStyle(strings.ToLower(name)); s != nil {
		return s
	}
	if s := loadChromaStyle(chromaFallback); s != nil {
		return s
	}
	return &ChromaStyle{Name: chromaFallback, entries: map[tokenType]StyleEntry{ttText: {Colour: parseChromaColour("#ffffff")}}}
}

func loadChromaStyle(name string) *ChromaStyle {
	if name == "" || strings.ContainsAny(name, "/\\") {
		return nil
	}
	data, err := chromaXML.ReadFile("chroma/" + name + ".xml")
	if err != nil {
		return nil
	}
	s, err := parseChromaXML(data)
	if err != nil {
		return nil
	}
	return s
}

func chromaNames() []string {
	ents, _ := chromaXML.ReadDir("chroma")
	var out []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".xml"); ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func chromaStyleExists(name string) bool {
	return loadChromaStyle(strings.ToLower(name)) != nil
}
