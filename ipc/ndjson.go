package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// DefaultMaxFrame is the largest message a Conn accepts unless told otherwise.
const DefaultMaxFrame = 64 << 20

// LineFramer frames newline-delimited JSON (JSON-RPC NDJSON and the lean wire)
// over any byte stream. Blank lines are skipped and a trailing "\r" is dropped.
type LineFramer struct {
	rd   io.Reader
	buf  []byte // unread data is buf[r:w]
	r, w int
	rerr error // a read error, returned once the buffered lines are used up
	// filled says the last read filled all the room it was given: the
	// peer sends faster than the buffer takes; it grows (to floodBufSize)
	// so that a flood is read in fewer, bigger reads.
	filled bool
	wr     io.Writer
	c      io.Closer
	max    int64
	wbuf   []byte
	wmu    sync.Mutex
	once   sync.Once
	cerr   error
	extra  func(context.Context) error // additional close work (stdio: reap the process within ctx)
	// group is what is left of an allocation the lines read together
	// are copied into (copyLine).
	group []byte
}

// lineGroup bounds the allocation lines read together share (copyLine):
// a line kept holds at most this much more than itself.
const lineGroup = 4 << 10

// copyLine is a copy of buf[r:end], a whole line, for the caller to keep
// (a Message's Raw: never changed, its capacity its length). The lines a
// read brought together share one allocation of at most lineGroup bytes
// (a flood of small notifications read 8 KiB at a time allocated each
// line on its own: one allocation a notification); a line read alone,
// with no whole line after it, is allocated alone, as before.
func (f *LineFramer) copyLine(r, end int) []byte {
	n := end - r
	if n > len(f.group) {
		f.group = nil
		if n < lineGroup {
			// The whole lines already read after this one, as far as
			// lineGroup goes: their bytes (newlines counted) are the
			// group's size.
			after := f.buf[end:min(f.w, r+lineGroup)]
			if j := bytes.LastIndexByte(after, '\n'); j > 0 {
				f.group = make([]byte, n+j)
			}
		}
		if f.group == nil {
			return append([]byte(nil), f.buf[r:end]...)
		}
	}
	line := f.group[:n:n]
	copy(line, f.buf[r:end])
	f.group = f.group[n:]
	if len(f.group) == 0 {
		f.group = nil
	}
	return line
}

// floodBufSize is how far the read buffer grows for a peer that fills it
// at every read (a flood of short lines), past what its lines need.
const floodBufSize = 64 << 10

// lineBufSize is the read buffer a framer starts with; it doubles while
// a line does not fit. Small: a process holds one per open connection
// (hundreds of listeners, and every silent socket a sweep waits on),
// and most lines are short.
const lineBufSize = 4 << 10

// NewLineFramer frames rw. max bounds one message (<= 0 means DefaultMaxFrame).
// closer is called by Close; it may be nil.
func NewLineFramer(r io.Reader, w io.Writer, closer io.Closer, max int64) *LineFramer {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &LineFramer{rd: r, wr: w, c: closer, max: max}
}

