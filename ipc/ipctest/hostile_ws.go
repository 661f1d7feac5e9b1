package ipctest

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// HostileWSMode says how a HostileWS peer misbehaves once it has read a
// request.
type HostileWSMode uint8

const (
	// WSAnswer answers every request with a result (with AnswerID as the
	// id when set).
	WSAnswer HostileWSMode = iota
	// WSSilent reads requests and never answers them.
	WSSilent
	// WSHugeHeader answers with a text frame whose header announces 2^62
	// bytes, then streams filler as fast as the client reads it.
	WSHugeHeader
	// WSHugeHeaderStall announces 2^62 bytes, sends a few, then nothing.
	WSHugeHeaderStall
	// WSFragmentFlood starts a text message and never finishes it: empty
	// continuation frames, without end.
	WSFragmentFlood
	// WSPingFlood sends ping frames without end and never answers; it reads
	// and drops what the client sends meanwhile.
	WSPingFlood
	// WSStallUpgrade accepts the TCP connection and never answers the HTTP
	// upgrade.
	WSStallUpgrade
)

// HostileWSConfig describes a hostile Holon-RPC (WebSocket) peer. It is
// written from RFC 6455 and holon-rpc.md directly, frame by frame, so it
// shares nothing with the WebSocket library the client uses.
type HostileWSConfig struct {
	Mode HostileWSMode
	// NeverClose ignores the client's close frame: the peer never answers
	// it and never closes the TCP connection (until the server is closed).
	NeverClose bool
	// AnswerID, when set, is the raw JSON id WSAnswer answers with instead
	// of the request's (for example `"01"`, `1` or `null`).
	AnswerID json.RawMessage
	// Result is the result WSAnswer sends (default {"ok":true}).
	Result json.RawMessage
	// FragmentSize is the payload of each continuation frame WSFragmentFlood
	// sends (default 0: empty frames, which never reach a size limit).
	FragmentSize int
	// Masked makes WSAnswer mask its answer, as only a client may (RFC
	// 6455 §5.1: a client must close on a masked frame from the server).
	Masked bool
	// InvalidUTF8 makes WSAnswer put bytes that are not UTF-8 in its text
	// frame (RFC 6455 §8.1: the client must close with 1007).
	InvalidUTF8 bool
	// UpgradeHeader is added to the 101 answer as it is (for example
	// "Sec-WebSocket-Extensions: x-evil"): a subprotocol or extension the
	// client did not offer, after which the peer keeps the connection
	// open and says nothing.
	UpgradeHeader string
	// TLS, when set, serves wss:// with it (the client must skip
	// verification of a test certificate).
	TLS *tls.Config
}

// HostileWS is a running hostile WebSocket peer on a loopback TCP port.
type HostileWS struct {
	cfg HostileWSConfig
	acc *peer.Acceptor
	// URL is the ws:// URL to dial (path /rpc).
	URL string

	requests    atomic.Int64
	closeFrames atomic.Int64
	reqMu       sync.Mutex
	reqs        [][]byte
}

// ListenHostileWS starts a hostile WebSocket peer on 127.0.0.1.
func ListenHostileWS(cfg HostileWSConfig) (*HostileWS, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hostile ws: listen: %w", err)
	}
	s := &HostileWS{cfg: cfg, URL: "ws://" + ln.Addr().String() + "/rpc"}
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
		s.URL = "wss://" + ln.Addr().String() + "/rpc"
	}
	s.acc = peer.Serve(ln, s.serve)
	return s, nil
}

// Accepted is how many TCP connections the peer accepted.
func (s *HostileWS) Accepted() int64 { return s.acc.Accepted() }

// Requests is how many request frames the peer received.
func (s *HostileWS) Requests() int64 { return s.requests.Load() }

// CloseFrames is how many close frames the clients sent.
func (s *HostileWS) CloseFrames() int64 { return s.closeFrames.Load() }

// Received returns copies of the request frames received so far.
func (s *HostileWS) Received() [][]byte {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	out := make([][]byte, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = append([]byte(nil), r...)
	}
	return out
}

// Close stops the peer: every connection is closed and its goroutine has
// ended when Close returns.
func (s *HostileWS) Close() error { return s.acc.Close() }

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// WebSocket opcodes (RFC 6455 5.2).
const (
	opCont  = 0x0
	opText  = 0x1
	opClose = 0x8
	opPing  = 0x9
)

