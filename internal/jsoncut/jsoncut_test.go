package jsoncut

import (
	"strings"
	"testing"
)

func cutAll(b []byte, size, most int) []Part {
	var parts []Part
	Cut(b, 1, size, most, make(chan struct{}), func(p Part) bool {
		parts = append(parts, p)
		return true
	})
	return parts
}

func TestCutFollowsStringsAndBrackets(t *testing.T) {
	doc := `[{"a":"x,]}"},"\"],[",[1,2],{"b":[3,{"c":"\\"}]},"e\\\\",4]`
	parts := cutAll([]byte(doc), 0, 1<<20)
	var got []string
	for _, p := range parts {
		got = append(got, doc[p.At:p.End])
	}
	want := []string{`{"a":"x,]}"}`, `"\"],["`, `[1,2]`, `{"b":[3,{"c":"\\"}]}`, `"e\\\\"`, `4`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("parts %q, want %q", got, want)
	}
	if !parts[0].First || parts[1].First || !parts[len(parts)-1].Last || doc[parts[len(parts)-1].End] != ']' {
		t.Fatalf("first/last marks wrong: %+v", parts)
	}
}

func TestCutJoinsUpToSizeAndStopsAtTheBound(t *testing.T) {
	doc := "[" + strings.Repeat(`"abcdefgh",`, 100) + `1]`
	parts := cutAll([]byte(doc), 50, 1000)
	for _, p := range parts[:len(parts)-1] {
		if n := p.End - p.At; n < 50 || n > 70 || doc[p.End] != ',' {
			t.Fatalf("a part of %d bytes ending at %q", n, doc[p.End])
		}
	}
	huge := "[1,[" + strings.Repeat(`"x",`, 1000) + "2]]"
	parts = cutAll([]byte(huge), 1, 100)
	if last := parts[len(parts)-1]; !last.Stop || last.At != 3 {
		t.Fatalf("past the bound: %+v", last)
	}
	for _, bad := range []string{`[1,2,"abc`, `[1,[2,3]`, `[1,2`} {
		parts = cutAll([]byte(bad), 0, 100)
		if last := parts[len(parts)-1]; !last.Stop {
			t.Fatalf("%s: the cut did not stop: %+v", bad, parts)
		}
	}
}

func TestCutEndsWhenAsked(t *testing.T) {
	doc := []byte("[" + strings.Repeat(`1,`, 1000) + "1]")
	n := 0
	Cut(doc, 1, 0, 100, make(chan struct{}), func(Part) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("emit called %d times after returning false at 3", n)
	}
	quit := make(chan struct{})
	close(quit)
	n = 0
	Cut(doc, 1, 0, 100, quit, func(Part) bool { n++; return true })
	if n != 1 {
		t.Fatalf("emit called %d times with quit closed", n)
	}
}

func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\"b"`, `"a\\"`, `"\\\"x"`, `"`, `"abc\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		j := StringEnd(b, 0)
		// The reference: walk byte by byte, a backslash taking the next.
		want := -1
		for k := 1; k < len(b); k++ {
			if b[k] == '\\' {
				k++
				continue
			}
			if b[k] == '"' {
				want = k
				break
			}
		}
		if j != want {
			t.Fatalf("StringEnd(%q) = %d, want %d", b, j, want)
		}
	})
}
