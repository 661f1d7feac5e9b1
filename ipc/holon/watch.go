// Watching the server's side of the stream for what the WebSocket library
// lets through: a masked frame and an upgrade answer with something the
// client did not offer.

package holon

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
)

// ErrMaskedFrame: the server sent a masked frame. RFC 6455 §5.1: "A client
// MUST close a connection if it detects a masked frame" (status 1002).
// github.com/coder/websocket checks masking only on its server side: as a
// client it reads a masked frame's payload still masked, which looks like
// garbage to the Conn, and the call waits for its deadline.
var ErrMaskedFrame = errors.New("the server sent a masked frame (RFC 6455 §5.1: only clients mask)")

// frameWatch reads the server's bytes for the WebSocket library and, once
// the 101 answer is past, follows the frame headers (RFC 6455 §5.2) to
// catch a masked one. It costs a few comparisons a frame: the payload is
// skipped, not looked at. Only one goroutine reads at a time (the HTTP
// client, then the library), as for any net.Conn.
type frameWatch struct {
	net.Conn

	mu  sync.Mutex
	bad error // the violation seen; every later Read fails with it

	// The HTTP answer: its first bytes (to see it is a 101) and the last
	// three (to find its end across reads).
	head   []byte
	tail   [3]byte
	ntail  int
	frames bool // past the 101 answer: following frames
	off    bool // not a 101 answer: nothing to follow

	// The frame being read: hdr holds its header's first bytes, need how
	// many the header has, skip the payload bytes left.
	hdr  [2]byte
	nhdr int
	need int
	skip uint64
}

func (w *frameWatch) Read(p []byte) (int, error) {
	if err := w.violation(); err != nil {
		return 0, err
	}
	n, err := w.Conn.Read(p)
	if n > 0 && !w.off {
		if verr := w.scan(p[:n]); verr != nil {
			w.mu.Lock()
			w.bad = verr
			w.mu.Unlock()
			return 0, verr
		}
	}
	return n, err
}

// violation is the protocol violation seen, or nil.
func (w *frameWatch) violation() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bad
}

// scan follows b, the next bytes from the server.
func (w *frameWatch) scan(b []byte) error {
	for !w.frames && len(b) > 0 && !w.off {
		if len(w.head) < 12 {
			k := min(12-len(w.head), len(b))
			w.head = append(w.head, b[:k]...)
			if len(w.head) == 12 && !bytes.HasPrefix(w.head, []byte("HTTP/1.1 101")) {
				w.off = true // not upgraded: the HTTP client reads the answer
				return nil
			}
		}
		// Find the blank line ending the answer, across reads.
		joined := append(w.tail[:w.ntail:w.ntail], b...)
		i := bytes.Index(joined, []byte("\r\n\r\n"))
		if i < 0 {
			k := min(3, len(joined))
			w.ntail = copy(w.tail[:], joined[len(joined)-k:])
			return nil
		}
		b = joined[i+4:]
		w.frames = true
	}
	for len(b) > 0 && !w.off {
		if w.skip > 0 {
			k := min(w.skip, uint64(len(b)))
			w.skip -= k
			b = b[k:]
			continue
		}
		// A header: two bytes, then the extended length and the key.
		if w.nhdr < 2 {
			w.hdr[w.nhdr] = b[0]
			w.nhdr++
			b = b[1:]
			if w.nhdr < 2 {
				continue
			}
			if w.hdr[1]&0x80 != 0 {
				return ErrMaskedFrame
			}
			switch w.hdr[1] & 0x7f {
			case 126:
				w.need = 2
			case 127:
				w.need = 8
			default:
				w.need = 0
				w.skip = uint64(w.hdr[1] & 0x7f)
				w.nhdr = 0
			}
			continue
		}
		// The extended length, big-endian, need bytes of it left.
		w.skip = w.skip<<8 | uint64(b[0])
		b = b[1:]
		if w.need--; w.need == 0 {
			w.nhdr = 0
		}
	}
	return nil
}

// upgradeCheck refuses, as soon as the server's 101 answer is in, an
// answer the library would refuse only after reading up to 1 KiB of the
// connection for up to 3 s: a subprotocol or an extension the client did
// not offer, more than one subprotocol, or a wrong Sec-WebSocket-Accept.
// The connection is closed at once.
type upgradeCheck struct {
	rt      http.RoundTripper
	offered []string
}

func (u upgradeCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := u.rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		return resp, err
	}
	if err := u.verify(req, resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// verify checks what the server's 101 answer agreed to.
func (u upgradeCheck) verify(req *http.Request, resp *http.Response) error {
	var protos []string
	for _, v := range resp.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				protos = append(protos, p)
			}
		}
	}
	for _, p := range protos {
		found := false
		for _, o := range u.offered {
			found = found || strings.EqualFold(o, p)
		}
		if !found {
			return fmt.Errorf("the server's upgrade answer selects the subprotocol %q, which was not offered (RFC 6455 §4.1): refused", clip(p, 80))
		}
	}
	if len(protos) > 1 {
		return fmt.Errorf("the server's upgrade answer selects %d subprotocols; one at most may be (RFC 6455 §4.1): refused", len(protos))
	}
	for _, v := range resp.Header.Values("Sec-WebSocket-Extensions") {
		if v = strings.TrimSpace(v); v != "" {
			// primalscope offers no extension (compression is off).
			return fmt.Errorf("the server's upgrade answer uses the extension %q, which was not offered (RFC 6455 §4.1): refused", clip(v, 80))
		}
	}
	h := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if got := resp.Header.Get("Sec-WebSocket-Accept"); got != base64.StdEncoding.EncodeToString(h[:]) {
		return fmt.Errorf("the server's upgrade answer has a wrong Sec-WebSocket-Accept %q (RFC 6455 §4.1): refused", clip(got, 80))
	}
	return nil
}
