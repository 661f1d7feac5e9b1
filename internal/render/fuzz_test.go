package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/themes"
)

// decodeAll decodes every value of a JSON stream, keeping numbers as written.
func decodeAll(b []byte) ([]any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var vs []any
	for {
		var v any
		err := d.Decode(&v)
		if errors.Is(err, io.EOF) {
			return vs, nil
		}
		if err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
}

func checkSafe(t *testing.T, what string, s []byte, multiline bool) {
	t.Helper()
	if !utf8.Valid(s) {
		t.Fatalf("%s: invalid UTF-8 in output %q", what, s)
	}
	for _, r := range string(s) {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Fatalf("%s: control %U in output %q", what, r, s)
		}
	}
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2.5,-3e10,true,false,null,"x\u001b"],"b":{}}}`,
		`[]`, `{}`, `""`, `0`, `-0.0e+0`, "1 2\n3",
		"{\"a\":\"\x1b]52;c;AAAA\x07\"}", "\"\xff\xc2\x9b\"", `[1,]`, `{"a" 1}`, `[`, `"\u12`,
	} {
		f.Add([]byte(s))
	}
	th := themes.Dark()
	hl := NewHighlighter(&th.JSON, colorprofile.TrueColor)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, indent := range []int{0, 2} {
			var plain bytes.Buffer
			perr := JSON(&plain, bytes.NewReader(data), Options{Indent: indent})
			var se *SyntaxError
			if perr != nil && !errors.As(perr, &se) {
				t.Fatalf("error is not a SyntaxError: %v", perr)
			}
			if se != nil && (se.Offset < 0 || se.Offset > int64(len(data)) || se.Line < 1 || se.Column < 1) {
				t.Fatalf("bad error position %+v for %d bytes", se, len(data))
			}
			checkSafe(t, "plain", plain.Bytes(), true)
			// The in-memory path prints the same.
			mem, merr := Format(data, Options{Indent: indent})
			if !bytes.Equal(mem, plain.Bytes()) || (merr == nil) != (perr == nil) {
				t.Fatalf("Format and JSON differ: %q vs %q", mem, plain.Bytes())
			}
			// Coloured output is the plain output plus SGR sequences.
			col, cerr := Format(data, Options{Indent: indent, Highlighter: hl})
			if (cerr == nil) != (perr == nil) || stripSGR(string(col)) != plain.String() {
				t.Fatalf("coloured output differs from plain:\n%q\n%q", stripSGR(string(col)), plain.Bytes())
			}
			if json.Valid(data) {
				if perr != nil {
					t.Fatalf("valid JSON rejected: %v", perr)
				}
				want, err1 := decodeAll(data)
				got, err2 := decodeAll(plain.Bytes())
				if err1 != nil || err2 != nil {
					t.Fatalf("decode: %v / %v; output %q", err1, err2, plain.Bytes())
				}
				if !reflect.DeepEqual(want, got) {
					t.Fatalf("value changed: %#v -> %#v", want, got)
				}
			}
			// For a terminal: the same but for escapes; nothing unsafe left.
			term, terr := Format(data, Options{Indent: indent, Terminal: true, Highlighter: hl})
			if (terr == nil) != (perr == nil) {
				t.Fatalf("Terminal changed the verdict: %v vs %v", terr, perr)
			}
			if i := firstUnsafe(stripSGR(string(term)), true); i >= 0 {
				t.Fatalf("Terminal left an unsafe character at %d: %q", i, term)
			}
			if json.Valid(data) {
				want, _ := decodeAll(plain.Bytes())
				got, err := decodeAll([]byte(stripSGR(string(term))))
				if err != nil || !reflect.DeepEqual(want, got) {
					t.Fatalf("Terminal changed the value (%v): %q", err, term)
				}
			}
			// Line keeps the text of every line the printer wrote for a
			// terminal (it escapes what Terminal escapes).
			if perr == nil && indent == 2 {
				termPlain, _ := Format(data, Options{Indent: indent, Terminal: true})
				for _, line := range strings.Split(string(termPlain), "\n") {
					if stripSGR(hl.Line(line)) != line {
						t.Fatalf("Line changed the text of %q", line)
					}
				}
			}
		}
	})
}

// FuzzHighlightLine: whatever a line holds, HighlightLine leaves nothing a
// terminal must not get raw outside its own SGR sequences, and changes no
// text of a line that is already safe. (Sanitize itself is fuzzed in
// textsafe.)
func FuzzHighlightLine(f *testing.F) {
	for _, s := range []string{
		"plain", "\x1b]52;c;cm0gLXJmIH4=\x07", "\x1b[2J\x1b[H", "\x1b]8;;http://x/\x1b\\y\x1b]8;;\x1b\\",
		"\x1b]0;title\x07", "\x9b31m", "\u009b31m", "a\nb\tc\r", "\xff\xfe", "日本 ✓", "\x00\x7f",
		`  "k\u202e": "v\u200b",`,
	} {
		f.Add(s)
	}
	th := themes.Dark()
	f.Fuzz(func(t *testing.T, s string) {
		line := stripSGR(HighlightLine(s, &th.JSON, colorprofile.ANSI256))
		checkSafe(t, "HighlightLine", []byte(line), false)
		if i := firstUnsafe(line, false); i >= 0 {
			t.Fatalf("HighlightLine left an unsafe character at %d: %q", i, line)
		}
		if safe := Sanitize(s); safe == s && line != s {
			t.Fatalf("HighlightLine changed safe text %q to %q", s, line)
		}
	})
}

// FuzzTerminalJSON: TerminalJSON leaves nothing unsafe for a terminal, and
// valid JSON stays valid with the same values.
func FuzzTerminalJSON(f *testing.F) {
	for _, s := range []string{
		hostileDoc, `{"a":[1,"x"]}`, "{\"a\":\r\n1}", "[\"\x1b\x00\\\"\u202e\"]", "\"\xff\xc2\x9b\"",
		"[\"👩\u200d💻\",\"a\u200d\"]", "\"\\", "\u202e[]\x1b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out := TerminalJSON(data)
		if i := firstUnsafe(string(out), true); i >= 0 {
			t.Fatalf("unsafe character at %d: %q -> %q", i, data, out)
		}
		if !bytes.Equal(AppendTerminalJSON(nil, data), out) {
			t.Fatalf("AppendTerminalJSON and TerminalJSON differ for %q", data)
		}
		if !json.Valid(data) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("not valid JSON: %q -> %q", data, out)
		}
		want, err1 := decodeAll(data)
		got, err2 := decodeAll(out)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(want, got) {
			t.Fatalf("value changed (%v, %v): %q -> %q", err1, err2, data, out)
		}
		if !bytes.Equal(TerminalJSON(out), out) {
			t.Fatalf("not idempotent: %q", out)
		}
	})
}