// ReadFrame returns the next non-empty line without its terminator. A line
// longer than the limit yields *FrameTooLargeError without buffering more than
// the limit; a stream that ends mid-line yields an error wrapping
// io.ErrUnexpectedEOF.
func (f *LineFramer) ReadFrame() ([]byte, error) {
	for {
		line, err := f.readLine()
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (f *LineFramer) readLine() ([]byte, error) {
	scan := f.r
	for {
		if i := bytes.IndexByte(f.buf[scan:f.w], '\n'); i >= 0 {
			end := scan + i
			if int64(end-f.r) > f.max {
				return nil, &FrameTooLargeError{Limit: f.max}
			}
			var line []byte
			if f.r == 0 && end > 1<<20 {
				// A big line: the framer does not keep the buffer it grew
				// into. One that fills most of it takes it over (no
				// copy); one that fills little of it is copied out (it
				// would hold the whole buffer, up to twice its size,
				// for its life).
				if len(f.buf)-end <= end/4 {
					line = f.buf[:end:end]
				} else {
					line = append([]byte(nil), f.buf[:end]...)
				}
				rest := make([]byte, max(lineBufSize, f.w-end-1))
				f.w = copy(rest, f.buf[end+1:f.w])
				f.buf, f.r = rest, 0
			} else {
				line = f.copyLine(f.r, end)
				f.r = end + 1
			}
			return line, nil
		}
		scan = f.w
		if int64(f.w-f.r) > f.max {
			return nil, &FrameTooLargeError{Limit: f.max}
		}
		if f.rerr != nil {
			err := f.rerr
			if f.w > f.r && errors.Is(err, io.EOF) {
				n := f.w - f.r
				f.r = f.w
				return nil, fmt.Errorf("peer closed in the middle of a message (%d bytes without a newline): %w", n, io.ErrUnexpectedEOF)
			}
			return nil, err // may carry why the stream ended (a stdio peer's exit)
		}
		// Make room: move unread data to the front, grow for a long line.
		if f.r > 0 {
			n := copy(f.buf, f.buf[f.r:f.w])
			scan -= f.r
			f.r, f.w = 0, n
		}
		if f.w == 0 && len(f.buf) <= lineBufSize {
			f.idle()
		}
		if f.w == len(f.buf) {
			if len(f.buf) >= longLine {
				return f.readLongLine()
			}
			size := max(lineBufSize, 2*len(f.buf))
			if lim := f.max + 2; int64(size) > lim && lim > int64(len(f.buf)) {
				size = int(lim)
			}
			nb := make([]byte, size)
			copy(nb, f.buf[:f.w])
			f.buf = nb
		}
		if f.filled && len(f.buf) < floodBufSize && f.w < len(f.buf)/2 {
			// The last read filled the buffer: the peer sends more than it
			// takes. A bigger one reads a flood in fewer syscalls.
			nb := make([]byte, min(2*len(f.buf), floodBufSize))
			copy(nb, f.buf[:f.w])
			f.buf = nb
		}
		room := len(f.buf) - f.w
		n, err := f.rd.Read(f.buf[f.w:])
		f.filled = n == room
		f.w += n
		if err != nil {
			f.rerr = err
		}
	}
}

// readableWaiter is a stream that can wait until it has something to
// read without a buffer to read it into (pacedConn).
type readableWaiter interface {
	canWaitReadable() bool
	waitReadable()
}

// idle, with nothing unread and a small buffer, lets the buffer go while
// it waits for the stream to have something to read, when the stream can
// wait so (readableWaiter); the read that follows takes a new one. A
// buffer grown for a flood is kept: a busy connection would allocate one
// at every read.
func (f *LineFramer) idle() {
	if w, ok := f.rd.(readableWaiter); ok && w.canWaitReadable() {
		f.buf = nil
		w.waitReadable()
	}
}

// FrameBuffered reports whether a whole line is already read and waiting,
// so that ReadFrame would return it without reading from the stream. Only
// the Conn's reading goroutine calls it, as it does ReadFrame.
func (f *LineFramer) FrameBuffered() bool {
	rest := f.buf[f.r:f.w]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return false
		}
		if len(bytes.TrimSpace(rest[:i])) > 0 {
			return true
		}
		rest = rest[i+1:] // a blank line, which ReadFrame skips
	}
}

// longLine is the buffer size past which a line is read into a
// reservation (readLongLine) rather than into a buffer that doubles.
const longLine = 1 << 20

// longLineReserve is how many times the first longLine bytes of a long
// line readLongLine reserves for it, at most (never more than the frame
// limit allows).
const longLineReserve = 16

