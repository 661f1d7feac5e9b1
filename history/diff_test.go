package history

import (
	"slices"
	"strconv"
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

// changeStrings renders changes as "kind path old new" for comparison.
func changeStrings(cs []Change) []string {
	var s []string
	for _, ch := range cs {
		s = append(s, string(ch.Kind)+" "+ch.Path+" "+string(ch.Old)+" "+string(ch.New))
	}
	return s
}

// TestDiffAlignsArrays: arrays are aligned by their elements, so an
// insertion or a removal anywhere is one change, not a change of every
// element after it.
func TestDiffAlignsArrays(t *testing.T) {
	items := func(ids ...int) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, `{"id":`+strconv.Itoa(id)+`,"name":"n`+strconv.Itoa(id)+`"}`)
		}
		return `{"items":[` + strings.Join(parts, ",") + `]}`
	}
	cases := []struct {
		name, a, b string
		want       []string
	}{
		{"insert at the front", items(1, 2, 3, 4, 5), items(0, 1, 2, 3, 4, 5),
			[]string{`added .items[0]  {"id":0,"name":"n0"}`}},
		{"insert in the middle", `[1,2,3,4,5,6]`, `[1,2,3,9,4,5,6]`, []string{"added .[3]  9"}},
		{"remove at the front", `["a","b","c","d"]`, `["b","c","d"]`, []string{`removed .[0] "a" `}},
		{"insert and remove", `[1,2,3,4,5,6,7,8]`, `[0,1,2,3,5,6,7,8]`,
			[]string{"added .[0]  0", "removed .[3] 4 "}},
		{"changed in place", items(1, 2, 3), `{"items":[{"id":1,"name":"n1"},{"id":2,"name":"two"},{"id":3,"name":"n3"}]}`,
			[]string{`changed .items[1].name "n2" "two"`}},
		{"insert before a change", `[{"a":1},{"b":2}]`, `[{"z":0},{"a":1},{"b":3}]`,
			[]string{`added .[0]  {"z":0}`, "changed .[2].b 2 3"}},
		{"numbers by value", `[1,2.0,3]`, `[0,1.0,2,3e0]`, []string{"added .[0]  0"}},
		{"nested arrays", `{"m":[[1,2],[3,4]]}`, `{"m":[[0,1,2],[3,4]]}`, []string{"added .m[0][0]  0"}},
		{"key order", `[{"a":1,"b":2},3]`, `[4,{"b":2,"a":1},3]`, []string{"added .[0]  4"}},
		{"swap", `[1,2]`, `[2,1]`, []string{"removed .[0] 1 ", "added .[1]  1"}},
	}
	for _, c := range cases {
		got, err := Diff([]byte(c.a), []byte(c.b))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if s := changeStrings(got); strings.Join(s, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, s, c.want)
		}
	}
}

// TestDiffTooLargeToAlign: arrays whose differing middles exceed the
// alignment bound are compared index by index after an Unaligned note that
// FormatDiff shows; a long array with one insertion is still aligned (its
// common beginning and end cost nothing).
func TestDiffTooLargeToAlign(t *testing.T) {
	n := 3000 // 3000 x 3000 differing elements > maxAlignCells
	var a, b strings.Builder
	a.WriteString("[")
	b.WriteString("[")
	for i := 0; i < n; i++ {
		if i > 0 {
			a.WriteString(",")
			b.WriteString(",")
		}
		a.WriteString(strconv.Itoa(2 * i))   // evens
		b.WriteString(strconv.Itoa(2*i + 1)) // odds: nothing in common
	}
	a.WriteString("]")
	b.WriteString("]")
	got, err := Diff([]byte(a.String()), []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 || got[0].Kind != Unaligned || got[0].Path != "." || !strings.Contains(got[0].Note, "too large to align") {
		t.Fatalf("got %d changes, first %+v", len(got), got[0])
	}
	if got[1].Kind != Changed || got[1].Path != ".[0]" {
		t.Errorf("after the note: %+v", got[1])
	}
	var out strings.Builder
	FormatDiff(&out, got[:2], DiffFormat{})
	if !strings.HasPrefix(out.String(), "! .: 3000 and 3000 elements differ: too large to align") {
		t.Errorf("FormatDiff: %q", out.String())
	}

	big := make([]string, 200000)
	for i := range big {
		big[i] = strconv.Itoa(i)
	}
	old := "[" + strings.Join(big, ",") + "]"
	edited := slices.Clone(big)
	edited[199990] = "-1"
	ins := "[" + `"new",` + strings.Join(edited, ",") + "]"
	got, err = Diff([]byte(old), []byte(ins))
	if err != nil {
		t.Fatal(err)
	}
	if s := changeStrings(got); len(s) != 2 || s[0] != `added .[0]  "new"` || s[1] != "changed .[199991] 199990 -1" {
		t.Errorf("an insertion at the front and a change at the end of 200,000 elements: %q", s)
	}
}
