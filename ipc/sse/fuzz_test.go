package sse_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// FuzzReader feeds arbitrary streams to the parser: it must never panic,
// always end, and keep every event within the limits.
func FuzzReader(f *testing.F) {

	f.Fuzz(func(t *testing.T, in []byte) {
		const maxLine, maxEvent = 64, 256
		p := sse.NewReader(bytes.NewReader(in), maxLine, maxEvent)
		for i := 0; i <= len(in)+1; i++ {
			ev, err := p.Next()
			if err != nil {
				var le *sse.LineTooLongError
				var ee *sse.EventTooLargeError
				if !errors.Is(err, io.EOF) && !errors.As(err, &le) && !errors.As(err, &ee) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(ev.Data) > maxEvent || ev.Type == "" {
				t.Fatalf("bad event %+v", ev)
			}
		}
		t.Fatal("more events than bytes")
	})
}
