package themes

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The part of chroma's style model the themes use, without importing
// chroma: linking github.com/alecthomas/chroma/v2 (and with it regexp2 and
// encoding/xml) cost every start of the binary about 0.4M instructions and
// 45 page faults of package initialisation, a tenth of a one-shot
// `primalscope call`, for nothing but reading colours. The rules below are
// chroma v2's (style.go, colour.go); TestChromaStyleMatchesChroma checks
// them against chroma itself for every embedded style.

// trilean is a style attribute that is on, off or inherited.
type trilean uint8

const (
	pass trilean = iota
	yes
	no
)

// chromaColour is chroma's colour: 0 is unset, otherwise 0xRRGGBB + 1.
type chromaColour int32

func (c chromaColour) isSet() bool  { return c != 0 }
func (c chromaColour) red() uint8   { return uint8(((c - 1) >> 16) & 0xff) }
func (c chromaColour) green() uint8 { return uint8(((c - 1) >> 8) & 0xff) }
func (c chromaColour) blue() uint8  { return uint8((c - 1) & 0xff) }

// StyleEntry is one entry of a chroma style ("bold #ff0000 bg:#000000").
type StyleEntry struct {
	Colour, Background, Border chromaColour
	Bold, Italic, Underline    trilean
	NoInherit                  bool
}

func (s StyleEntry) isZero() bool { return s == StyleEntry{} }

// inherit fills what s leaves unset from its ancestors, nearest last.
func (s StyleEntry) inherit(ancestors ...StyleEntry) StyleEntry {
	out := s
	for i := len(ancestors) - 1; i >= 0; i-- {
		a := ancestors[i]
		if out.NoInherit {
			return out
		}
		if !out.Colour.isSet() {
			out.Colour = a.Colour
		}
		if !out.Background.isSet() {
			out.Background = a.Background
		}
		if !out.Border.isSet() {
			out.Border = a.Border
		}
		if out.Bold == pass {
			out.Bold = a.Bold
		}
		if out.Italic == pass {
			out.Italic = a.Italic
		}
		if out.Underline == pass {
			out.Underline = a.Underline
		}
	}
	return out
}

// tokenType is chroma's token type number; only the ones the JSON colours
// are derived from (and their ancestors) are named.
type tokenType int

const (
	ttEOF             tokenType = 0
	ttBackground      tokenType = -1
	ttError           tokenType = -11
	ttKeyword         tokenType = 1000
	ttKeywordConstant tokenType = 1001
	ttName            tokenType = 2000
	ttNameAttribute   tokenType = 2001
	ttNameTag         tokenType = 2014
	ttLiteral         tokenType = 3000
	ttLiteralString   tokenType = 3100
	ttLiteralNumber   tokenType = 3200
	ttPunctuation     tokenType = 5000
	ttText            tokenType = 8000
)

func (t tokenType) category() tokenType    { return t / 1000 * 1000 }
func (t tokenType) subCategory() tokenType { return t / 100 * 100 }

// namedTokenType returns the type of a style entry the themes read; other
// names are not kept.
func namedTokenType(name string) (tokenType, bool) {
	switch name {
	case "EOFType":
		return ttEOF, true
	case "Background":
		return ttBackground, true
	case "Error":
		return ttError, true
	case "Keyword":
		return ttKeyword, true
	case "KeywordConstant":
		return ttKeywordConstant, true
	case "Name":
		return ttName, true
	case "NameAttribute":
		return ttNameAttribute, true
	case "NameTag":
		return ttNameTag, true
	case "Literal":
		return ttLiteral, true
	case "LiteralString":
		return ttLiteralString, true
	case "LiteralNumber":
		return ttLiteralNumber, true
	case "Punctuation":
		return ttPunctuation, true
	case "Text":
		return ttText, true
	}
	return 0, false
}

// ChromaStyle is a parsed chroma style, reduced to the entries the themes
// read. It is not modified once parsed.
type ChromaStyle struct {
	Name    string
	entries map[tokenType]StyleEntry
}

func (s *ChromaStyle) get(t tokenType) StyleEntry { return s.entries[t] }

// entry is the style of t with what it inherits (chroma's Style.Get).
func (s *ChromaStyle) entry(t tokenType) StyleEntry {
	return s.get(t).inherit(s.get(ttBackground), s.get(ttText), s.get(t.category()), s.get(t.subCategory()))
}

// has reports whether the style sets t itself (chroma's Style.Has).
func (s *ChromaStyle) has(t tokenType) bool { return !s.get(t).isZero() }

