package history

import (
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	cases := []struct {
		name, a, b string
		want       []string // "kind path old new"
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, nil},
		{"number forms", `{"n":1}`, `{"n":1.0}`, nil},
		{"changed leaf", `{"a":{"b":[1,2,{"c":true}]}}`, `{"a":{"b":[1,2,{"c":false}]}}`,
			[]string{"changed .a.b[2].c true false"}},
		{"added and removed", `{"x":1,"y":2}`, `{"y":2,"z":3}`,
			[]string{"removed .x 1 ", "added .z  3"}},
		{"array grows", `[1]`, `[1,2,3]`, []string{"added .[1]  2", "added .[2]  3"}},
		{"array shrinks", `{"l":[1,2]}`, `{"l":[]}`, []string{"removed .l[0] 1 ", "removed .l[1] 2 "}},
		{"type change", `{"a":[1]}`, `{"a":{"0":1}}`, []string{`changed .a [1] {"0":1}`}},
		{"odd key", `{"a b":1}`, `{"a b":2}`, []string{`changed .["a b"] 1 2`}},
		{"root scalar", `1`, `"1"`, []string{`changed . 1 "1"`}},
		{"old absent", ``, `{"a":1}`, []string{`added .  {"a":1}`}},
		{"new absent", `null`, ``, []string{`removed . null `}},
		{"null vs missing", `{"a":null}`, `{}`, []string{"removed .a null "}},
	}
	for _, c := range cases {
		got, err := Diff([]byte(c.a), []byte(c.b))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var s []string
		for _, ch := range got {
			s = append(s, string(ch.Kind)+" "+ch.Path+" "+string(ch.Old)+" "+string(ch.New))
		}
		if strings.Join(s, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, s, c.want)
		}
	}
	if _, err := Diff([]byte(`{`), []byte(`{}`)); err == nil {
		t.Error("invalid old accepted")
	}
	if _, err := Diff([]byte(`{}`), []byte(`{} {}`)); err == nil {
		t.Error("trailing data accepted")
	}
}

func TestFormatDiff(t *testing.T) {
	ch, _ := Diff([]byte(`{"a":1,"evil\u001b[2J":"x","s":"\u009b31m"}`), []byte(`{"a":2,"b":"new"}`))
	var plain, color strings.Builder
	FormatDiff(&plain, ch, DiffFormat{})
	FormatDiff(&color, ch, DiffFormat{Color: true})
	p := plain.String()
	for _, want := range []string{"~ .a: 1 → 2\n", `+ .b: "new"`, `- .["evil\u001b[2J"]: "x"`, `- .s: "\u009b31m"`} {
		if !strings.Contains(p, want) {
			t.Errorf("plain output lacks %q:\n%s", want, p)
		}
	}
	if strings.ContainsAny(p, "\x1b\u009b") {
		t.Errorf("plain output holds raw control characters: %q", p)
	}
	if !strings.Contains(color.String(), "\x1b[32m") || strings.Contains(color.String(), "\u009b") {
		t.Errorf("colour output: %q", color.String())
	}
	var none strings.Builder
	FormatDiff(&none, nil, DiffFormat{})
	if none.String() != "no changes\n" {
		t.Errorf("empty diff: %q", none.String())
	}
	many, _ := Diff([]byte(`[]`), []byte(`[`+strings.Repeat("1,", 300)+`1]`))
	var capped strings.Builder
	FormatDiff(&capped, many, DiffFormat{MaxChanges: 5, MaxValue: 3})
	if strings.Count(capped.String(), "\n") != 6 || !strings.Contains(capped.String(), "296 more") {
		t.Errorf("capped output:\n%s", capped.String())
	}
}
