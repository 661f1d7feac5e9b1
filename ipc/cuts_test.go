package ipc

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/sampledoc"
)

// TestLargeResultIsNotedWhereItCanBeCut checks the cuts DecodeMessage notes
// for a large result: ascending commas between the result's own elements
// (each run between them is a whole run of elements), about cutEvery apart;
// none for a small result, or a large one that is not an array or object.
func TestLargeResultIsNotedWhereItCanBeCut(t *testing.T) {
	doc := sampledoc.Answer(4 << 20)
	frame := append(append([]byte(`{"jsonrpc":"2.0","result":`), doc...), `,"id":1}`...)
	m, err := DecodeMessage(frame)
	if err != nil || !bytes.Equal(m.Result, doc) {
		t.Fatalf("decode: %v", err)
	}
	cuts := m.ResultCuts
	if len(cuts) < len(doc)/cutEvery/2 {
		t.Fatalf("%d cuts in %d bytes", len(cuts), len(doc))
	}
	at := 1
	for k, c := range append(cuts, len(doc)-1) {
		if k < len(cuts) && (doc[c] != ',' || c-at < cutEvery-1) {
			t.Fatalf("cut %d at %d: %q, %d bytes after the last", k, c, doc[c], c-at)
		}
		if run := append(append([]byte("["), doc[at:c]...), ']'); !json.Valid(run) {
			t.Fatalf("the run before cut %d is not a run of whole elements", k)
		}
		at = c + 1
	}
	for name, f := range map[string]string{
		"small":  `{"jsonrpc":"2.0","result":[1,2,3],"id":1}`,
		"string": `{"jsonrpc":"2.0","result":"` + string(bytes.Repeat([]byte("x,"), 2<<20)) + `","id":1}`,
	} {
		m, err := DecodeMessage([]byte(f))
		if err != nil || m.ResultCuts != nil {
			t.Fatalf("%s: %v, cuts %v", name, err, m.ResultCuts[:min(3, len(m.ResultCuts))])
		}
	}
}
