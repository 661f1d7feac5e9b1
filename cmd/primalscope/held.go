package main

import (
	"io"
)

// holdBuffer bounds the output a heldWriter holds while its gate is
// closed; past it, Write waits for the gate. A 10 MB answer's record takes
// 12-20 ms to write (its first 4 MiB redacted), in which the renderer,
// beside it, makes 5-8 MiB of output: with 1 MiB held the renderer stood
// still for most of the record. 4 MiB costs 3.5 MB more peak RSS (31.5 MB
// for the 10 MB answer, 28 MB with 1 MiB).
const holdBuffer = 4 << 20

// heldWriter passes writes on to a stream once a gate has opened (the
// call's history record is written) and holds them in memory until then.
// This is how `call` prints its answer beside recording it: rendering
// starts as soon as the answer is in, while the record is written, and
// not one byte of the answer reaches the stream before the record exists,
// so an answer that was printed, even in part, is never lost to a kill -9
// (see history.Journal). What is held is bounded by holdBuffer (each write
// is copied once, never moved again); a writer that reaches it waits for
// the gate. Close waits for the gate and writes what is held; it must be
// called once the answer is rendered.
//
// The gate opens when either of two channels is closed: the record's
// write has ended (done), or the wait has reached its bound (bound: the
// command's context for waits, boundWait), so a stuck record does not hold
// the answer back. Selecting on both here, rather than merging them into
// one channel, spares every call a goroutine and its wake-ups.
//
// Terminal decisions (colour, escaping) are the stream's: see stream.
type heldWriter struct {
	w     io.Writer
	done  <-chan struct{}
	bound <-chan struct{} // nil: no bound
	held  [][]byte
	size  int
	open  bool
}

func newHeldWriter(w io.Writer, done, bound <-chan struct{}) *heldWriter {
	return &heldWriter{w: w, done: done, bound: bound}
}

// wait waits for the gate to open.
func (g *heldWriter) wait() {
	select {
	case <-g.done:
	case <-g.bound:
	}
}

// Stream returns the stream written to.
func (g *heldWriter) Stream() io.Writer { return g.w }

func (g *heldWriter) Write(p []byte) (int, error) {
	if !g.open {
		select {
		case <-g.done:
		case <-g.bound:
		default:
			if g.size+len(p) <= holdBuffer {
				g.held = append(g.held, append([]byte(nil), p...))
				g.size += len(p)
				return len(p), nil
			}
			g.wait()
		}
		if err := g.release(); err != nil {
			return 0, err
		}
	}
	return g.w.Write(p)
}

// release opens the gate (which must have opened) and writes what is held.
func (g *heldWriter) release() error {
	g.open = true
	held := g.held
	g.held, g.size = nil, 0
	for _, b := range held {
		if _, err := g.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for the gate and writes what is held. It does not close the
// stream.
func (g *heldWriter) Close() error {
	if g.open {
		return nil
	}
	g.wait()
	return g.release()
}

// stream returns the stream w writes to: w itself, or the stream under a
// heldWriter.
func stream(w io.Writer) io.Writer {
	if s, ok := w.(interface{ Stream() io.Writer }); ok {
		return s.Stream()
	}
	return w
}
