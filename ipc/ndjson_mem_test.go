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

// TestLinesReadTogetherShareAnAllocation: the lines one read brings share
// an allocation of at most lineGroup bytes (a flood of small
// notifications allocated each on its own: one allocation a
// notification); each is its own bytes (capacity its length, never
// changed by what is read next); a line read alone is allocated alone,
// so it holds nothing more.
func TestLinesReadTogetherShareAnAllocation(t *testing.T) {
	const n = 500
	var in []byte
	for i := range n {
		in = append(in, `{"jsonrpc":"2.0","method":"telemetry.tick","params":{"seq":`...)
		in = append(in, byte('0'+i%10))
		in = append(in, "}}\n"...)
	}
	var kept []byte
	f := NewLineFramer(bytes.NewReader(in), io.Discard, nil, 0)
	f.ReadFrame() // the buffer is allocated
	// AllocsPerRun runs it once more than asked: n-2 lines and 1.
	allocs := testing.AllocsPerRun(n-3, func() {
		l, err := f.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		kept = l
	})
	runtime.KeepAlive(kept)
	// 70-byte lines: one group of 4 KiB for about 58 of them, and the
	// buffer's growth as the reads fill it (1 a line before).
	if allocs > 0.1 {
		t.Errorf("%.3f allocations a line for lines read many at a time, want a group's share", allocs)
	}
	f = NewLineFramer(bytes.NewReader(in), io.Discard, nil, 0)
	var got [][]byte
	for range n {
		l, err := f.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if cap(l) != len(l) {
			t.Fatalf("a line of %d bytes has a capacity of %d", len(l), cap(l))
		}
		got = append(got, l)
	}
	if !bytes.Equal(append(bytes.Join(got, []byte("\n")), '\n'), in) {
		t.Fatal("the lines read are not what was sent")
	}
	// One line a read: allocated alone (no group is kept for what did
	// not come).
	f = NewLineFramer(&oneLineReads{lines: bytes.SplitAfter(in, []byte("\n"))}, io.Discard, nil, 0)
	for range 3 {
		if l, err := f.ReadFrame(); err != nil || cap(l) > 2*len(l) {
			t.Fatalf("read %q (capacity %d), %v", l, cap(l), err)
		}
		if f.group != nil {
			t.Fatal("a group was allocated for a line read alone")
		}
	}
}

// oneLineReads returns one of its lines a read.
type oneLineReads struct{ lines [][]byte }

func (o *oneLineReads) Read(b []byte) (int, error) {
	for len(o.lines) > 0 && len(o.lines[0]) == 0 {
		o.lines = o.lines[1:]
	}
	if len(o.lines) == 0 {
		return 0, io.EOF
	}
	n := copy(b, o.lines[0])
	o.lines[0] = o.lines[0][n:]
	return n, nil
}
