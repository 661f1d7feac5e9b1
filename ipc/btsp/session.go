package btsp

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
)

// wireMode is what a Session puts on the wire in one direction.
type wireMode int

const (
	modeNDJSON      wireMode = iota // "\n"-terminated lines
	modePlainLP                     // [u32 len][JSON]
	modeCounterAEAD                 // [u32 len][nonce = 0000 || ctr64][ct||tag]
	modeHMAC                        // [u32 len][plaintext][hmac32]
	modeRandomAEAD                  // [u32 len][random nonce12][ct||tag] (btsp.negotiate)
)

const (
	nonceSize    = chacha20poly1305.NonceSize
	tagSize      = chacha20poly1305.Overhead
	aeadOverhead = nonceSize + tagSize
	macSize      = sha256.Size
)

// Session carries whole JSON messages over a connection after a BTSP
// handshake. One goroutine may call ReadFrame while another calls WriteFrame;
// Close may be called from any goroutine and unblocks ReadFrame.
type Session struct {
	conn     net.Conn  // nil only in package tests
	w        io.Writer // conn, or a test writer
	r        *bufio.Reader
	framing  Framing
	isServer bool
	maxFrame atomic.Int64

	// Read side, owned by the ReadFrame goroutine.
	rmode wireMode
	raead cipher.AEAD
	rmac  hash.Hash // HMAC-SHA256 keyed for the read direction (hmac_plain)
	rctr  uint64
	rseen nonceSet // modeRandomAEAD: the nonces of the frames accepted
	rerr  error
	// Server side: the first frame may be a btsp.negotiate request.
	negPending bool
	negAllowed bool
	negKey     []byte // the handshake key, dropped after the first frame
	negSeedOK  bool   // the seed is long enough (>= 16 bytes) to negotiate
	negRand    io.Reader

	wmu   sync.Mutex // guards the write side
	wmode wireMode
	waead cipher.AEAD
	wmac  hash.Hash
	wctr  uint64
	werr  error

	infoMu     sync.Mutex
	sessionID  string
	cipher     Cipher
	negotiated bool
	serverAuth bool // client side: the server proved it holds the seed

	closeOnce sync.Once
	closeErr  error
}

func newSession(conn net.Conn, r *bufio.Reader, f Framing, isServer bool, sessionID string, maxFrame int64) *Session {
	s := &Session{conn: conn, r: r, framing: f, isServer: isServer, sessionID: sessionID, cipher: CipherNull, negRand: rand.Reader}
	if conn != nil {
		s.w = conn
	}
	s.maxFrame.Store(maxFrame)
	return s
}

// setCipher sets both directions for the cipher the handshake chose. shared is
// the X25519 shared secret (unused for null).
func (s *Session) setCipher(c Cipher, shared []byte) error {
	s.cipher = c
	switch c {
	case CipherNull:
		m := modePlainLP
		if s.framing == JSONLine {
			m = modeNDJSON
		}
		s.rmode, s.wmode = m, m
		return nil
	case CipherChaCha20Poly1305, CipherHMACPlain:
	default:
		return fmt.Errorf("btsp: unknown cipher %q", c)
	}
	s2c, c2s := SessionKeys(shared, s.sessionID)
	rk, wk := s2c, c2s
	if s.isServer {
		rk, wk = c2s, s2c
	}
	if c == CipherHMACPlain {
		s.rmode, s.wmode = modeHMAC, modeHMAC
		s.rmac, s.wmac = hmac.New(sha256.New, rk), hmac.New(sha256.New, wk)
		return nil
	}
	var err error
	if s.raead, err = chacha20poly1305.New(rk); err != nil {
		return err
	}
	if s.waead, err = chacha20poly1305.New(wk); err != nil {
		return err
	}
	s.rmode, s.wmode = modeCounterAEAD, modeCounterAEAD
	return nil
}

// SessionID is the session id the server assigned.
func (s *Session) SessionID() string {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return s.sessionID
}

// Cipher is the cipher in force: the handshake's, or CipherChaCha20Poly1305
// after a btsp.negotiate upgrade (see Negotiated).
func (s *Session) Cipher() Cipher {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return s.cipher
}

// Negotiated reports whether a btsp.negotiate upgrade switched the session to
// chacha20-poly1305 frames with random nonces.
func (s *Session) Negotiated() bool {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return s.negotiated
}

