package btsp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"golang.org/x/crypto/curve25519"
)

// ServerConfig says how Server answers a handshake.
type ServerConfig struct {
	// Seed is the family seed's bytes. Required.
	Seed []byte
	// Cipher, if set, is the cipher the server picks whatever the client
	// prefers. Empty honours the client's preferred_cipher through ParseCipher
	// (absent means null, unknown names mean chacha20_poly1305).
	Cipher Cipher
	// NoNegotiate makes the server answer btsp.negotiate with "cipher":"null".
	NoNegotiate bool
	// SessionID, if set, is the session id to assign (tests); empty means 16
	// random bytes in hex.
	SessionID string
	// Reader, if set, is a buffered reader over conn that the caller already
	// peeked into (see IsHandshakeStart); Server reads through it.
	Reader *bufio.Reader
	// MaxFrame bounds the session's incoming messages; 0 means the defaults.
	MaxFrame int64
	// Trace, if set, receives a human note for each handshake step.
	Trace func(note string)
}

// minNegotiateSeed is the shortest seed BearDog negotiates with.
const minNegotiateSeed = MinNegotiateSeed

// MinNegotiateSeed is the shortest seed, in bytes, that BearDog agrees to
// a btsp.negotiate upgrade with: with a shorter one it refuses the upgrade
// and a client must take the length-prefixed handshake instead.
const MinNegotiateSeed = 16

// Server runs the server side of a BTSP handshake on conn. It detects the
// framing from the first bytes: an optional riboCipher prefix (EC 03 JSON-line,
// EC 02 length-prefixed), then a JSON-line hello ({"protocol":"btsp",...})
// or else a u32 length prefix. It answers a bad response, version or key with
// {"error":"handshake_failed","reason":...} and closes; it closes without a
// word on a malformed message. On failure conn is closed and the error is a
// *HandshakeError.
//
// The returned server session answers a btsp.negotiate request that arrives as
// the first message inside ReadFrame (upgrading a JSON-line null session to
// chacha20-poly1305, answering "cipher":"null" on any other) and returns only
// the messages after it.
func Server(ctx context.Context, conn net.Conn, cfg ServerConfig) (*Session, error) {
	if len(cfg.Seed) == 0 {
		conn.Close()
		return nil, errors.New("btsp: no family seed to shake hands with")
	}
	disarm := armDeadline(ctx, conn)
	s, err := serverHandshake(ctx, conn, cfg)
	disarm()
	if err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func serverHandshake(ctx context.Context, conn net.Conn, cfg ServerConfig) (*Session, error) {
	r := cfg.Reader
	if r == nil {
		r = bufio.NewReaderSize(conn, 64<<10)
	}
	h := &hsConn{ctx: ctx, conn: conn, r: r, trace: cfg.Trace}
	f, prefixed, err := detectFraming(r)
	if err != nil {
		return nil, h.ioErr("client hello", err)
	}
	if f < 0 {
		return nil, &HandshakeError{Reason: ReasonMalformed, Step: "client hello", Detail: "riboCipher prefix does not announce BTSP"}
	}
	h.framing = f
	if prefixed {
		h.note("riboCipher prefix announces a " + f.String() + " handshake")
	}

	// fail answers a handshake failure in the peer's framing, then gives up.
	fail := func(e *HandshakeError) error {
		switch e.Reason {
		case ReasonFamilyVerification, ReasonUnsupportedVersion, ReasonInvalidKeyLength:
			_ = h.write(e.Step, failureMsg{Error: "handshake_failed", Reason: e.Reason})
			h.note("refused the handshake: " + e.Reason)
		default:
			h.note("closing without a word: " + e.Reason)
		}
		return e
	}

	msg, err := h.read("client hello")
	if err != nil {
		return nil, err
	}
	ch, err := ParseClientHello(msg, f)
	if err != nil {
		return nil, fail(err.(*HandshakeError))
	}
	h.note("client hello (" + f.String() + ", version 1)")

	secret := make([]byte, KeySize)
	challenge := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, secret); err != nil {
		return nil, fmt.Errorf("btsp: ephemeral key: %w", err)
	}
	defer clear(secret)
	if _, err := io.ReadFull(rand.Reader, challenge); err != nil {
		return nil, fmt.Errorf("btsp: challenge: %w", err)
	}
	pub, err := curve25519.X25519(secret, curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("btsp: ephemeral key: %w", err)
	}
	sid := cfg.SessionID
	if sid == "" {
		var b [16]byte
		if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
			return nil, fmt.Errorf("btsp: session id: %w", err)
		}
		sid = hex.EncodeToString(b[:])
	}

	sh := serverHelloMsg{Version: Version, Pub: b64(pub), Challenge: b64(challenge)}
	if f == JSONLine {
		sh.SessionID = sid
	}
	if err := h.write("server hello", sh); err != nil {
		return nil, err
	}
	h.note("sent server hello, session " + sanitize(sid))

	msg, err = h.read("challenge response")
	if err != nil {
		return nil, err
	}
	resp, preferred, err := parseResponse(msg)
	if err != nil {
		return nil, fail(err.(*HandshakeError))
	}
	hk := HandshakeKey(cfg.Seed)
	if !hmac.Equal(resp, ChallengeResponse(hk, challenge, ch.Pub, pub)) {
		clear(hk)
		return nil, fail(&HandshakeError{Reason: ReasonFamilyVerification, Step: "challenge response",
			Detail: "the client's response does not verify"})
	}
	c := cfg.Cipher
	if c == "" {
		c = ParseCipher(preferred)
	} else {
		c = ParseCipher(string(c))
	}
	h.note("challenge response verified; cipher " + string(c))

	var shared []byte
	if c != CipherNull {
		if shared, err = X25519(secret, ch.Pub); err != nil {
			clear(hk)
			return nil, fail(&HandshakeError{Reason: ReasonMalformed, Step: "challenge response",
				Detail: "client public key is a low-order point"})
		}
		defer clear(shared)
	}
	var done any = completeLineMsg{Status: "ok", SessionID: sid, Cipher: string(c)}
	if f == LengthPrefixed {
		done = completeLPMsg{Cipher: string(c), SessionID: sid, ServerProof: b64(ServerProof(hk, challenge, pub, ch.Pub))}
	}
	if err := h.write("completion", done); err != nil {
		clear(hk)
		return nil, err
	}

	s := newSession(conn, r, f, true, sid, cfg.MaxFrame)
	if err := s.setCipher(c, shared); err != nil {
		clear(hk)
		return nil, err
	}
	s.negPending = true
	s.negAllowed = !cfg.NoNegotiate
	s.negSeedOK = len(cfg.Seed) >= minNegotiateSeed
	s.negKey = hk
	h.note("handshake complete: " + s.Describe())
	return s, nil
}

