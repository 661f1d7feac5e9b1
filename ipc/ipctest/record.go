package ipctest

import (
	"bytes"
	"io"
	"sync"
)

// recording keeps what each connection of a peer sent, in order of
// connection, so tests can prove what reached the peer.
type recording struct {
	mu   sync.Mutex
	bufs []*bytes.Buffer
}

// tee starts the record of a new connection: it returns the connection's
// number (from 1) and a reader that records what it reads from r.
func (rec *recording) tee(r io.Reader) (int, io.Reader) {
	buf := &bytes.Buffer{}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.bufs = append(rec.bufs, buf)
	return len(rec.bufs), &teeReader{r: r, rec: rec, buf: buf}
}

// received returns a copy of the bytes each connection sent.
func (rec *recording) received() [][]byte {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	out := make([][]byte, len(rec.bufs))
	for i, b := range rec.bufs {
		out[i] = append([]byte(nil), b.Bytes()...)
	}
	return out
}

type teeReader struct {
	r   io.Reader
	rec *recording
	buf *bytes.Buffer
}

func (t *teeReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.rec.mu.Lock()
		t.buf.Write(p[:n])
		t.rec.mu.Unlock()
	}
	return n, err
}
