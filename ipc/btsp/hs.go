package btsp

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// hsConn carries handshake messages in one framing.
type hsConn struct {
	ctx     context.Context
	conn    net.Conn
	r       *bufio.Reader
	framing Framing
	prefix  []byte // written before the first message, then cleared
	trace   func(string)
	// spoke: the peer has answered in this framing (a whole message, or a
	// JSON line cut short by a close).
	spoke bool
}

func (h *hsConn) note(s string) {
	if h.trace != nil {
		h.trace(s)
	}
}

func (h *hsConn) write(step string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return &HandshakeError{Reason: ReasonMalformed, Step: step, Err: err}
	}
	buf := make([]byte, 0, len(h.prefix)+4+len(body)+1)
	buf = append(buf, h.prefix...)
	h.prefix = nil
	if h.framing == LengthPrefixed {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(body)))
		buf = append(buf, body...)
	} else {
		buf = append(append(buf, body...), '\n')
	}
	if _, err := h.conn.Write(buf); err != nil {
		return h.ioErr(step, err)
	}
	return nil
}

func (h *hsConn) read(step string) ([]byte, error) {
	for {
		var msg []byte
		var err error
		if h.framing == LengthPrefixed {
			msg, err = readLP(h.r, MaxHandshakeMessage, 0)
		} else {
			var cut bool
			msg, cut, err = readLineCut(h.r, MaxHandshakeMessage)
			if err == nil && cut {
				if t := trimSpace(msg); len(t) > 0 && t[0] == '{' {
					h.spoke = true // a JSON line, cut: it speaks lines
				}
				return nil, &HandshakeError{Reason: ReasonClosedWithoutWord, Step: step, Detail: "the peer closed the connection in the middle of a message"}
			}
		}
		if err != nil {
			var big *FrameTooLargeError
			if errors.As(err, &big) {
				return nil, &HandshakeError{Reason: ReasonMalformed, Step: step, Detail: "message over 64 KiB"}
			}
			return nil, h.ioErr(step, err)
		}
		if h.framing == JSONLine && len(trimSpace(msg)) == 0 {
			continue
		}
		return msg, nil
	}
}

// ioErr classifies a failed read or write during the handshake.
func (h *hsConn) ioErr(step string, err error) *HandshakeError {
	if cerr := h.ctx.Err(); cerr != nil {
		return &HandshakeError{Reason: ReasonTimeout, Step: step, Err: context.Cause(h.ctx)}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The connection's deadline is the context's, which may fire a hair
		// before the context itself reports it.
		return &HandshakeError{Reason: ReasonTimeout, Step: step, Err: context.DeadlineExceeded}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return &HandshakeError{Reason: ReasonClosedWithoutWord, Step: step, Detail: "the peer closed the connection"}
	}
	return &HandshakeError{Reason: ReasonIO, Step: step, Err: err}
}

// armDeadline bounds conn's I/O by ctx: its deadline becomes the conn's, and
// cancellation sets a deadline in the past. disarm clears the deadline.
func armDeadline(ctx context.Context, conn net.Conn) (disarm func()) {
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = conn.SetDeadline(time.Unix(1, 0))
	})
	return func() {
		if !stop() {
			<-fired
		}
		_ = conn.SetDeadline(time.Time{})
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r' || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r' || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}
