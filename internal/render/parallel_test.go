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

// partsPrinter prints data as JSONBytes does with cuts, with n part
// printers and parts of at most most bytes.
func partsPrinter(data []byte, opts Options, n int, cuts []int, most int) ([]byte, error) {
	var b bytes.Buffer
	p := newPrinter(&b, opts)
	p.buf, p.end, p.eof = data, len(data), true
	err := p.finish(p.parallel(n, cuts, most))
	return b.Bytes(), err
}

// elementCommas returns the commas between the elements of the container
// doc holds, one at least every bytes after the last (what ipc's scan
// notes), following strings and brackets; on input that is not one
// container it returns what it found.
func elementCommas(doc []byte, every int) []int {
	var cuts []int
	depth, last, inStr := 0, 0, false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch {
		case inStr && c == '\\':
			i++
		case inStr:
			inStr = c != '"'
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1 && i-last >= every:
			cuts = append(cuts, i)
			last = i
		}
	}
	return cuts
}

// someCommas returns every comma whose index k makes (k/3+seed)%m == 0,
// at any depth, in strings too: cuts that are often not between elements.
func someCommas(doc []byte, seed, m int) []int {
	var cuts []int
	for k, c := range doc {
		if c == ',' && (k/3+seed)%m == 0 {
			cuts = append(cuts, k)
		}
	}
	return cuts
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
func samePrint(t *testing.T, name string, data []byte, opts Options, n int, cuts []int, most int) {
	t.Helper()
	want, werr := onePrinter(data, opts)
	got, gerr := partsPrinter(data, opts, n, cuts, most)
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s (n=%d cuts=%v most=%d): output differs at byte %d of %d/%d:\n got …%q\nwant …%q",
			name, n, firstCuts(cuts), most, i, len(got), len(want), got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
	}
	if fmt.Sprint(gerr) != fmt.Sprint(werr) {
		t.Fatalf("%s (n=%d cuts=%v most=%d): error %v, want %v", name, n, firstCuts(cuts), most, gerr, werr)
	}
}

func firstCuts(cuts []int) []int { return cuts[:min(len(cuts), 20)] }

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
		d := []byte(doc)
		cutsets := [][]int{elementCommas(d, 0), elementCommas(d, 3), elementCommas(d, 8), someCommas(d, 0, 1), someCommas(d, 1, 2), {1}, {len(d) - 1}}
		for oname, opts := range partsOptions() {
			for _, n := range []int{2, 3} {
				for _, cuts := range cutsets {
					for _, most := range []int{4, 16, 1 << 20} {
						samePrint(t, name+"/"+oname, d, opts, n, cuts, most)
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
	doc := bigDoc(30000, 1) // about 4 MB
	cuts := elementCommas(doc, 128<<10)
	if len(cuts) < 20 {
		t.Fatalf("%d cuts", len(cuts))
	}
	for oname, opts := range partsOptions() {
		want, werr := onePrinter(doc, opts)
		var got bytes.Buffer
		opts.Cuts = cuts
		gerr := JSONBytes(&got, doc, opts)
		if werr != nil || gerr != nil || !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%s: JSONBytes with cuts differs from the one printer (errors %v, %v; %d vs %d bytes)", oname, gerr, werr, got.Len(), len(want))
		}
		opts.Cuts = nil
		// The same document broken near its end and in its middle, and
		// cut where it should not be.
		for _, at := range []int{len(doc) - 3, len(doc) / 2} {
			bad := bytes.Clone(doc)
			bad[at] = '}'
			samePrint(t, oname+" broken", bad, opts, 2, cuts, maxPart)
		}
		samePrint(t, oname+" cut in strings", doc, opts, 2, someCommas(doc, 0, 97), maxPart)
	}
	// An element larger than the bound: the one printer prints from it on,
	// streaming.
	huge := []byte(`[1,[` + strings.Repeat(`"x",`, 60000) + `2],3,4]`)
	samePrint(t, "huge element", huge, Options{Indent: 2}, 2, elementCommas(huge, 0), 1<<10)
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
	cuts := elementCommas(doc, 128<<10)
	base := runtime.NumGoroutine()
	for _, w := range []*failingWriter{{n: 0}, {n: 3}, {n: 1 << 30}} {
		err := JSONBytes(w, doc, Options{Indent: 2, Cuts: cuts})
		if w.n < 0 && (err == nil || !strings.Contains(err.Error(), "disk full")) {
			t.Fatalf("a failing writer: %v", err)
		}
	}
	bad := bytes.Clone(doc)
	bad[len(bad)/3] = '"' // an unterminated string from there
	_ = JSONBytes(&failingWriter{n: 1 << 30}, bad, Options{Indent: 2, Cuts: cuts})
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
	f.Fuzz(func(t *testing.T, doc []byte, sel, most uint8) {
		if len(doc) > 1<<16 {
			return
		}
		samePrint(t, "plain", doc, Options{Indent: 2}, 2, elementCommas(doc, int(sel)), int(most))
		samePrint(t, "colour", doc, colour, 3, someCommas(doc, int(sel), 1+int(sel%4)), int(most)+int(sel))
	})
}

// TestNoSequenceRepeated prints a document in every theme and profile and
// checks that no SGR sequence follows the same one: classes a theme draws
// alike (keys and punctuation, often) share one sequence, which the key
// and colon of every member repeated.
func TestNoSequenceRepeated(t *testing.T) {
	doc := bigDoc(50, 9)
	for _, th := range []themes.Theme{themes.Dark(), themes.Light()} {
		for _, prof := range []colorprofile.Profile{colorprofile.TrueColor, colorprofile.ANSI256, colorprofile.ANSI} {
			out, err := Format(doc, Options{Indent: 2, Colors: &th.JSON, Profile: prof, Cuts: elementCommas(doc, 64)})
			if err != nil {
				t.Fatal(err)
			}
			last := ""
			for rest := string(out); ; {
				i := strings.Index(rest, "\x1b[")
				if i < 0 {
					break
				}
				j := strings.IndexByte(rest[i:], 'm')
				if j < 0 {
					t.Fatalf("an unterminated sequence: %q", rest[i:])
				}
				seq := rest[i : i+j+1]
				if seq == last {
					t.Fatalf("%s %v: %q follows itself: …%q", th.Name, prof, seq, rest[max(0, i-30):i+j+1])
				}
				last, rest = seq, rest[i+j+1:]
			}
		}
	}
}