// readLongLine reads the rest of a line that fills the buffer (f.r == 0,
// no newline in buf[:w], len(buf) >= longLine). It reserves one buffer of
// longLineReserve times what has come (16 MiB for the usual 1 MiB, at
// most the frame limit) and reads the line into it, where it stays: no
// copy. A fresh reservation costs memory only as far as it is written
// (the pages of a new large allocation are not touched until used), so a
// 10 MB line costs about 10 MB, where the 1 MiB chunks copied into a line
// of its size cost twice that (the peak RSS of a call printing a 10 MB
// answer). A line that fills less than half of its reservation is copied
// out, so that a line never holds more than twice its size (in a process
// whose memory is reused, such as the TUI, a new allocation is cleared,
// and so touched, whole). A line
// longer than the reservation goes on in chunks of longLine bytes, copied
// once into a buffer of its exact size. The bytes after the newline
// become the buffer's content, as readLine leaves them.
func (f *LineFramer) readLongLine() ([]byte, error) {
	size := int64(f.w) * longLineReserve
	if lim := f.max + 1; size > lim {
		size = lim
	}
	if size <= int64(f.w) {
		size = int64(f.w) + longLine
	}
	first := make([]byte, size)
	defer hintHuge(first)()
	n := copy(first, f.buf[:f.w])
	f.buf, f.r, f.w = nil, 0, 0
	chunks := [][]byte(nil)
	chunk := first
	total := 0 // bytes in chunks
	for {
		empty := 0
		for n < len(chunk) && f.rerr == nil {
			m, err := f.rd.Read(chunk[n:])
			if err != nil {
				f.rerr = err
			}
			if i := bytes.IndexByte(chunk[n:n+m], '\n'); i >= 0 {
				end := n + i
				if int64(total+end) > f.max {
					return nil, &FrameTooLargeError{Limit: f.max}
				}
				var line []byte
				switch {
				case chunks == nil && end >= len(chunk)/2:
					line = chunk[:end:end] // the reservation is the line
				default:
					line = make([]byte, total+end)
					k := 0
					for _, c := range chunks {
						k += copy(line[k:], c)
					}
					copy(line[k:], chunk[:end])
				}
				rest := chunk[end+1 : n+m]
				f.buf = make([]byte, max(lineBufSize, len(rest)))
				f.w = copy(f.buf, rest)
				return line, nil
			}
			n += m
			if int64(total+n) > f.max {
				return nil, &FrameTooLargeError{Limit: f.max}
			}
			if m == 0 && err == nil {
				if empty++; empty > 100 {
					f.rerr = io.ErrNoProgress // a reader that never gives anything
				}
			}
		}
		if f.rerr != nil {
			err := f.rerr
			if total+n > 0 && errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("peer closed in the middle of a message (%d bytes without a newline): %w", total+n, io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		chunks = append(chunks, chunk[:n])
		total += n
		chunk, n = make([]byte, longLine), 0
	}
}

// WriteFrame writes p followed by a newline in one write. p must not contain a
// newline (encoded JSON never does outside strings, where it is escaped).
func (f *LineFramer) WriteFrame(p []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.wbuf = append(append(f.wbuf[:0], p...), '\n')
	_, err := f.wr.Write(f.wbuf)
	if cap(f.wbuf) > 1<<20 {
		f.wbuf = nil // do not pin a huge buffer after one big message
	}
	return err
}

// SetWriteDeadline bounds writes when the underlying writer is a net.Conn.
func (f *LineFramer) SetWriteDeadline(t time.Time) error {
	if c, ok := f.wr.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return c.SetWriteDeadline(t)
	}
	return nil
}

// Close closes the underlying stream once; later calls return the same error.
func (f *LineFramer) Close() error { return f.CloseContext(context.Background()) }

// CloseContext is Close with its waits bounded by ctx: a stdio peer that
// does not exit when its stdin closes is killed when ctx ends, rather than
// after the usual grace.
func (f *LineFramer) CloseContext(ctx context.Context) error {
	f.once.Do(func() {
		if f.c != nil {
			f.cerr = f.c.Close()
		}
		if f.extra != nil {
			if err := f.extra(ctx); err != nil && f.cerr == nil {
				f.cerr = err
			}
		}
	})
	return f.cerr
}

// NetFramer frames a net.Conn as NDJSON.
func NetFramer(c net.Conn, max int64) *LineFramer { return NewLineFramer(c, c, c, max) }
