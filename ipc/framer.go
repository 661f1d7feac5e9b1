package ipc

import "time"

// Framer cuts one transport's byte stream into whole messages. The Conn owns a
// Framer: it calls ReadFrame from one goroutine and WriteFrame from one goroutine
// at a time, and Close exactly once (Close must unblock a pending ReadFrame).
//
// Wire packages (ipc/btsp, ipc/holon, ...) implement this structurally.
type Framer interface {
	// ReadFrame returns the next message's bytes, without any delimiter or
	// length prefix. The slice is owned by the caller.
	ReadFrame() ([]byte, error)
	// WriteFrame writes one whole message (no delimiter; the framer adds it).
	WriteFrame(p []byte) error
	// Close releases the transport and unblocks ReadFrame.
	Close() error
}

// WriteDeadliner is implemented by framers whose writes can be bounded in time.
// The Conn uses it so a peer that never reads cannot hang a call past its deadline.
type WriteDeadliner interface {
	SetWriteDeadline(t time.Time) error
}
