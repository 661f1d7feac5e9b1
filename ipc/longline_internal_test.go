package ipc

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// chunkReader returns at most n bytes a read, as a socket does.
type chunkReader struct {
	r io.Reader
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestLongLines: lines of several MiB, read in chunks (readLongLine), come
// out whole and in order, with the line after them in the same read, a
// blank line skipped; one over the limit is refused; one cut by the end of
// the stream is an unexpected EOF.
func TestLongLines(t *testing.T) {
	a := bytes.Repeat([]byte("abcdefghij"), 350_000) // 3.5 MB
	b := bytes.Repeat([]byte("z"), 2*longLine)       // exactly two chunks
	in := string(a) + "\n" + "short\r\n\n" + string(b) + "\n" + "tail" + "\n" + strings.Repeat("c", 3*longLine/2)
	f := NewLineFramer(&chunkReader{strings.NewReader(in), 777_777}, io.Discard, nil, 0)
	for i, want := range [][]byte{a, []byte("short"), b, []byte("tail")} {
		got, err := f.ReadFrame()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("line %d: %d bytes (want %d), %v", i, len(got), len(want), err)
		}
	}
	if _, err := f.ReadFrame(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a long line cut by the end: %v", err)
	}
	// A line that fills its reservation (read in place), one longer than
	// it (the reservation, then chunks), and one at the frame limit.
	fit := bytes.Repeat([]byte("f"), longLineReserve*longLine*3/4)
	over := bytes.Repeat([]byte("o"), longLineReserve*longLine+longLine/2+3)
	f = NewLineFramer(&chunkReader{bytes.NewReader(slices.Concat(fit, []byte("\n"), over, []byte("\nend\n"))), 1 << 17}, io.Discard, nil, 0)
	for i, want := range [][]byte{fit, over, []byte("end")} {
		got, err := f.ReadFrame()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("long line %d: %d bytes (want %d), %v", i, len(got), len(want), err)
		}
	}
	atLimit := bytes.Repeat([]byte("l"), 3*longLine)
	f = NewLineFramer(&chunkReader{bytes.NewReader(append(atLimit, '\n')), 1 << 16}, io.Discard, nil, 3*longLine)
	if got, err := f.ReadFrame(); err != nil || !bytes.Equal(got, atLimit) {
		t.Fatalf("a line at the limit: %d bytes, %v", len(got), err)
	}
	big := NewLineFramer(&chunkReader{strings.NewReader(strings.Repeat("x", 5*longLine) + "\n"), 1 << 16}, io.Discard, nil, 3*longLine)
	var tooLarge *FrameTooLargeError
	if _, err := big.ReadFrame(); !errors.As(err, &tooLarge) {
		t.Fatalf("a line over the limit: %v", err)
	}
}

// TestLongLineMemory: a 10 MB line is read in place into its reservation:
// what is allocated is the 2 MiB of the buffer doubling to 1 MiB and the
// 16 MiB reservation (1.8 times the line, of which only what the line
// fills is ever touched), not 1 MiB chunks copied into a line of its size
// (2.2 times, all of it touched, twice the line in the peak RSS of a call
// printing a 10 MB answer) nor the 3.2 times of a doubling buffer.
func TestLongLineMemory(t *testing.T) {
	line := bytes.Repeat([]byte("0123456789"), 1_000_000)
	in := append(append([]byte(nil), line...), '\n')
	f := NewLineFramer(&chunkReader{bytes.NewReader(in), 1 << 16}, io.Discard, nil, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := f.ReadFrame()
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != len(line) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(len(line))*19/10 {
		t.Fatalf("reading a %d-byte line allocated %d bytes (%.1f times)", len(line), alloc, float64(alloc)/float64(len(line)))
	}
}

// TestLongLineShortCopiedOut: a line that fills less than half of its
// reservation is copied into a buffer of its size rather than keeping the
// reservation (in a process whose memory is reused, the reservation is
// cleared whole: a 5 MiB line would hold 16 MiB). The copy shows in what
// is allocated: the reservation and the line.
func TestLongLineShortCopiedOut(t *testing.T) {
	line := bytes.Repeat([]byte("s"), 5<<20)
	in := append(append([]byte(nil), line...), '\n')
	f := NewLineFramer(&chunkReader{bytes.NewReader(in), 1 << 16}, io.Discard, nil, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := f.ReadFrame()
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, line) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	reservation := uint64(longLineReserve * longLine)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc < reservation+uint64(len(line)) {
		t.Fatalf("a %d-byte line: %d bytes allocated, less than its reservation and a copy (%d): it was left in the reservation", len(line), alloc, reservation+uint64(len(line)))
	}
}
