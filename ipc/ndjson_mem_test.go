package ipc

import (
	"bytes"
	"io"
	"runtime"
	"testing"
)

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestBigLineHoldsNoSpareBuffer: a large message read through a
// LineFramer holds about its own size, not the whole read buffer it grew
// into (up to twice its size).
func TestBigLineHoldsNoSpareBuffer(t *testing.T) {
	for _, n := range []int{3 << 20, 10 << 20, 10<<20 + 12345} {
		in := append(bytes.Repeat([]byte("x"), n), '\n')
		f := NewLineFramer(bytes.NewReader(in), io.Discard, nil, 0)
		base := liveHeap()
		line, err := f.ReadFrame()
		if err != nil || len(line) != n {
			t.Fatalf("%d: read %d bytes, %v", n, len(line), err)
		}
		f.buf = nil // what the framer keeps for the next lines is not the line's
		now := liveHeap()
		held := now - min(base, now)
		if held > uint64(n+n/4) {
			t.Errorf("a %d-byte line keeps %d bytes alive (%.2f×)", n, held, float64(held)/float64(n))
		}
		runtime.KeepAlive(line)
	}
}
