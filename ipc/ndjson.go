package ipc

import (
	"bufio"
	"bytes"
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
	r     *bufio.Reader
	w     io.Writer
	c     io.Closer
	max   int64
	wbuf  []byte
	wmu   sync.Mutex
	once  sync.Once
	cerr  error
	extra func() error // additional close work (stdio: reap the process)
}

// NewLineFramer frames rw. max bounds one message (<= 0 means DefaultMaxFrame).
// closer is called by Close; it may be nil.
func NewLineFramer(r io.Reader, w io.Writer, closer io.Closer, max int64) *LineFramer {
	if max <= 0 {
		max = DefaultMaxFrame
	}
	return &LineFramer{r: bufio.NewReaderSize(r, 64<<10), w: w, c: closer, max: max}
}

// ReadFrame returns the next non-empty line without its terminator. A line
// longer than the limit yields *FrameTooLargeError without buffering it whole;
// a stream that ends mid-line yields io.ErrUnexpectedEOF.
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
	chunk, err := f.r.ReadSlice('\n')
	if err == nil {
		out := make([]byte, len(chunk)-1)
		copy(out, chunk)
		if int64(len(out)) > f.max {
			return nil, &FrameTooLargeError{Limit: f.max}
		}
		return out, nil
	}
	var buf []byte
	for {
		if int64(len(buf)+len(chunk)) > f.max+1 {
			return nil, &FrameTooLargeError{Limit: f.max}
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			buf = buf[:len(buf)-1]
			if int64(len(buf)) > f.max {
				return nil, &FrameTooLargeError{Limit: f.max}
			}
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			chunk, err = f.r.ReadSlice('\n')
		case errors.Is(err, io.EOF):
			if len(bytes.TrimSpace(buf)) == 0 {
				return nil, err // may carry why the stream ended (a stdio peer's exit)
			}
			return nil, fmt.Errorf("peer closed in the middle of a message (%d bytes without a newline): %w", len(buf), io.ErrUnexpectedEOF)
		default:
			return nil, err
		}
	}
}

// WriteFrame writes p followed by a newline in one write. p must not contain a
// newline (encoded JSON never does outside strings, where it is escaped).
func (f *LineFramer) WriteFrame(p []byte) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.wbuf = append(append(f.wbuf[:0], p...), '\n')
	_, err := f.w.Write(f.wbuf)
	if cap(f.wbuf) > 1<<20 {
		f.wbuf = nil // do not pin a huge buffer after one big message
	}
	return err
}

// SetWriteDeadline bounds writes when the underlying writer is a net.Conn.
func (f *LineFramer) SetWriteDeadline(t time.Time) error {
	if c, ok := f.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return c.SetWriteDeadline(t)
	}
	return nil
}

// Close closes the underlying stream once; later calls return the same error.
func (f *LineFramer) Close() error {
	f.once.Do(func() {
		if f.c != nil {
			f.cerr = f.c.Close()
		}
		if f.extra != nil {
			if err := f.extra(); err != nil && f.cerr == nil {
				f.cerr = err
			}
		}
	})
	return f.cerr
}

// NetFramer frames a net.Conn as NDJSON.
func NetFramer(c net.Conn, max int64) *LineFramer { return NewLineFramer(c, c, c, max) }
