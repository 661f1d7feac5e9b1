package sampledoc

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestAnswerIsValidSizedAndTheSameEveryRun(t *testing.T) {
	a := Answer(1 << 20)
	if !json.Valid(a) {
		t.Fatal("the answer is not valid JSON")
	}
	if len(a) < 1<<20 || len(a) > 1<<20+512 {
		t.Fatalf("%d bytes for 1 MiB asked", len(a))
	}
	if !bytes.Equal(a, Answer(1<<20)) {
		t.Fatal("two answers of the same size differ")
	}
	var v []map[string]any
	if err := json.Unmarshal(a, &v); err != nil || len(v) < 1000 {
		t.Fatalf("%d objects, %v", len(v), err)
	}
}
