package render

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/themes"
)

// refOptions are the option sets the printer is compared with the
// reference under: plain and coloured, for a terminal or not, compact,
// usual, odd and clamped indents.
func refOptions() []Options {
	th := themes.Dark()
	var out []Options
	for _, ind := range []int{0, 2, 3, MaxIndent + 1, -1} {
		for _, term := range []bool{false, true} {
			out = append(out,
				Options{Indent: ind, Terminal: term},
				Options{Indent: ind, Terminal: term, Colors: &th.JSON, Profile: colorprofile.TrueColor},
				Options{Indent: ind, Terminal: term, Colors: &th.JSON, Profile: colorprofile.ANSI256},
				Options{Indent: ind, Terminal: term, Colors: &th.JSON, Profile: colorprofile.Ascii},
			)
		}
	}
	return out
}

// sameAsReference checks that the printer writes what the reference
// printer (before the rewrite) writes for data, byte for byte, with the
// same error, in memory and from a reader (whole, and one byte a read, so
// that every token is cut at every place by the buffer's end).
func sameAsReference(t *testing.T, data []byte, opts Options) {
	t.Helper()
	var want bytes.Buffer
	werr := refJSONBytes(&want, data, opts)
	check := func(how string, got []byte, gerr error) {
		t.Helper()
		if !bytes.Equal(got, want.Bytes()) {
			i := 0
			for i < len(got) && i < want.Len() && got[i] == want.Bytes()[i] {
				i++
			}
			t.Fatalf("%s, %+v: output differs from the reference at byte %d:\ngot  %q\nwant %q\ninput %q",
				how, opts, i, clip(got[i:]), clip(want.Bytes()[i:]), clip(data))
		}
		if fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("%s, %+v: error %v, the reference's %v; input %q", how, opts, gerr, werr, clip(data))
		}
	}
	var got bytes.Buffer
	gerr := JSONBytes(&got, data, opts)
	check("JSONBytes", got.Bytes(), gerr)
	got.Reset()
	gerr = JSON(&got, bytes.NewReader(data), opts)
	check("JSON", got.Bytes(), gerr)
	if len(data) <= 4<<10 {
		got.Reset()
		gerr = JSON(&got, iotest.OneByteReader(bytes.NewReader(data)), opts)
		check("JSON one byte a read", got.Bytes(), gerr)
	}
	f, ferr := Format(data, opts)
	check("Format", f, ferr)
}

func clip(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}

// referenceInputs are varied documents: the fuzz seeds of FuzzJSON, the jq
// comparison files, generated documents and hostile text.
func referenceInputs(t *testing.T) [][]byte {
	ins := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2.5,-3e10,true,false,null,"x\u001b"],"b":{}}}`),
		[]byte(`[]`), []byte(`{}`), []byte(`""`), []byte(`0`), []byte(`-0.0e+0`), []byte("1 2\n3"),
		[]byte("{\"a\":\"\x1b]52;c;AAAA\x07\"}"), []byte("\"\xff\xc2\x9b\""), []byte(`[1,]`), []byte(`{"a" 1}`), []byte(`[`), []byte(`"\u12`),
		[]byte(" \t\r\n{ \"a\" :\n [ 1 ,\t2 ] , \"b\" : { } , \"c\":[ ]}\r\n"),
		[]byte(`12345678901234567890123456789012345678901234567890e-999999999999`),
		[]byte(`[-0,0.0,1E5,1e+5,1e-5,-12.5e-3]`), []byte(`[01]`), []byte(`[1.]`), []byte(`[1e]`), []byte(`[-]`), []byte(`[1.5.5]`),
		[]byte(`[1a]`), []byte(`[truex]`), []byte(`[tru]`), []byte(`[nul`), []byte(`[fals,]`), []byte(`{"a":1,}`), []byte(`{"a":1 "b":2}`),
		[]byte(`{1:2}`), []byte(`{"a"}`), []byte(`[1}`), []byte(`{"a":1]`), []byte(`]`), []byte(`"abc`), []byte(`"\x"`), []byte(`"\u00zz"`),
		[]byte("\"tab\there\nnew\x00nul\x7fdel\x1b[31mred\x1b]0;title\x07\""),
		[]byte("\"\u202e\u2066bidi\u200b\u2028\u2029\ufeff\U0001F600\u00ad\u0301e\u0301\u200d\""),
		[]byte("\"\xc2\x80\xc2\x9f\xc2\xa0\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82\""),
		[]byte(`"\ud800\udc00\\\"\/\b\f\n\r\t"`),
		[]byte(`{"":"","\u0000":"\u001b"}`),
		[]byte("[" + strings.Repeat("[", 300) + strings.Repeat("]", 300) + "]"),
		[]byte(strings.Repeat("[", MaxDepth+1)),
		[]byte(strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)),
		[]byte(`"` + strings.Repeat("x", 70000) + `"`),
		[]byte(`"` + strings.Repeat("é\\n\x01", 30000) + `"`),
		[]byte(strings.Repeat("1", 70000)),
		[]byte("{\"a\":1}\n{\"b\":[true]}\n\n[1]   2 \"x\" null"),
		[]byte("{\"a\":1}\n{\"b\":"),
		[]byte("\xef\xbb\xbf{}"),
		genDoc(300 << 10),
	}
	for _, dir := range []string{"testdata/fuzz/FuzzJSON", "testdata/fuzz/FuzzJSONMatchesReference"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := corpusBytes(b); ok {
				ins = append(ins, v)
			}
		}
	}
	jq, _ := filepath.Glob("testdata/jq/*.json*")
	for _, p := range jq {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, b)
	}
	return ins
}

