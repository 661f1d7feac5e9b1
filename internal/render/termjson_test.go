package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/themes"
)

// hostileDoc holds one string of every class, as a peer would send them:
// raw in the JSON text (valid JSON: only C0 controls must be escaped).
const hostileDoc = "{\"c1\":\"a\u009b31mb\u009d0;t\u009c\",\"bidi\":\"evil\u202etxt\u2066x\u2069\"," +
	"\"zw\":\"a\u200bb\u2060c\u3164d\u115fe\ufeff\",\"tag\":\"t\U000e0041\",\"sep\":\"l\u2028\"," +
	"\"k\u202e\":[\"ok 👩\u200d💻 ❤\ufe0f\"],\"esc\":\"\\u001b[2J\"}"

func TestPrinterTerminalEscapesEveryClass(t *testing.T) {
	th := themes.Dark()
	want, err := decodeAll([]byte(hostileDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []Options{
		{Indent: 2, Terminal: true},
		{Indent: 0, Terminal: true},
		{Indent: 2, Terminal: true, Colors: &th.JSON, Profile: colorprofile.TrueColor},
	} {
		out, err := Format([]byte(hostileDoc), opts)
		if err != nil {
			t.Fatal(err)
		}
		plain := stripSGR(string(out))
		assertNoUnsafe(t, "printer", plain, true)
		got, err := decodeAll([]byte(plain))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("values changed (%v):\n%q\n%#v\n%#v", err, plain, got, want)
		}
		for _, esc := range []string{`\u009b`, `\u202e`, `\u2066`, `\u200b`, `\u2060`, `\u3164`, `\u115f`, `\ufeff`, `\udb40\udc41`, `\u2028`} {
			if !strings.Contains(plain, esc) {
				t.Errorf("no %s in %q", esc, plain)
			}
		}
		if !strings.Contains(plain, "👩\u200d💻 ❤\ufe0f") {
			t.Errorf("an emoji sequence was broken: %q", plain)
		}
	}
	// Without Terminal (a pipe), only the C1 controls are escaped, as before.
	out, err := Format([]byte(hostileDoc), Options{Indent: 0})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "evil\u202etxt") || !strings.Contains(string(out), "\u3164") {
		t.Errorf("the pipe output changed: %q", out)
	}
}

func TestTerminalJSON(t *testing.T) {
	out := TerminalJSON([]byte(hostileDoc))
	assertNoUnsafe(t, "TerminalJSON", string(out), true)
	want, _ := decodeAll([]byte(hostileDoc))
	got, err := decodeAll(out)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("values changed (%v): %q", err, out)
	}
	// The same escapes as the printer's compact output.
	compact, _ := Format([]byte(hostileDoc), Options{Indent: 0, Terminal: true})
	if string(out)+"\n" != string(compact) {
		t.Errorf("TerminalJSON and the printer differ:\n%q\n%q", out, compact)
	}
	for _, c := range []struct{ in, want string }{
		{"{\"a\":\r\n1}", "{\"a\": \n1}"},
		{"[\"\x1b\x00\n\t\"]", `["\u001b\u0000\n\t"]`},
		{"[\"\x7f\xff\"]", `["\u007f\ufffd"]`},
		{"[\"q\\\"\u202e\"]", `["q\"\u202e"]`},
		{"[\"\\\\\"]\u202e\x1b", `["\\"]\u202e\x1b`},
		{"[\"é\u200d\u200d\"]", "[\"é\u200d\\u200d\"]"},
	} {
		if got := string(TerminalJSON([]byte(c.in))); got != c.want {
			t.Errorf("TerminalJSON(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(AppendTerminalJSON([]byte("x"), []byte(c.in))); got != "x"+c.want {
			t.Errorf("AppendTerminalJSON(%q) = %q", c.in, got)
		}
	}
	clean := []byte(`{"a":[1,"日本 ✓ 👩‍💻"],"b":"\u202e"}` + "\n")
	if out := TerminalJSON(clean); &out[0] != &clean[0] || !bytes.Equal(out, clean) {
		t.Error("clean JSON was copied or changed")
	}
	if n := testing.AllocsPerRun(100, func() { _ = TerminalJSON(clean) }); n != 0 {
		t.Errorf("%v allocs for clean JSON", n)
	}
	if !json.Valid(TerminalJSON([]byte(hostileDoc))) {
		t.Error("not valid JSON")
	}
}
