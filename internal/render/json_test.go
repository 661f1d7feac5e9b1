package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/themes"
)

// TestJQFixtures compares plain output with what jq 1.6 printed for the
// same input (testdata/jq/*.jq for `jq .`, *.jqc for `jq -c .`).
func TestJQFixtures(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/jq/*.json")
	nd, _ := filepath.Glob("testdata/jq/*.ndjson")
	inputs = append(inputs, nd...)
	if len(inputs) < 3 {
		t.Fatal("fixtures missing")
	}
	for _, in := range inputs {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		stem := strings.TrimSuffix(in, filepath.Ext(in))
		for ext, indent := range map[string]int{".jq": 2, ".jqc": 0} {
			want, err := os.ReadFile(stem + ext)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Format(data, Options{Indent: indent})
			if err != nil {
				t.Errorf("%s: %v", in, err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s indent %d:\ngot:\n%s\nwant:\n%s", in, indent, got, want)
			}
			// The streaming path, fed one byte at a time, agrees.
			var b bytes.Buffer
			if err := JSON(&b, iotest.OneByteReader(bytes.NewReader(data)), Options{Indent: indent}); err != nil {
				t.Errorf("%s stream: %v", in, err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Errorf("%s stream indent %d:\n%s", in, indent, b.Bytes())
			}
		}
	}
}

func TestNumbersKeptAsWritten(t *testing.T) {
	in := `[1e3,2.5E-3,-0,0.10,12345678901234567890123,1E+2]`
	got, err := Format([]byte(in), Options{})
	if err != nil || string(got) != in+"\n" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestEscapesKept(t *testing.T) {
	in := `"a\u001b[31mb\u009b\/\b\f\r"`
	got, err := Format([]byte(in), Options{Indent: 2})
	if err != nil || string(got) != in+"\n" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestRawControlsEscapedInStrings(t *testing.T) {
	in := "{\"k\x1b]52;c;AAAA\x07\":\"\x1b[2J\x9b\xc2\x9b6n\x7f\xff\xfe\tx\"}"
	got, err := Format([]byte(in), Options{Indent: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"k\\u001b]52;c;AAAA\\u0007\": \"\\u001b[2J\uFFFD\\u009b6n\\u007f\uFFFD\uFFFD\\tx\"\n}\n"
	if string(got) != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	assertTerminalSafe(t, string(got), true)
	var v map[string]string
	if err := json.Unmarshal(got, &v); err != nil {
		t.Errorf("output is not JSON: %v", err)
	}
}

func TestSyntaxErrors(t *testing.T) {
	cases := []struct {
		in         string
		off        int64
		line, col  int
		wantOutput string
	}{
		{`{"a":1,}`, 7, 1, 8, "{\n  \"a\": 1,\n  }\n"},
		{"[1,\n 2\n x]", 8, 3, 2, "[\n  1,\n  2x]\n"},
		{`[1 2]`, 3, 1, 4, "[\n  12]\n"},
		{`{"a" 1}`, 5, 1, 6, "{\n  \"a\"1}\n"},
		{`"abc`, 4, 1, 5, "\"abc\n"},
		{`[tru]`, 4, 1, 5, "[\n  tru]\n"},
		{`[-]`, 2, 1, 3, "[\n  -]\n"},
		{`[1.]`, 3, 1, 4, "[\n  1.]\n"},
		{`[01]`, 2, 1, 3, "[\n  01]\n"},
		{`"\q"`, 1, 1, 2, "\"\\q\"\n"},
		{`"\u12g4"`, 1, 1, 2, "\"\\u12g4\"\n"},
		{"{\"a\":\x1b[31m}", 5, 1, 6, "{\n  \"a\": \\x1b[31m}\n"},
		{"[", 1, 1, 2, "[\n"},
		{"}", 0, 1, 1, "}\n"},
		{"nul", 3, 1, 4, "nul\n"},
		{"1 2 ]", 4, 1, 5, "1\n2\n]\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		err := JSON(&b, strings.NewReader(c.in), Options{Indent: 2})
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("%q: err = %v, want SyntaxError", c.in, err)
			continue
		}
		if se.Offset != c.off || se.Line != c.line || se.Column != c.col {
			t.Errorf("%q: error at %d %d:%d, want %d %d:%d (%v)", c.in, se.Offset, se.Line, se.Column, c.off, c.line, c.col, err)
		}
		if b.String() != c.wantOutput {
			t.Errorf("%q: output %q, want %q", c.in, b.String(), c.wantOutput)
		}
	}
}

func TestDeepNesting(t *testing.T) {
	in := strings.Repeat("[", MaxDepth+5)
	var b bytes.Buffer
	err := JSON(&b, strings.NewReader(in), Options{Indent: 2})
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != MaxDepth {
		t.Fatalf("err = %v", err)
	}
	// Indentation is capped: output stays linear in the input.
	if b.Len() > (2*maxIndentLevels+8)*(MaxDepth+10) {
		t.Errorf("output %d bytes", b.Len())
	}
	ok := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	if _, err := Format([]byte(ok), Options{Indent: 2}); err != nil {
		t.Error(err)
	}
}

func TestColouredOutput(t *testing.T) {
	th := themes.Dark()
	got, err := Format([]byte(`{"a":[1,"x",true,false,null]}`), Options{Indent: 2, Colors: &th.JSON, Profile: colorprofile.TrueColor})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	if !strings.HasSuffix(s, sgrReset+"\n") {
		t.Errorf("no reset at end: %q", s)
	}
	plain := stripSGR(s)
	if plain != "{\n  \"a\": [\n    1,\n    \"x\",\n    true,\n    false,\n    null\n  ]\n}\n" {
		t.Errorf("stripped output %q", plain)
	}
	h := NewHighlighter(&th.JSON, colorprofile.TrueColor)
	// The colour changes only when the token kind does: "]\n}" is one run.
	if !strings.Contains(s, h.sgr[clNull]+"null\n  "+h.sgr[clPunct]+"]\n}"+sgrReset) {
		t.Errorf("punctuation run split: %q", s)
	}
	if n := strings.Count(s, "\x1b["); n != 14 {
		t.Errorf("%d SGR sequences, want 14: %q", n, s)
	}
	for _, prof := range []colorprofile.Profile{colorprofile.ANSI256, colorprofile.ANSI} {
		got, _ := Format([]byte(`{"a":1}`), Options{Indent: 2, Colors: &th.JSON, Profile: prof})
		if strings.Contains(string(got), "38;2;") || !strings.Contains(string(got), "\x1b[") {
			t.Errorf("profile %v: %q", prof, got)
		}
	}
	for _, prof := range []colorprofile.Profile{colorprofile.NoTTY, colorprofile.ASCII} {
		got, _ := Format([]byte(`{"a":1}`), Options{Indent: 2, Colors: &th.JSON, Profile: prof})
		if strings.Contains(string(got), "\x1b") {
			t.Errorf("profile %v coloured: %q", prof, got)
		}
	}
}

func TestColouredError(t *testing.T) {
	th := themes.Dark()
	h := NewHighlighter(&th.JSON, colorprofile.TrueColor)
	got, err := Format([]byte("[1,\x1b]0;pwned\x07"), Options{Indent: 2, Highlighter: h})
	if err == nil {
		t.Fatal("no error")
	}
	s := string(got)
	if !strings.Contains(s, h.sgr[clError]+"\\x1b]0;pwned\\x07"+sgrReset+"\n") {
		t.Errorf("error tail: %q", s)
	}
	assertTerminalSafe(t, stripSGR(s), true)
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	f.n++
	return 0, errors.New("disk full")
}

func TestIOErrors(t *testing.T) {
	big := []byte("[" + strings.Repeat(`"xxxxxxxxxxxxxxxx",`, 20000) + "1]")
	fw := &failWriter{}
	if err := JSONBytes(fw, big, Options{Indent: 2}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("write error = %v", err)
	}
	if fw.n != 1 {
		t.Errorf("wrote %d times after an error", fw.n)
	}
	r := io.MultiReader(strings.NewReader(`[1,2`), iotest.ErrReader(errors.New("conn reset")))
	var b bytes.Buffer
	if err := JSON(&b, r, Options{Indent: 2}); err == nil || !strings.Contains(err.Error(), "conn reset") {
		t.Errorf("read error = %v", err)
	}
}

func TestLongTokensStream(t *testing.T) {
	long := strings.Repeat("ab\u00e9\u65e5", 100000)
	in := `{"` + long + `":"` + long + `","n":` + strings.Repeat("7", 200000) + `}`
	var b bytes.Buffer
	if err := JSON(&b, iotest.HalfReader(strings.NewReader(in)), Options{Indent: 2}); err != nil {
		t.Fatal(err)
	}
	v1, err1 := decodeNumber([]byte(in))
	v2, err2 := decodeNumber(b.Bytes())
	if err1 != nil || err2 != nil {
		t.Fatal("decode failed")
	}
	if !reflect.DeepEqual(v1, v2) {
		t.Error("value changed")
	}
}

func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && s[j] != 'm' {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func decodeNumber(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}