// ServerAuthenticated reports, on a client session, whether the server has
// proved it holds the family seed: its server_proof verified (length-prefixed
// handshake), or the btsp.negotiate upgrade, whose keys come from the
// handshake key (proved by the server's first frame, which nobody without the
// seed can make authenticate). A JSON-line handshake alone proves nothing
// about the server: it reports false. Always false on a server session.
func (s *Session) ServerAuthenticated() bool {
	s.infoMu.Lock()
	defer s.infoMu.Unlock()
	return s.serverAuth
}

// Framing is the handshake's framing.
func (s *Session) Framing() Framing { return s.framing }

// Encrypted reports whether messages travel encrypted.
func (s *Session) Encrypted() bool {
	c := s.Cipher()
	return c == CipherChaCha20Poly1305
}

// Describe says in a few words what the session puts on the wire, for display.
func (s *Session) Describe() string {
	s.infoMu.Lock()
	c, neg := s.cipher, s.negotiated
	s.infoMu.Unlock()
	switch {
	case neg:
		return "BTSP json-line · negotiated chacha20-poly1305 frames"
	case c == CipherNull && s.framing == JSONLine:
		return "BTSP json-line · null cipher · NDJSON"
	case c == CipherNull:
		return "BTSP length-prefixed · null cipher · plaintext frames"
	case c == CipherHMACPlain:
		return "BTSP " + s.framing.String() + " · hmac_plain frames (authenticated, not encrypted)"
	}
	return "BTSP " + s.framing.String() + " · chacha20_poly1305 frames"
}

// SetMaxFrame sets the largest message ReadFrame accepts, in bytes; n <= 0
// restores the defaults (DefaultMaxFrame for frames, DefaultMaxNDJSONFrame for
// NDJSON lines). Safe to call at any time.
func (s *Session) SetMaxFrame(n int64) { s.maxFrame.Store(n) }

func (s *Session) limit(m wireMode) int64 {
	if n := s.maxFrame.Load(); n > 0 {
		return n
	}
	if m == modeNDJSON {
		return DefaultMaxNDJSONFrame
	}
	return DefaultMaxFrame
}

// SetWriteDeadline bounds WriteFrame calls in time, like net.Conn's.
func (s *Session) SetWriteDeadline(t time.Time) error {
	if s.conn == nil {
		return nil
	}
	return s.conn.SetWriteDeadline(t)
}

// Close closes the connection; a pending ReadFrame returns an error.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		if s.conn != nil {
			s.closeErr = s.conn.Close()
		}
	})
	return s.closeErr
}

// ReadFrame returns the next whole message, without delimiter or framing,
// decrypted and authenticated where the cipher says so. After any error the
// session returns that error for good. A server session answers a
// btsp.negotiate request arriving as the first message itself and does not
// return it.
func (s *Session) ReadFrame() ([]byte, error) {
	if s.rerr != nil {
		return nil, s.rerr
	}
	for {
		p, err := s.readOne()
		if err != nil {
			s.rerr = err
			return nil, err
		}
		if s.negPending {
			s.negPending = false
			handled, err := s.serverNegotiate(p)
			clear(s.negKey)
			s.negKey = nil
			if err != nil {
				s.rerr = err
				return nil, err
			}
			if handled {
				continue
			}
		}
		return p, nil
	}
}

