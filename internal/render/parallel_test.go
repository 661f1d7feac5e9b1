package render

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/internal/jsoncut"
	"github.com/ecoPrimals/primalscope/themes"
)

// onePrinter prints data with the one printer only (the reference).
func onePrinter(data []byte, opts Options) ([]byte, error) {
	var b bytes.Buffer
	p := newPrinter(&b, opts)
	p.buf, p.end, p.eof = data, len(data), true
	err := p.run()
	return b.Bytes(), err
}

// partsPrinter prints data as JSONBytes does for a large document, with n
// part printers and the part sizes given.
func partsPrinter(data []byte, opts Options, n, size, most int) ([]byte, error) {
	var b bytes.Buffer
	p := newPrinter(&b, opts)
	p.buf, p.end, p.eof = data, len(data), true
	err := p.finish(p.parallel(n, size, most))
	return b.Bytes(), err
}

func partsOptions() map[string]Options {
	th := themes.Dark()
	return map[string]Options{
		"plain":           {Indent: DefaultIndent},
		"compact":         {Indent: 0},
		"colour":          {Indent: DefaultIndent, Colors: &th.JSON, Profile: colorprofile.TrueColor},
		"colour terminal": {Indent: 4, Colors: &th.JSON, Profile: colorprofile.ANSI256, Terminal: true},
	}
}

// samePrint fails t unless the parts printer writes what the one printer
// writes for data, byte for byte, and returns the same error.
func samePrint(t *testing.T, name string, data []byte, opts Options, n, size, most int) {
	t.Helper()
	want, werr := onePrinter(data, opts)
	got, gerr := partsPrinter(data, opts, n, size, most)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s (n=%d size=%d most=%d): output differs at byte %d of %d/%d:\n got …%q\nwant …%q",
			name, n, size, most, i, len(got), len(want), got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
	}
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s (n=%d size=%d most=%d): error %v, want %v", name, n, size, most, gerr, werr)
	}
}

func TestPartsPrintAsTheOnePrinter(t *testing.T) {
	docs := map[string]string{
		"array of objects":     `[{"a":1,"b":[true,false,null]},{"s":"x,y]}{[","e":"\"],\\"},{"n":-1.5e3}, 7 ,"last"]`,
		"object":               `{"k1":[1,2,3],"k\"2":{"x":"}"},"k3":"\\\\","k4":[],"k5":{}}` + "\n",
		"nested deep":          `[[[[1,2],[3,4]],[[5,6]]],{"a":{"b":{"c":[1,{"d":2}]}}}]`,
		"newlines and tabs":    "[\n\t1 ,\r\n 2,\n\n{\"a\" :\t3}\n]\n",
		"escapes and unicode":  `["\u001b[31m","é","\ud83d\ude00","‮rtl","a\u2028b","\\"]`,
		"two values":           `[1,2,3] {"a":[4,5]}` + "\n" + `"tail"`,
		"empty array":          `[]`,
		"empty object":         ` {} `,
		"scalar":               `"just a string"`,
		"wrong closer":         `[1,2,3}`,
		"trailing comma":       `[1,2,3,]`,
		"double comma":         `[1,2,,3,4]`,
		"unterminated string":  `[1,2,"abc`,
		"unterminated array":   `[1,2,[3,4`,
		"garbage after":        `[1,2,3] ]`,
		"bad number":           `[1,2,01,3]`,
		"bad literal":          `[true,tru,false]`,
		"missing colon":        `{"a":1,"b" 2}`,
		"control in string":    "[\"a\x01b\",1]",
		"invalid utf8":         "[\"\xff\xfe\",\"ok\"]",
		"closer in first part": `[] ,1]`,
		"object key not str":   `{"a":1,2:3}`,
		"escaped backslashes":  `["\\\\\\\\\"","x\\","y"]`,
		"brackets in strings":  `[{"a":"[[[["},{"b":"]]]]"},{"c":"{{"}]`,
	}
	for name, doc := range docs {
		for oname, opts := range partsOptions() {
			for _, n := range []int{2, 3} {
				for _, size := range []int{0, 1, 3, 8, 1 << 20} {
					for _, most := range []int{4, 16, 1 << 20} {
						samePrint(t, name+"/"+oname, []byte(doc), opts, n, size, most)
					}
				}
			}
		}
	}
}

