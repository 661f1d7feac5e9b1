// Package sse reads server-sent events (the text/event-stream format of the
// WHATWG HTML standard): event, data (joined over several lines), id, retry
// and comments, with limits on line and event size so a hostile peer cannot
// exhaust memory.
//
// It also dials the biomeOS API socket (HTTP over a Unix socket after the
// riboCipher prefix EC 04) and opens its event stream. The package is a leaf:
// it knows nothing of package ipc.
package sse

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Default limits.
const (
	DefaultMaxLine  = 256 << 10
	DefaultMaxEvent = 1 << 20
)

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the "event" field ("message" when the server sent none).
	Type string `json:"type"`
	// Data is the data lines joined with "\n".
	Data []byte `json:"data"`
	// ID is the last event id seen on the stream (it persists across events).
	ID string `json:"id,omitempty"`
	// Retry is the reconnection time the server asked for (0: none yet).
	Retry time.Duration `json:"retry,omitempty"`
	// Comments are the comment lines (": ...") since the last event, which
	// servers use as keep-alives. Only the first few are kept.
	Comments []string `json:"comments,omitempty"`
}

// LineTooLongError reports a line over the line limit.
type LineTooLongError struct{ Limit int }

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("event stream line longer than %d bytes", e.Limit)
}

// EventTooLargeError reports an event whose data grew over the event limit.
type EventTooLargeError struct{ Limit int }

func (e *EventTooLargeError) Error() string {
	return fmt.Sprintf("event stream event larger than %d bytes", e.Limit)
}

const maxComments = 8

// Reader parses an event stream.
type Reader struct {
	src        io.Reader
	buf        []byte
	start, end int
	err        error
	skipLF     bool
	zeroReads  int
	maxLine    int
	maxEvent   int
	lastID     string
	retry      time.Duration
	started    bool
	// comment-only keep-alives, counted
	keepalives int
}

// NewReader reads events from r. maxLine and maxEvent bound one line and one
// event's data (<= 0: the defaults).
func NewReader(r io.Reader, maxLine, maxEvent int) *Reader {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return &Reader{src: r, buf: make([]byte, 16<<10), maxLine: maxLine, maxEvent: maxEvent}
}

// Retry is the reconnection time the server last asked for (0: none).
func (p *Reader) Retry() time.Duration { return p.retry }

// LastID is the last event id seen, to resume with Last-Event-ID.
func (p *Reader) LastID() string { return p.lastID }

// KeepAlives counts comment lines seen so far.
func (p *Reader) KeepAlives() int { return p.keepalives }

// Next returns the next event. Blocks of only comments or fields without
// data are not dispatched (as the standard says). At the end of the stream
// it returns io.EOF; an event cut off by the end is discarded. Over-long
// lines and events return *LineTooLongError and *EventTooLargeError; the
// stream cannot be resynchronised after them.
func (p *Reader) Next() (Event, error) {
	var (
		data     []byte
		hasData  bool
		typ      string
		comments []string
	)
	for {
		line, err := p.readLine()
		if err != nil {
			return Event{}, err
		}
		if !p.started {
			p.started = true
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			if !hasData {
				typ, comments = "", nil
				continue
			}
			if typ == "" {
				typ = "message"
			}
			return Event{Type: typ, Data: data, ID: p.lastID, Retry: p.retry, Comments: comments}, nil
		}
		if line[0] == ':' {
			p.keepalives++
			if len(comments) < maxComments {
				comments = append(comments, string(bytes.TrimPrefix(line[1:], []byte(" "))))
			}
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			hasData = true
			if len(data)+len(value) > p.maxEvent {
				return Event{}, &EventTooLargeError{Limit: p.maxEvent}
			}
			data = append(data, value...)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.lastID = string(value)
			}
		case "retry":
			if n, err := strconv.ParseUint(string(value), 10, 31); err == nil && isDigits(value) {
				p.retry = time.Duration(n) * time.Millisecond
			}
		}
	}
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readLine returns one line without its terminator (CRLF, LF or CR). The
// slice is valid until the next call.
func (p *Reader) readLine() ([]byte, error) {
	scanned := 0
	for {
		if p.skipLF && p.start < p.end {
			if p.buf[p.start] == '\n' {
				p.start++
			}
			p.skipLF = false
		}
		win := p.buf[p.start+scanned : p.end]
		nl := bytes.IndexByte(win, '\n')
		search := win
		if nl >= 0 {
			search = win[:nl]
		}
		if cr := bytes.IndexByte(search, '\r'); cr >= 0 {
			pos := p.start + scanned + cr
			line := p.buf[p.start:pos]
			p.start = pos + 1
			if p.start < p.end {
				if p.buf[p.start] == '\n' {
					p.start++
				}
			} else {
				p.skipLF = true
			}
			return p.checkLen(line)
		}
		if nl >= 0 {
			pos := p.start + scanned + nl
			line := p.buf[p.start:pos]
			p.start = pos + 1
			return p.checkLen(line)
		}
		scanned = p.end - p.start
		if scanned > p.maxLine {
			return nil, &LineTooLongError{Limit: p.maxLine}
		}
		if p.err != nil {
			return nil, p.err // a partial line at the end is discarded
		}
		p.fill()
	}
}

func (p *Reader) checkLen(line []byte) ([]byte, error) {
	if len(line) > p.maxLine {
		return nil, &LineTooLongError{Limit: p.maxLine}
	}
	return line, nil
}

// fill reads more bytes, moving the unread part to the front and growing the
// buffer (up to the line limit) when it is full.
func (p *Reader) fill() {
	if p.start > 0 {
		n := copy(p.buf, p.buf[p.start:p.end])
		p.start, p.end = 0, n
	}
	if p.end == len(p.buf) {
		size := 2 * len(p.buf)
		if size > p.maxLine+2 {
			size = p.maxLine + 2
		}
		if size <= len(p.buf) {
			size = len(p.buf) + 1
		}
		nb := make([]byte, size)
		copy(nb, p.buf[:p.end])
		p.buf = nb
	}
	n, err := p.src.Read(p.buf[p.end:])
	p.end += n
	if err != nil {
		p.err = err
	} else if n == 0 {
		p.zeroReads++
		if p.zeroReads > 100 {
			p.err = io.ErrNoProgress
		}
	}
}