func (s *HostileWS) serve(ctx context.Context, c net.Conn) {
	br := bufio.NewReader(c)
	if s.cfg.Mode == WSStallUpgrade {
		<-ctx.Done()
		return
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	key := req.Header.Get("Sec-WebSocket-Key")
	if !strings.EqualFold(req.Header.Get("Upgrade"), "websocket") || key == "" {
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		return
	}
	h := sha1.Sum([]byte(key + wsGUID))
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(h[:]) + "\r\n"
	for _, p := range strings.Split(req.Header.Get("Sec-WebSocket-Protocol"), ",") {
		if strings.TrimSpace(p) == "holon-rpc" {
			resp += "Sec-WebSocket-Protocol: holon-rpc\r\n"
		}
	}
	if s.cfg.UpgradeHeader != "" {
		resp += s.cfg.UpgradeHeader + "\r\n"
	}
	if _, err := io.WriteString(c, resp+"\r\n"); err != nil {
		return
	}
	if s.cfg.UpgradeHeader != "" {
		s.hold(c)
		return
	}
	w := &wsWriter{c: c, masked: s.cfg.Masked}
	for {
		op, payload, err := readWSFrame(br, 1<<20)
		if err != nil {
			return
		}
		switch op {
		case opClose:
			s.closeFrames.Add(1)
			if s.cfg.NeverClose {
				continue // neither answered nor closed: the client must not wait for it
			}
			_ = w.frame(true, opClose, payload)
			return
		case opText:
		default:
			continue
		}
		s.requests.Add(1)
		s.reqMu.Lock()
		s.reqs = append(s.reqs, payload)
		s.reqMu.Unlock()
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(payload, &env) != nil || env.ID == nil {
			continue
		}
		switch s.cfg.Mode {
		case WSAnswer:
			id := env.ID
			if s.cfg.AnswerID != nil {
				id = s.cfg.AnswerID
			}
			res := s.cfg.Result
			if res == nil {
				res = json.RawMessage(`{"ok":true}`)
			}
			if s.cfg.InvalidUTF8 {
				res = json.RawMessage("{\"text\":\"\xff\xfe\xc0\xaf\"}")
			}
			msg := append(append(append(append([]byte(`{"jsonrpc":"2.0","id":`), id...), `,"result":`...), res...), '}')
			if w.frame(true, opText, msg) != nil {
				return
			}
		case WSSilent:
		case WSHugeHeader, WSHugeHeaderStall:
			if w.header(true, opText, 1<<62) != nil {
				return
			}
			filler := []byte(strings.Repeat(" ", 32<<10))
			if s.cfg.Mode == WSHugeHeaderStall {
				filler = filler[:16]
			}
			for {
				if _, err := c.Write(filler); err != nil || s.cfg.Mode == WSHugeHeaderStall {
					break
				}
			}
			s.hold(c)
			return
		case WSFragmentFlood:
			if w.frame(false, opText, []byte(`{"jsonrpc":"2.0",`)) != nil {
				return
			}
			frag := make([]byte, s.cfg.FragmentSize)
			for i := range frag {
				frag[i] = ' '
			}
			for w.frame(false, opCont, frag) == nil {
			}
			return
		case WSPingFlood:
			// Read (and drop) what the client sends meanwhile, its pongs
			// and its close frame, so the flood never stalls on a full
			// socket: the client is kept busy answering pings.
			go func() { _, _ = io.Copy(io.Discard, br) }()
			for w.frame(true, opPing, []byte("p")) == nil {
			}
			return
		}
	}
}

// hold keeps c open, discarding what the client sends, until the client
// or the server closes it.
func (s *HostileWS) hold(c net.Conn) {
	_, _ = io.Copy(io.Discard, c)
}

// wsWriter writes server frames: unmasked, as RFC 6455 requires, unless
// masked says to break that rule.
type wsWriter struct {
	c      net.Conn
	masked bool
}

// wsMask is the masking key of a hostile masked frame.
var wsMask = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// header writes a frame header announcing n bytes.
func (w *wsWriter) header(fin bool, op byte, n uint64) error {
	b := make([]byte, 0, 14)
	first := op
	if fin {
		first |= 0x80
	}
	b = append(b, first)
	var maskBit byte
	if w.masked {
		maskBit = 0x80
	}
	switch {
	case n < 126:
		b = append(b, maskBit|byte(n))
	case n <= 0xffff:
		b = append(b, maskBit|126, byte(n>>8), byte(n))
	default:
		b = append(b, maskBit|127)
		b = binary.BigEndian.AppendUint64(b, n)
	}
	if w.masked {
		b = append(b, wsMask[:]...)
	}
	_, err := w.c.Write(b)
	return err
}

func (w *wsWriter) frame(fin bool, op byte, p []byte) error {
	if err := w.header(fin, op, uint64(len(p))); err != nil {
		return err
	}
	if len(p) == 0 {
		return nil
	}
	if w.masked {
		q := make([]byte, len(p))
		for i := range p {
			q[i] = p[i] ^ wsMask[i%4]
		}
		p = q
	}
	_, err := w.c.Write(p)
	return err
}

// readWSFrame reads one client frame (masked, as RFC 6455 requires of
// clients) and returns its opcode and unmasked payload.
func readWSFrame(br *bufio.Reader, limit uint64) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	op := h[0] & 0x0f
	masked := h[1]&0x80 != 0
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > limit {
		return 0, nil, errors.New("frame over the limit")
	}
	var mask [4]byte
	if masked {
		if _, err := io.ReadFull(br, mask[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	if masked {
		for i := range p {
			p[i] ^= mask[i%4]
		}
	}
	return op, p, nil
}
