package holon

import (
	"testing"
	"time"
)

func TestJitterWithinTenPercent(t *testing.T) {
	d := 500 * time.Millisecond
	lo, hi := d, d
	for i := 0; i < 10000; i++ {
		j := jitter(d)
		if j < 450*time.Millisecond || j > 550*time.Millisecond {
			t.Fatalf("jitter(%s) = %s", d, j)
		}
		lo, hi = min(lo, j), max(hi, j)
	}
	if hi-lo < 50*time.Millisecond {
		t.Fatalf("no spread: %s..%s", lo, hi)
	}
}

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