// detectFraming reads the framing of a handshake from its first bytes and
// consumes a riboCipher prefix. f is -1 for a prefix that is not a BTSP one.
func detectFraming(r *bufio.Reader) (f Framing, prefixed bool, err error) {
	b, err := r.Peek(1)
	if err != nil {
		return 0, false, err
	}
	if b[0] == ribo0 {
		b, err = r.Peek(2)
		if err != nil {
			return 0, false, err
		}
		_, _ = r.Discard(2)
		switch b[1] {
		case riboJSONLine:
			return JSONLine, true, nil
		case riboLengthPrefixed:
			return LengthPrefixed, true, nil
		}
		return -1, true, nil
	}
	switch b[0] {
	case '{', ' ', '\t', '\r', '\n':
		return JSONLine, false, nil
	}
	return LengthPrefixed, false, nil
}

// IsHandshakeStart reports whether the first bytes a client sent begin a BTSP
// handshake rather than cleartext JSON-RPC: a riboCipher EC 02 / EC 03 prefix,
// a JSON-line hello (an object with "protocol":"btsp" and no "jsonrpc"), or a
// u32 length prefix of a plausible handshake size followed by "{". Pass as
// much as is buffered (at least the first line, or 5 bytes); a JSON line that
// is cut off is judged by the keys it shows so far.
func IsHandshakeStart(first []byte) bool {
	if len(first) >= 2 && first[0] == ribo0 {
		return first[1] == riboJSONLine || first[1] == riboLengthPrefixed
	}
	t := trimSpace(first)
	if len(t) > 0 && t[0] == '{' {
		line := t
		if i := bytes.IndexByte(t, '\n'); i >= 0 {
			line = t[:i]
		}
		var m struct {
			Protocol *string         `json:"protocol"`
			JSONRPC  json.RawMessage `json:"jsonrpc"`
		}
		if json.Unmarshal(line, &m) == nil {
			return m.Protocol != nil && *m.Protocol == "btsp" && m.JSONRPC == nil
		}
		return bytes.Contains(line, []byte(`"protocol"`)) && bytes.Contains(line, []byte(`"btsp"`)) &&
			!bytes.Contains(line, []byte(`"jsonrpc"`))
	}
	if len(first) >= 5 {
		n := binary.BigEndian.Uint32(first)
		return n > 0 && n <= MaxHandshakeMessage && first[4] == '{'
	}
	return false
}

// serverNegotiate answers a btsp.negotiate request arriving as the first
// message of a server session. It reports whether p was that request.
func (s *Session) serverNegotiate(p []byte) (bool, error) {
	if !bytes.Contains(p, []byte("btsp.negotiate")) {
		return false, nil
	}
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		ID     json.RawMessage `json:"id"`
	}
	if json.Unmarshal(p, &req) != nil || req.Method != "btsp.negotiate" {
		return false, nil
	}
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	var params negotiateParams
	if err := json.Unmarshal(req.Params, &params); err != nil {
		return true, s.WriteFrame(rpcError(id, -32602, "invalid btsp.negotiate params"))
	}
	if params.SessionID != "" && params.SessionID != s.sessionID {
		return true, s.WriteFrame(rpcError(id, -32602, "unknown session_id"))
	}
	offered := false
	for _, c := range params.Ciphers {
		offered = offered || c == NegotiatedCipher
	}
	if !offered || !s.negAllowed || s.rmode != modeNDJSON {
		return true, s.WriteFrame(rpcResult(id, negotiateResult{Cipher: "null"}))
	}
	if !s.negSeedOK {
		return true, s.WriteFrame(rpcError(id, -32602, "family seed too short for negotiation"))
	}
	cn, ok := decodeB64(params.ClientNonce)
	if !ok || len(cn) != 32 {
		return true, s.WriteFrame(rpcError(id, -32602, "client_nonce must be base64 of 32 bytes"))
	}
	sn := make([]byte, 32)
	if _, err := io.ReadFull(s.negRand, sn); err != nil {
		return true, fmt.Errorf("btsp: nonce: %w", err)
	}
	c2s, s2c := NegotiateKeys(s.negKey, cn, sn)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.writeLocked(rpcResult(id, negotiateResult{Cipher: NegotiatedCipher, ServerNonce: b64(sn)})); err != nil {
		return true, err
	}
	return true, s.upgradeNegotiated(c2s, s2c)
}

func rpcResult(id json.RawMessage, result any) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  any             `json:"result"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", result, id})
	return b
}

func rpcError(id json.RawMessage, code int, msg string) []byte {
	type e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Error   e               `json:"error"`
		ID      json.RawMessage `json:"id"`
	}{"2.0", e{code, msg}, id})
	return b
}
