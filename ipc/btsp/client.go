package btsp

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/curve25519"
)

// ClientConfig says how Client shakes hands.
type ClientConfig struct {
	// Seed is the family seed's bytes (one of SeedCandidates). Required.
	Seed []byte
	// Framing of the handshake messages.
	Framing Framing
	// Cipher is the preferred cipher; "" means CipherNull. The server decides.
	Cipher Cipher
	// Negotiate asks, after a JSON-line handshake that settled on the null
	// cipher, for a btsp.negotiate upgrade to chacha20-poly1305, whose keys
	// come from the handshake key (so they authenticate the server). Anything
	// else (a refusal, "cipher":"null", a handshake cipher other than null, the
	// length-prefixed framing) fails the handshake with reason
	// negotiate_refused: the session never silently stays plaintext.
	Negotiate bool
	// Prefix sends the riboCipher bytes (EC 03 for JSON-line, EC 02 for
	// length-prefixed) before the hello.
	Prefix bool
	// MaxFrame bounds the session's incoming messages; 0 means the defaults.
	MaxFrame int64
	// Trace, if set, receives a human note for each handshake step. Notes never
	// carry seeds, keys, HMACs or nonces.
	Trace func(note string)
}

// Client runs the client side of a BTSP handshake on conn and returns the
// session that carries messages afterwards. ctx bounds the handshake (its
// deadline becomes the connection's; the deadline is cleared afterwards). On
// failure conn is closed and the error is a *HandshakeError (Reason
// family_verification means the seed does not match; try the next candidate
// on a new connection) or a configuration error.
func Client(ctx context.Context, conn net.Conn, cfg ClientConfig) (*Session, error) {
	if len(cfg.Seed) == 0 {
		conn.Close()
		return nil, errors.New("btsp: no family seed to shake hands with")
	}
	if cfg.Framing != JSONLine && cfg.Framing != LengthPrefixed {
		conn.Close()
		return nil, fmt.Errorf("btsp: unknown framing %d", cfg.Framing)
	}
	disarm := armDeadline(ctx, conn)
	h := &hsConn{ctx: ctx, conn: conn, r: bufio.NewReaderSize(conn, 64<<10), framing: cfg.Framing, trace: cfg.Trace}
	s, err := clientHandshake(h, cfg)
	disarm()
	if err != nil {
		var he *HandshakeError
		if errors.As(err, &he) {
			he.Spoke = he.Spoke || h.spoke
			if ctx.Err() != nil && he.Reason == ReasonIO {
				he.Reason, he.Err = ReasonTimeout, context.Cause(ctx)
			}
		}
		conn.Close()
		return nil, err
	}
	return s, nil
}