// corpusBytes reads the []byte value of a go test fuzz v1 corpus file.
func corpusBytes(b []byte) ([]byte, bool) {
	s := strings.TrimPrefix(string(b), "go test fuzz v1\n")
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[]byte(") || !strings.HasSuffix(s, ")") {
		return nil, false
	}
	var v string
	if _, err := fmt.Sscanf(s[len("[]byte("):len(s)-1], "%q", &v); err != nil {
		return nil, false
	}
	return []byte(v), true
}

// TestJSONMatchesReference: the single-pass printer writes, for every
// option set, what the printer before it wrote, byte for byte.
func TestJSONMatchesReference(t *testing.T) {
	ins := referenceInputs(t)
	if len(ins) < 60 {
		t.Fatalf("only %d inputs: the fuzz corpus was not found", len(ins))
	}
	for _, opts := range refOptions() {
		for _, in := range ins {
			sameAsReference(t, in, opts)
		}
	}
	// Every prefix of a document with every kind of token: each way a
	// document can end early gives the same error and output.
	doc := []byte("{\"a\": [1, -2.5e+3, true, false, null, \"s\\u00e9\\n\xc3\xa9\x1b\u202e\"], \"b\": {\"c\": {}, \"d\": []}}\n[0]")
	for _, opts := range refOptions() {
		for n := 0; n <= len(doc); n++ {
			sameAsReference(t, doc[:n], opts)
		}
	}
}

// FuzzJSONMatchesReference: whatever the input, the printer writes what
// the reference printer writes, with the same error.
func FuzzJSONMatchesReference(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2.5,-3e10,true,false,null,"x\u001b"],"b":{}}}`))
	f.Add([]byte("\"\u202e\xff\xc2\x9b\\u0041\""))
	f.Add([]byte(`[1e5,-0.5E-2,[],{}]`))
	opts := refOptions()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range opts {
			sameAsReference(t, data, o)
		}
	})
}

// BenchmarkCallAnswerReference10MB and BenchmarkCallAnswerColourReference10MB
// print callDoc with the printer before the single-pass loop (the oracle
// of refprinter_test.go), beside BenchmarkCallAnswer10MB and
// BenchmarkCallAnswerColour10MB in the same binary: the before and after
// of issue 23's printer on one machine state.
func BenchmarkCallAnswerReference10MB(b *testing.B) {
	benchReference(b, Options{Indent: DefaultIndent})
}

func BenchmarkCallAnswerColourReference10MB(b *testing.B) {
	th := themes.Dark()
	benchReference(b, Options{Indent: DefaultIndent, Colors: &th.JSON, Profile: colorprofile.TrueColor})
}

func benchReference(b *testing.B, opts Options) {
	doc := callDoc()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if err := refJSONBytes(io.Discard, doc, opts); err != nil {
			b.Fatal(err)
		}
	}
}
