package holon

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzInspect checks the envelope inspection on any frame: no panic, the
// fast path and the slow path agree, and a frame Check accepts is a JSON
// object that is a request or a response.
func FuzzInspect(f *testing.F) {
	f.Fuzz(func(t *testing.T, frame []byte) {
		fast := inspect(frame, true)
		slow := inspect(frame, false)
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v\nslow %+v", fast, slow)
		}
		if Check(frame) == nil {
			var m map[string]json.RawMessage
			if json.Unmarshal(frame, &m) != nil || !(fast.IsRequest || fast.IsResponse) || fast.IsRequest == fast.IsResponse {
				t.Fatalf("Check accepted %q", frame)
			}
		}
		if out, ok := strictRequest(frame); ok {
			if err := Check(out); err != nil {
				t.Fatalf("rewrote %q into %q: %v", frame, out, err)
			}
		}
		for _, w := range fast.Warnings {
			for _, r := range w {
				if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
					t.Fatalf("warning carries a control character: %q", w)
				}
			}
		}
	})
}