// bigDoc is an array of n small objects like the 10 MB benchmark's.
func bigDoc(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"n-%d \"q\" é","ok":%v,"load":%.3f,"tags":["a","b"],"note":null,"nest":{"x":[%d,{"y":"]"}]}}`,
			i, r.IntN(1e6), r.IntN(2) == 0, r.Float64()*100, r.IntN(100))
	}
	b.WriteString("]\n")
	return b.Bytes()
}

func TestPartsPrintALargeDocumentAsTheOnePrinter(t *testing.T) {
	doc := bigDoc(30000, 1) // about 4 MB: JSONBytes prints it in parts
	if len(doc) < parallelMin {
		t.Fatalf("the document is %d bytes, under parallelMin", len(doc))
	}
	for oname, opts := range partsOptions() {
		want, werr := onePrinter(doc, opts)
		var got bytes.Buffer
		gerr := JSONBytes(&got, doc, opts)
		if werr != nil || gerr != nil || !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%s: JSONBytes differs from the one printer (errors %v, %v; %d vs %d bytes)", oname, gerr, werr, got.Len(), len(want))
		}
		// The same document broken near its end, and in its middle.
		for _, at := range []int{len(doc) - 3, len(doc) / 2} {
			bad := bytes.Clone(doc)
			bad[at] = '}'
			samePrint(t, oname+" broken", bad, opts, 2, partSize, maxPart)
		}
	}
}

func TestPartsAreCutAndBounded(t *testing.T) {
	doc := bigDoc(30000, 2)
	var parts []jsoncut.Part
	jsoncut.Cut(doc, 1, partSize, maxPart, make(chan struct{}), func(pt jsoncut.Part) bool {
		parts = append(parts, pt)
		return true
	})
	if len(parts) < len(doc)/(2*partSize) {
		t.Fatalf("%d parts for %d bytes: the document was not cut", len(parts), len(doc))
	}
	last := parts[len(parts)-1]
	if !last.Last || last.Stop || doc[last.End] != ']' {
		t.Fatalf("the last part does not end at the closer: %+v", last)
	}
	for i, pt := range parts[:len(parts)-1] {
		if doc[pt.End] != ',' || pt.End-pt.At < partSize || pt.End-pt.At > maxPart {
			t.Fatalf("part %d: %d..%d (%q)", i, pt.At, pt.End, doc[pt.End])
		}
	}
	// One element larger than the bound: the cutter stops at once, and
	// the one printer prints the rest, streaming.
	huge := []byte(`[1,[` + strings.Repeat(`"x",`, 600000) + `2]]`)
	parts = parts[:0]
	jsoncut.Cut(huge, 1, 8, 1<<10, make(chan struct{}), func(pt jsoncut.Part) bool {
		parts = append(parts, pt)
		return true
	})
	if n := len(parts); n == 0 || !parts[n-1].Stop {
		t.Fatalf("a part past the bound did not stop the cutter: %d parts", n)
	}
	samePrint(t, "huge element", huge, Options{Indent: 2}, 2, 8, 1<<10)
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n--; w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestPartsPrintersEndWithTheCall(t *testing.T) {
	doc := bigDoc(30000, 3)
	base := runtime.NumGoroutine()
	for _, w := range []*failingWriter{{n: 0}, {n: 3}, {n: 1 << 30}} {
		err := JSONBytes(w, doc, Options{Indent: 2})
		if w.n < 0 && (err == nil || !strings.Contains(err.Error(), "disk full")) {
			t.Fatalf("a failing writer: %v", err)
		}
	}
	bad := bytes.Clone(doc)
	bad[len(bad)/3] = '"' // an unterminated string from there
	_ = JSONBytes(&failingWriter{n: 1 << 30}, bad, Options{Indent: 2})
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines after the calls, %d before", n, base)
	}
}

func FuzzPartsPrintAsTheOnePrinter(f *testing.F) {
	f.Add([]byte(`[{"a":1},{"b":"x,]"},3]`), uint8(2), uint8(8))
	f.Add([]byte(`{"a":[1,2],"b":{"c":"\"}"}}`), uint8(1), uint8(4))
	f.Add([]byte(`[1,2,,3]`), uint8(0), uint8(3))
	f.Add([]byte(`[1,"abc`), uint8(1), uint8(100))
	f.Add([]byte(`[[1,2],[3,4]] [5]`), uint8(3), uint8(5))
	th := themes.Dark()
	colour := Options{Indent: 2, Colors: &th.JSON, Profile: colorprofile.TrueColor, Terminal: true}
	f.Fuzz(func(t *testing.T, doc []byte, size, most uint8) {
		if len(doc) > 1<<16 {
			return
		}
		samePrint(t, "plain", doc, Options{Indent: 2}, 2, int(size), int(most))
		samePrint(t, "colour", doc, colour, 3, int(size), int(most)+int(size))
	})
}
