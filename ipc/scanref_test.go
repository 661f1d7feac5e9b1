// The scanner's containers as they were before the iterative loop (issue
// 23), kept as the oracle it is checked against (TestSkipValueMatchesReference).

package ipc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refSkipValue returns the index after the value starting at b[i] (no leading
// whitespace).
func refSkipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, scanErr(i, "unexpected end")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return 0, errDepth
		}
		return refSkipContainer(b, i, depth+1)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	}
	return 0, scanErr(i, "unexpected character")
}

func refSkipContainer(b []byte, i, depth int) (int, error) {
	obj := b[i] == '{'
	close := byte(']')
	if obj {
		close = '}'
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == close {
		return i + 1, nil
	}
	for {
		var err error
		if obj {
			if i >= len(b) || b[i] != '"' {
				return 0, scanErr(i, "want a member name")
			}
			if i, _, err = skipString(b, i); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, scanErr(i, "want ':'")
			}
			i = skipWS(b, i+1)
		}
		if i, err = refSkipValue(b, i, depth); err != nil {
			return 0, err
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, scanErr(i, "unexpected end")
		}
		if b[i] == close {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, scanErr(i, "want ',' or the end")
		}
		i = skipWS(b, i+1)
	}
}

// TestSkipValueMatchesReference: the container loop ends where the
// recursive scanner ended, with the same error (text and byte), on the
// fuzz corpora of the scanner and the decoder, hostile nesting, and every
// prefix of a document with every kind of token.
func TestSkipValueMatchesReference(t *testing.T) {
	ins := []string{
		`{}`, `[]`, `[{}]`, `{"a":[]}`, `[1,[2,[3,{"b":{"c":null}}]],true,false,"x\"y"]`,
		`{"a" :1 , "b":[ 1 , 2 ] }`, `[1,]`, `[,1]`, `{"a"}`, `{"a":}`, `{1:2}`, `[1 2]`, `{"a":1,}`, `[}`, `{]`,
		`[tru]`, `[nulll]`, `[-]`, `[01]`, `[1.e5]`, `["\x"]`, `["\u12"]`, "[\"\x01\"]", `[`, `{`, `{"a":[1,{"b":`,
		strings.Repeat("[", maxScanDepth+2) + strings.Repeat("]", maxScanDepth+2),
		strings.Repeat(`{"a":`, maxScanDepth-1) + "1" + strings.Repeat("}", maxScanDepth-1),
		strings.Repeat(`[{"a":`, 3000) + "[]" + strings.Repeat("}]", 3000),
	}
	for _, dir := range []string{"testdata/fuzz/FuzzScanMatchesStdlib", "testdata/fuzz/FuzzDecodeMessage"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			ins = append(ins, string(b)) // the corpus file's text: JSON-ish bytes too
		}
	}
	doc := `{"a": [1, -2.5e+3, true, false, null, "s\u00e9\n"], "b": {"c": {}, "d": [[], {}]}, "e": "x"}`
	for n := 0; n <= len(doc); n++ {
		ins = append(ins, doc[:n], "["+doc[:n])
	}
	for _, in := range ins {
		b := []byte(in)
		for i := range b {
			if b[i] != '{' && b[i] != '[' || i > 0 && len(b) > 4096 {
				continue
			}
			for _, depth := range []int{1, maxScanDepth - 2} {
				gotEnd, gotErr := skipValue(b, i, depth)
				wantEnd, wantErr := refSkipValue(b, i, depth)
				if gotEnd != wantEnd || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Fatalf("at %d of %q (depth %d): %d, %v; the reference: %d, %v", i, clip(in), depth, gotEnd, gotErr, wantEnd, wantErr)
				}
			}
		}
	}
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