// parseStyleEntry parses chroma's style-entry syntax.
func parseStyleEntry(entry string) (StyleEntry, error) {
	out := StyleEntry{}
	for _, part := range strings.Fields(entry) {
		switch {
		case part == "italic":
			out.Italic = yes
		case part == "noitalic":
			out.Italic = no
		case part == "bold":
			out.Bold = yes
		case part == "nobold":
			out.Bold = no
		case part == "underline":
			out.Underline = yes
		case part == "nounderline":
			out.Underline = no
		case part == "inherit":
			out.NoInherit = false
		case part == "noinherit":
			out.NoInherit = true
		case part == "bg:":
			out.Background = 0
		case strings.HasPrefix(part, "bg:#"):
			out.Background = parseChromaColour(part[3:])
			if !out.Background.isSet() {
				return StyleEntry{}, fmt.Errorf("invalid background colour %q", part)
			}
		case strings.HasPrefix(part, "border:#"):
			out.Border = parseChromaColour(part[7:])
			if !out.Border.isSet() {
				return StyleEntry{}, fmt.Errorf("invalid border colour %q", part)
			}
		case strings.HasPrefix(part, "#"):
			out.Colour = parseChromaColour(part)
			if !out.Colour.isSet() {
				return StyleEntry{}, fmt.Errorf("invalid colour %q", part)
			}
		default:
			return StyleEntry{}, fmt.Errorf("unknown style element %q", part)
		}
	}
	return out, nil
}

// parseChromaColour parses "#rrggbb", "#rgb" or one of chroma's colour
// names ("#ansired"); 0 when it is none of them.
func parseChromaColour(s string) chromaColour {
	if rgb, ok := ansiColourName(s); ok {
		s = rgb
	} else if strings.HasPrefix(s, "#") {
		s = s[1:]
		if len(s) == 3 {
			s = s[0:1] + s[0:1] + s[1:2] + s[1:2] + s[2:3] + s[2:3]
		}
	}
	n, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0
	}
	return chromaColour(n + 1)
}

// ansiColourName is chroma's ANSI2RGB table.
func ansiColourName(s string) (string, bool) {
	if !strings.HasPrefix(s, "#") {
		return "", false
	}
	switch strings.TrimPrefix(s[1:], "ansi") {
	case "black":
		return "000000", true
	case "darkred":
		return "7f0000", true
	case "darkgreen":
		return "007f00", true
	case "brown":
		return "7f7fe0", true
	case "darkblue":
		return "00007f", true
	case "purple":
		return "7f007f", true
	case "teal":
		return "007f7f", true
	case "lightgray":
		return "e5e5e5", true
	case "darkgray":
		return "555555", true
	case "red":
		return "ff0000", true
	case "green":
		return "00ff00", true
	case "yellow":
		return "ffff00", true
	case "blue":
		return "0000ff", true
	case "fuchsia":
		return "ff00ff", true
	case "turquoise":
		return "00ffff", true
	case "white":
		return "ffffff", true
	}
	return "", false
}

// parseChromaXML reads a chroma style file as chroma's styles directory
// writes them: <style name=".." [counterpart=".."]> then one
// <entry type=".." style=".."/> per line. Every entry's style must parse;
// entries of types the themes do not read are not kept.
func parseChromaXML(data []byte) (*ChromaStyle, error) {
	head, rest, ok := cutTag(data, "<style")
	if !ok {
		return nil, errors.New("no <style> element")
	}
	s := &ChromaStyle{Name: attr(head, "name"), entries: map[tokenType]StyleEntry{}}
	if s.Name == "" {
		return nil, errors.New("missing style name attribute")
	}
	for {
		var tag []byte
		tag, rest, ok = cutTag(rest, "<entry")
		if !ok {
			break
		}
		e, err := parseStyleEntry(attr(tag, "style"))
		if err != nil {
			return nil, fmt.Errorf("style %s: %w", s.Name, err)
		}
		if t, ok := namedTokenType(attr(tag, "type")); ok {
			s.entries[t] = e
		}
	}
	if !bytes.Contains(rest, []byte("</style>")) {
		return nil, fmt.Errorf("style %s: no </style>", s.Name)
	}
	return s, nil
}

// cutTag finds the next tag starting with open and returns its text (up to
// '>') and what follows it.
func cutTag(data []byte, open string) (tag, rest []byte, ok bool) {
	i := bytes.Index(data, []byte(open))
	if i < 0 {
		return nil, data, false
	}
	j := bytes.IndexByte(data[i:], '>')
	if j < 0 {
		return nil, data, false
	}
	return data[i+len(open) : i+j], data[i+j+1:], true
}

// attr returns the double-quoted value of the named attribute in a tag.
func attr(tag []byte, name string) string {
	key := []byte(" " + name + `="`)
	i := bytes.Index(tag, key)
	if i < 0 {
		return ""
	}
	v := tag[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return ""
	}
	return string(v[:j])
}
