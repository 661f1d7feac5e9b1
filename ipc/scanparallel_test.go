package ipc

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/sampledoc"
)

// skipBoth checks the value at b[0] as a top-level member's value the way
// skipMemberValue does, with n checkers and the run sizes given, and fails
// t unless the verdict is the one scan's: the same end, or an error both
// ways.
func skipBoth(t *testing.T, name string, b []byte, n, size, most int) {
	t.Helper()
	wantEnd, wantErr := skipValue(b, 0, 1)
	end, ok := false, false
	var gotEnd int
	if len(b) > 0 && (b[0] == '[' || b[0] == '{') {
		gotEnd, ok = skipParallel(b, 0, 2, n, size, most)
		end = ok
	}
	if end && (wantErr != nil || gotEnd != wantEnd) {
		t.Fatalf("%s (n=%d size=%d most=%d): the parallel check accepted up to %d; the one scan: %d, %v", name, n, size, most, gotEnd, wantEnd, wantErr)
	}
}

func TestParallelSkipMatchesTheOneScan(t *testing.T) {
	docs := map[string]string{
		"array":               `[{"a":1,"b":[true,false,null]},{"s":"x,y]}{[","e":"\"],\\"},{"n":-1.5e3}, 7 ,"last"]`,
		"object":              `{"k1":[1,2,3],"k\"2":{"x":"}"},"k3":"\\\\","k4":[],"k5":{}}`,
		"object then more":    `{"a":1,"b":2}, "id": 7}`,
		"whitespace":          "[\n\t1 ,\r\n 2,\n\n{\"a\" :\t3}\n]",
		"empty":               `[]`,
		"empty object":        `{ }`,
		"wrong closer":        `[1,2,3}`,
		"trailing comma":      `[1,2,3,]`,
		"double comma":        `[1,2,,3,4]`,
		"unterminated string": `[1,2,"abc`,
		"unterminated":        `[1,2,[3,4`,
		"bad number":          `[1,2,01,3]`,
		"bad literal":         `[true,tru,false]`,
		"missing colon":       `{"a":1,"b" 2}`,
		"key not a string":    `{"a":1,2:3}`,
		"control in string":   "[\"a\x01b\",1]",
		"bad escape":          `["a\qb",1]`,
		"invalid utf8":        "[\"\xff\",1]",
		"nested wrong closer": `[[1,2},3]`,
		"closer first":        `[],1]`,
		"colon in array":      `[1:2,3]`,
		"comma after key":     `{"a",1}`,
	}
	for name, doc := range docs {
		for _, n := range []int{2, 3} {
			for _, size := range []int{0, 1, 4, 1 << 20} {
				for _, most := range []int{3, 16, 1 << 20} {
					skipBoth(t, name, []byte(doc), n, size, most)
				}
			}
		}
	}
	// Around the depth limit, inside an element: the one scan's bound holds.
	for _, d := range []int{maxScanDepth - 3, maxScanDepth - 2, maxScanDepth - 1, maxScanDepth} {
		doc := "[1," + strings.Repeat("[", d) + strings.Repeat("]", d) + ",2]"
		skipBoth(t, "deep", []byte(doc), 2, 0, 1<<20)
	}
}

func TestParallelSkipChecksALargeResult(t *testing.T) {
	doc := sampledoc.Answer(4 << 20)
	end, ok := skipParallel(doc, 0, 2, 2, scanPartSize, scanMaxPart)
	if !ok || end != len(doc) {
		t.Fatalf("the 4 MB answer: %d, %v (len %d)", end, ok, len(doc))
	}
	// A fault anywhere is found, whichever run it falls in.
	for _, at := range []int{1, len(doc) / 3, len(doc) / 2, len(doc) - 2} {
		bad := bytes.Clone(doc)
		bad[at] = 0x01 // invalid in a string and out of one
		if _, ok := skipParallel(bad, 0, 2, 2, scanPartSize, scanMaxPart); ok {
			t.Fatalf("a control byte at %d was accepted", at)
		}
	}
	// Through the frame decoder: a response holding it decodes, with its
	// result whole.
	frame := append(append([]byte(`{"jsonrpc":"2.0","result":`), doc...), `,"id":1}`...)
	m, err := DecodeMessage(frame)
	if err != nil || !bytes.Equal(m.Result, doc) {
		t.Fatalf("decode: %v (result of %d bytes)", err, len(m.Result))
	}
	frame[len(frame)-9] = '}' // the result's closer spoiled: ] becomes }
	if _, err := DecodeMessage(frame); err == nil {
		t.Fatal("a frame with a spoiled result decoded")
	}
}

func FuzzParallelSkipMatchesTheOneScan(f *testing.F) {
	f.Add([]byte(`[{"a":1},{"b":"x,]"},3]`), uint8(2), uint8(8))
	f.Add([]byte(`{"a":[1,2],"b":{"c":"\"}"}}`), uint8(1), uint8(4))
	f.Add([]byte(`[1,2,,3]`), uint8(0), uint8(3))
	f.Add([]byte(`[1,"abc`), uint8(1), uint8(100))
	f.Fuzz(func(t *testing.T, doc []byte, size, most uint8) {
		if len(doc) > 1<<16 {
			return
		}
		skipBoth(t, "fuzz", doc, 2, int(size), int(most))
		skipBoth(t, "fuzz", doc, 3, int(size), int(size)+int(most))
	})
}
