package holon

import (
	"testing"
)

func TestUnavailableAnswerIsStrict(t *testing.T) {
	for _, id := range []string{`"7"`, `7`} {
		b := unavailable([]byte(id), `lost "quoted"`)
		e := Inspect(b)
		if !e.IsResponse || !e.IsError || string(e.ID) != id {
			t.Fatalf("%s: %+v", b, e)
		}
	}
	if err := Check(unavailable([]byte(`"7"`), "x")); err != nil {
		t.Fatal(err)
	}
}