func clientHandshake(h *hsConn, cfg ClientConfig) (*Session, error) {
	conn := h.conn
	if cfg.Prefix {
		h.prefix = PrefixFor(cfg.Framing)
	}

	secret := make([]byte, KeySize)
	if _, err := io.ReadFull(rand.Reader, secret); err != nil {
		return nil, fmt.Errorf("btsp: ephemeral key: %w", err)
	}
	defer clear(secret)
	pub, err := curve25519.X25519(secret, curve25519.Basepoint)
	if err != nil {
		return nil, fmt.Errorf("btsp: ephemeral key: %w", err)
	}

	hello := clientHelloMsg{Version: Version, Pub: b64(pub)}
	if cfg.Framing == JSONLine {
		hello.Protocol = "btsp"
	}
	if err := h.write("client hello", hello); err != nil {
		return nil, err
	}
	if cfg.Prefix {
		h.note(fmt.Sprintf("sent client hello (%s, riboCipher prefix EC %02X, version 1, X25519 public key)", cfg.Framing, PrefixFor(cfg.Framing)[1]))
	} else {
		h.note(fmt.Sprintf("sent client hello (%s, version 1, X25519 public key)", cfg.Framing))
	}

	msg, err := h.read("server hello")
	if err != nil {
		return nil, err
	}
	sh, err := ParseServerHello(msg)
	if err != nil {
		return nil, err
	}
	h.spoke = true // a server hello in this framing: the peer speaks it
	if sh.SessionID != "" {
		h.note("server hello: version 1, session " + sanitize(sh.SessionID))
	} else {
		h.note("server hello: version 1")
	}

	hk := HandshakeKey(cfg.Seed)
	defer clear(hk)
	pref := cfg.Cipher
	if pref == "" {
		pref = CipherNull
	}
	resp := responseMsg{Response: b64(ChallengeResponse(hk, sh.Challenge, pub, sh.Pub)), PreferredCipher: string(pref)}
	if err := h.write("challenge response", resp); err != nil {
		return nil, err
	}
	h.note("sent challenge response, preferring cipher " + string(pref))

	msg, err = h.read("completion")
	if err != nil {
		return nil, err
	}
	c, err := ParseCompletion(msg)
	if err != nil {
		return nil, err
	}
	if cfg.Framing == LengthPrefixed {
		want := ServerProof(hk, sh.Challenge, sh.Pub, pub)
		if c.ServerProof == nil || !hmac.Equal(want, c.ServerProof) {
			return nil, &HandshakeError{Reason: ReasonServerProofMismatch, Step: "completion",
				Detail: "the server did not prove it holds the family seed"}
		}
		h.note("server proof verified")
	}
	if c.Cipher.Strength() < ParseCipher(string(pref)).Strength() {
		return nil, &HandshakeError{Reason: ReasonWeakerCipher, Step: "completion",
			Detail: fmt.Sprintf("the server chose %s, weaker than the %s asked for", sanitize(c.CipherName), pref)}
	}
	sid := c.SessionID
	if sid == "" {
		sid = sh.SessionID
	}
	if c.Cipher != CipherNull && sid == "" {
		return nil, &HandshakeError{Reason: ReasonMalformed, Step: "completion", Detail: "no session id to derive keys from"}
	}
	if c.Cipher != ParseCipher(string(pref)) {
		h.note(fmt.Sprintf("server chose cipher %s (asked for %s)", sanitize(c.CipherName), pref))
	}

	s := newSession(conn, h.r, cfg.Framing, false, sid, cfg.MaxFrame)
	var shared []byte
	if c.Cipher != CipherNull {
		shared, err = X25519(secret, sh.Pub)
		if err != nil {
			return nil, &HandshakeError{Reason: ReasonMalformed, Step: "completion", Detail: "server public key is a low-order point"}
		}
		defer clear(shared)
	}
	if err := s.setCipher(c.Cipher, shared); err != nil {
		return nil, err
	}
	s.serverAuth = cfg.Framing == LengthPrefixed // server_proof verified above
	h.note("handshake complete: " + s.Describe())

	if cfg.Negotiate {
		if cfg.Framing != JSONLine || c.Cipher != CipherNull {
			return nil, &HandshakeError{Reason: ReasonNegotiateRefused, Step: "negotiate",
				Detail: fmt.Sprintf("btsp.negotiate only upgrades a JSON-line null-cipher session (this one is %s, cipher %s)", cfg.Framing, sanitize(c.CipherName))}
		}
		if err := clientNegotiate(h, s, hk); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// negotiateRequest is the btsp.negotiate call's shape.
type negotiateRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  negotiateParams `json:"params"`
	ID      int             `json:"id"`
}

type negotiateParams struct {
	SessionID   string   `json:"session_id"`
	Ciphers     []string `json:"ciphers"`
	ClientNonce string   `json:"client_nonce"`
}

type negotiateResult struct {
	Cipher      string `json:"cipher"`
	ServerNonce string `json:"server_nonce,omitempty"`
}

// maxNegotiateSkips bounds how many unrelated lines the client skips while
// waiting for the btsp.negotiate answer.
const maxNegotiateSkips = 64

func clientNegotiate(h *hsConn, s *Session, hk []byte) error {
	const step = "negotiate"
	cn := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, cn); err != nil {
		return fmt.Errorf("btsp: nonce: %w", err)
	}
	req := negotiateRequest{JSONRPC: "2.0", Method: "btsp.negotiate", ID: 1,
		Params: negotiateParams{SessionID: s.sessionID, Ciphers: []string{NegotiatedCipher}, ClientNonce: b64(cn)}}
	if err := h.write(step, req); err != nil {
		return err
	}
	h.note("sent btsp.negotiate offering chacha20-poly1305")
	for skipped := 0; ; skipped++ {
		if skipped > maxNegotiateSkips {
			return &HandshakeError{Reason: ReasonMalformed, Step: step, Detail: "no answer to btsp.negotiate among the peer's messages"}
		}
		line, err := h.read(step)
		if err != nil {
			return err
		}
		var m struct {
			ID     json.RawMessage  `json:"id"`
			Method string           `json:"method"`
			Result *negotiateResult `json:"result"`
			Error  *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &m) != nil || m.Method != "" || strings.TrimSpace(string(m.ID)) != "1" {
			h.note("skipped a message that is not the btsp.negotiate answer")
			continue
		}
		if m.Error != nil {
			return &HandshakeError{Reason: ReasonNegotiateRefused, Step: step, FromPeer: true,
				Detail: fmt.Sprintf("the server answered error %d %q", m.Error.Code, sanitize(m.Error.Message))}
		}
		if m.Result == nil || m.Result.Cipher != NegotiatedCipher {
			name := ""
			if m.Result != nil {
				name = m.Result.Cipher
			}
			return &HandshakeError{Reason: ReasonNegotiateRefused, Step: step, FromPeer: true,
				Detail: fmt.Sprintf("the server kept cipher %q: the session would stay plaintext", sanitize(name))}
		}
		sn, ok := decodeB64(m.Result.ServerNonce)
		if !ok || len(sn) != 32 {
			return &HandshakeError{Reason: ReasonMalformed, Step: step, Detail: "server_nonce is not base64 of 32 bytes"}
		}
		c2s, s2c := NegotiateKeys(hk, cn, sn)
		if err := s.upgradeNegotiated(s2c, c2s); err != nil {
			return err
		}
		h.note("btsp.negotiate: upgraded to chacha20-poly1305 frames")
		return nil
	}
}

// upgradeNegotiated switches both directions to random-nonce chacha20-poly1305
// frames with the given read and write keys. Callers hold whatever lock the
// write side needs.
func (s *Session) upgradeNegotiated(rk, wk []byte) error {
	ra, err := chacha20poly1305.New(rk)
	if err != nil {
		return err
	}
	wa, err := chacha20poly1305.New(wk)
	if err != nil {
		return err
	}
	s.raead, s.waead = ra, wa
	s.rmode, s.wmode = modeRandomAEAD, modeRandomAEAD
	s.infoMu.Lock()
	s.cipher, s.negotiated = CipherChaCha20Poly1305, true
	s.serverAuth = !s.isServer // keys from the handshake key: only a seed holder can use them
	s.infoMu.Unlock()
	return nil
}