func (s *Session) readOne() ([]byte, error) {
	lim := s.limit(s.rmode)
	switch s.rmode {
	case modeNDJSON:
		for {
			line, err := readLine(s.r, lim)
			if err != nil {
				return nil, err
			}
			if len(bytes.TrimSpace(line)) > 0 {
				return line, nil
			}
		}
	case modePlainLP:
		for {
			p, err := readLP(s.r, lim, 0)
			if err != nil || len(p) > 0 {
				return p, err
			}
		}
	case modeHMAC:
		if err := s.checkNotCleartext("an authenticated hmac_plain frame"); err != nil {
			return nil, err
		}
		p, err := readLP(s.r, lim, macSize)
		if err != nil {
			return nil, err
		}
		if len(p) < macSize {
			return nil, &FrameError{Fault: FaultShort, Reason: fmt.Sprintf("hmac_plain frame of %d bytes is shorter than its MAC", len(p))}
		}
		msg, tag := p[:len(p)-macSize], p[len(p)-macSize:]
		s.rmac.Reset()
		s.rmac.Write(msg)
		var sum [macSize]byte
		if !hmac.Equal(s.rmac.Sum(sum[:0]), tag) {
			return nil, &FrameError{Fault: FaultAuth, Reason: "hmac_plain MAC does not verify (wrong key, or tampered)"}
		}
		return msg[:len(msg):len(msg)], nil
	case modeCounterAEAD, modeRandomAEAD:
		if err := s.checkNotCleartext("an encrypted frame"); err != nil {
			return nil, err
		}
		p, err := readLP(s.r, lim, aeadOverhead)
		if err != nil {
			return nil, err
		}
		if len(p) < aeadOverhead {
			return nil, &FrameError{Fault: FaultShort, Reason: fmt.Sprintf("encrypted frame of %d bytes is shorter than nonce and tag", len(p))}
		}
		nonce := p[:nonceSize]
		if s.rmode == modeCounterAEAD {
			if binary.BigEndian.Uint32(nonce[:4]) != 0 {
				return nil, &FrameError{Fault: FaultAuth, Reason: "nonce does not start with 4 zero bytes"}
			}
			if got := binary.BigEndian.Uint64(nonce[4:]); got != s.rctr {
				return nil, &FrameError{Fault: FaultReplay, Reason: fmt.Sprintf("frame counter %d, expected %d (a replayed, reordered or dropped frame)", got, s.rctr)}
			}
		}
		out, err := s.raead.Open(p[nonceSize:nonceSize], nonce, p[nonceSize:], nil)
		if err != nil {
			return nil, &FrameError{Fault: FaultAuth, Reason: "frame does not authenticate (wrong key, or tampered)"}
		}
		if s.rmode == modeCounterAEAD {
			s.rctr++
		} else if err := s.rseen.add(nonce, maxSeenNonces); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, errors.New("btsp: session has no read mode")
}

// checkNotCleartext fails when the next bytes are a cleartext JSON message
// where what (an encrypted or authenticated frame) belongs: read as a
// length, "{\"" would announce a message of about 2 GB. Such bytes are a
// downgrade, or an impostor that cannot make a frame; they are named as
// such rather than as an over-long frame.
func (s *Session) checkNotCleartext(what string) error {
	b, err := s.r.Peek(2)
	if err != nil || !looksLikeJSON(b) {
		return nil // too short to tell: readLP says what it is
	}
	return &FrameError{Fault: FaultCleartext,
		Reason: "cleartext JSON where " + what + " belongs: a downgrade, or an impostor that does not hold the session keys"}
}

// looksLikeJSON reports whether b starts a JSON object or array: "{" or
// "[" followed by a quote, a brace, a bracket or whitespace. As a big-endian
// length those bytes announce 1.9 GB or more, far over any frame limit.
func looksLikeJSON(b []byte) bool {
	if len(b) < 2 || b[0] != '{' && b[0] != '[' {
		return false
	}
	switch b[1] {
	case '"', '{', '}', '[', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// maxSeenNonces bounds the nonces a negotiated session remembers to refuse
// replays (12 bytes and a map slot each: 29 MB of heap measured at the
// bound).
// A session that received this many frames ends (ErrSessionExhausted):
// it cannot tell replays any more, and is reopened.
const maxSeenNonces = 1 << 20

// ErrSessionExhausted ends a negotiated session that received
// maxSeenNonces frames: it could no longer tell a replay from a new frame.
// It is no security failure: open a new session.
var ErrSessionExhausted = errors.New("btsp: the session received too many frames to keep refusing replays; open a new one")

// nonceSet remembers the random nonces of the frames a negotiated session
// accepted: the btsp.negotiate frames carry no counter, so a replayed frame
// authenticates, and only its nonce, seen before, tells it.
type nonceSet map[[nonceSize]byte]struct{}

// add remembers nonce, failing when it was seen before (a replay) or when
// limit nonces are remembered already.
func (ns *nonceSet) add(nonce []byte, limit int) error {
	if *ns == nil {
		*ns = make(nonceSet, 64)
	}
	k := [nonceSize]byte(nonce)
	if _, seen := (*ns)[k]; seen {
		return &FrameError{Fault: FaultReplay, Reason: "a frame received before in this session, sent again (a replay)"}
	}
	if len(*ns) >= limit {
		return ErrSessionExhausted
	}
	(*ns)[k] = struct{}{}
	return nil
}

// WriteFrame writes one whole message. On an NDJSON session a message with
// newlines is compacted first (it must be JSON then).
func (s *Session) WriteFrame(p []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(p)
}

func (s *Session) writeLocked(p []byte) error {
	if s.werr != nil {
		return s.werr
	}
	buf, err := s.encode(p)
	if err != nil {
		return err // nothing written; the session is still good
	}
	if _, err := s.w.Write(buf); err != nil {
		s.werr = fmt.Errorf("btsp: write: %w", err)
		return s.werr
	}
	return nil
}

func (s *Session) encode(p []byte) ([]byte, error) {
	if int64(len(p)) > math.MaxUint32-64 {
		return nil, fmt.Errorf("btsp: message of %d bytes cannot be framed", len(p))
	}
	switch s.wmode {
	case modeNDJSON:
		if bytes.IndexByte(p, '\n') >= 0 {
			var c bytes.Buffer
			if err := json.Compact(&c, p); err != nil {
				return nil, fmt.Errorf("btsp: message has a newline and is not JSON: %w", err)
			}
			p = c.Bytes()
		}
		buf := make([]byte, 0, len(p)+1)
		return append(append(buf, p...), '\n'), nil
	case modePlainLP:
		buf := make([]byte, 4, 4+len(p))
		binary.BigEndian.PutUint32(buf, uint32(len(p)))
		return append(buf, p...), nil
	case modeHMAC:
		buf := make([]byte, 4, 4+len(p)+macSize)
		binary.BigEndian.PutUint32(buf, uint32(len(p)+macSize))
		buf = append(buf, p...)
		s.wmac.Reset()
		s.wmac.Write(p)
		return s.wmac.Sum(buf), nil
	case modeCounterAEAD, modeRandomAEAD:
		buf := make([]byte, 4+nonceSize, 4+nonceSize+len(p)+tagSize)
		binary.BigEndian.PutUint32(buf, uint32(nonceSize+len(p)+tagSize))
		nonce := buf[4 : 4+nonceSize]
		if s.wmode == modeCounterAEAD {
			if s.wctr == math.MaxUint64 {
				return nil, errors.New("btsp: send counter exhausted")
			}
			binary.BigEndian.PutUint64(nonce[4:], s.wctr)
			s.wctr++
		} else if _, err := io.ReadFull(s.negRand, nonce); err != nil {
			return nil, fmt.Errorf("btsp: nonce: %w", err)
		}
		return s.waead.Seal(buf, nonce, p, nil), nil
	}
	return nil, errors.New("btsp: session has no write mode")
}

// readLine reads one "\n"-terminated line of at most limit bytes (not counting
// "\r\n"), returning it without the terminator. A last line without "\n"
// before EOF is returned as a line. It never buffers more than limit+2 bytes.
func readLine(r *bufio.Reader, limit int64) ([]byte, error) {
	line, _, err := readLineCut(r, limit)
	return line, err
}

// readLineCut is readLine that also reports whether the line was cut short
// by EOF (no "\n" at its end).
func readLineCut(r *bufio.Reader, limit int64) (line []byte, cut bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if int64(len(buf))+int64(len(chunk)) > limit+2 {
			return nil, false, &FrameTooLargeError{Limit: limit, Size: -1}
		}
		if need := len(buf) + len(chunk); need > cap(buf) {
			// Double, so a long line costs about twice its size in total.
			n := max(2*cap(buf), need)
			if err == nil {
				n = need
			} else if int64(n) > limit+2 {
				n = int(limit + 2)
			}
			nb := make([]byte, len(buf), n)
			copy(nb, buf)
			buf = nb
		}
		buf = append(buf, chunk...)
		switch err {
		case nil:
		case bufio.ErrBufferFull:
			continue
		case io.EOF:
			if len(buf) == 0 {
				return nil, false, io.EOF
			}
			cut = true
		default:
			return nil, false, err
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if int64(len(buf)) > limit {
			return nil, false, &FrameTooLargeError{Limit: limit, Size: -1}
		}
		return buf, cut, nil
	}
}

// readLP reads one [u32 BE length][body] frame whose body may be at most
// limit+overhead bytes. The length is checked before anything is allocated,
// and large bodies are grown as their bytes arrive, not up front. io.EOF means
// the peer closed at a frame boundary.
func readLP(r io.Reader, limit, overhead int64) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n > limit+overhead {
		return nil, &FrameTooLargeError{Limit: limit, Size: n - overhead}
	}
	const chunk = 64 << 10
	if n <= chunk {
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, eofIsUnexpected(err)
		}
		return buf, nil
	}
	var b bytes.Buffer
	b.Grow(chunk)
	if _, err := io.CopyN(&b, r, n); err != nil {
		return nil, eofIsUnexpected(err)
	}
	return b.Bytes(), nil
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
