package btsp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// Handshake messages as they travel. Fields that only one framing carries are
// omitempty.
type clientHelloMsg struct {
	Protocol string `json:"protocol,omitempty"`
	Version  int    `json:"version"`
	Pub      string `json:"client_ephemeral_pub"`
}

type serverHelloMsg struct {
	Version   int    `json:"version"`
	Pub       string `json:"server_ephemeral_pub"`
	Challenge string `json:"challenge"`
	SessionID string `json:"session_id,omitempty"`
}

type responseMsg struct {
	Response        string `json:"response"`
	PreferredCipher string `json:"preferred_cipher"`
}

type completeLineMsg struct {
	Status    string `json:"status"`
	SessionID string `json:"session_id"`
	Cipher    string `json:"cipher"`
}

type completeLPMsg struct {
	Cipher      string `json:"cipher"`
	SessionID   string `json:"session_id"`
	ServerProof string `json:"server_proof"`
}

type failureMsg struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

const maxSessionID = 256
const maxChallenge = 1024

// ClientHello is a parsed client hello, as the server sees it.
type ClientHello struct {
	Pub []byte // the client's X25519 public key, 32 bytes
}

// ParseClientHello parses a client's first handshake message in the given
// framing. The JSON-line hello must carry "protocol":"btsp" and no "jsonrpc".
// Failures are *HandshakeError with reason malformed, unsupported_version or
// invalid_key_length.
func ParseClientHello(msg []byte, f Framing) (*ClientHello, error) {
	var m struct {
		Protocol *string         `json:"protocol"`
		JSONRPC  json.RawMessage `json:"jsonrpc"`
		Version  json.RawMessage `json:"version"`
		Pub      *string         `json:"client_ephemeral_pub"`
	}
	const step = "client hello"
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, hsErr(ReasonMalformed, step, "not a JSON object")
	}
	if f == JSONLine && (m.Protocol == nil || *m.Protocol != "btsp" || m.JSONRPC != nil) {
		return nil, hsErr(ReasonMalformed, step, "not a BTSP hello (no \"protocol\":\"btsp\", or a JSON-RPC message)")
	}
	if v, ok := versionOf(m.Version); !ok || v != Version {
		return nil, hsErr(ReasonUnsupportedVersion, step, "version "+sanitize(string(m.Version)))
	}
	if m.Pub == nil {
		return nil, hsErr(ReasonMalformed, step, "no client_ephemeral_pub")
	}
	pub, err := ephemeralKey(step, "client_ephemeral_pub", *m.Pub)
	if err != nil {
		return nil, err
	}
	return &ClientHello{Pub: pub}, nil
}

// ServerHello is a parsed server hello, as the client sees it.
type ServerHello struct {
	Pub       []byte // the server's X25519 public key, 32 bytes
	Challenge []byte
	SessionID string // empty on the length-prefixed path
}

// ParseServerHello parses a server's answer to the client hello. A
// {"error":"handshake_failed",...} answer is a *HandshakeError with FromPeer set.
// A missing version is tolerated; any version other than 1 is unsupported_version.
func ParseServerHello(msg []byte) (*ServerHello, error) {
	var m struct {
		Error        json.RawMessage `json:"error"`
		Reason       string          `json:"reason"`
		Version      json.RawMessage `json:"version"`
		Pub          *string         `json:"server_ephemeral_pub"`
		Challenge    *string         `json:"challenge"`
		SessionID    string          `json:"session_id"`
		SessionToken string          `json:"session_token"`
	}
	const step = "server hello"
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, hsErr(ReasonMalformed, step, "not a JSON object")
	}
	if m.Error != nil {
		return nil, peerErr(step, m.Error, m.Reason)
	}
	if m.Version != nil {
		if v, ok := versionOf(m.Version); !ok || v != Version {
			return nil, hsErr(ReasonUnsupportedVersion, step, "server speaks version "+sanitize(string(m.Version)))
		}
	}
	if m.Pub == nil || m.Challenge == nil {
		return nil, hsErr(ReasonMalformed, step, "no server_ephemeral_pub or challenge")
	}
	pub, err := ephemeralKey(step, "server_ephemeral_pub", *m.Pub)
	if err != nil {
		return nil, err
	}
	ch, ok := decodeB64(*m.Challenge)
	if !ok || len(ch) == 0 || len(ch) > maxChallenge {
		return nil, hsErr(ReasonMalformed, step, "challenge is not base64 of 1 to 1024 bytes")
	}
	sid := m.SessionID
	if sid == "" {
		sid = m.SessionToken
	}
	if len(sid) > maxSessionID {
		return nil, hsErr(ReasonMalformed, step, "session id longer than 256 bytes")
	}
	return &ServerHello{Pub: pub, Challenge: ch, SessionID: sid}, nil
}

// Completion is a parsed last handshake message, as the client sees it.
type Completion struct {
	Cipher      Cipher // after ParseCipher
	CipherName  string // as the server spelled it
	SessionID   string // session_id or session_token; may be empty
	ServerProof []byte // length-prefixed path only; nil when absent
}

// ParseCompletion parses the server's last handshake message. On the
// JSON-line path status must be ok, complete or absent; a failure answer is a
// *HandshakeError with FromPeer set. The server proof is returned, not checked.
func ParseCompletion(msg []byte) (*Completion, error) {
	var m struct {
		Error        json.RawMessage `json:"error"`
		Reason       string          `json:"reason"`
		Status       *string         `json:"status"`
		SessionID    string          `json:"session_id"`
		SessionToken string          `json:"session_token"`
		Cipher       string          `json:"cipher"`
		ServerProof  *string         `json:"server_proof"`
	}
	const step = "completion"
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, hsErr(ReasonMalformed, step, "not a JSON object")
	}
	if m.Error != nil {
		return nil, peerErr(step, m.Error, m.Reason)
	}
	if m.Status != nil {
		switch *m.Status {
		case "ok", "complete":
		default:
			return nil, hsErr(ReasonMalformed, step, "status "+strconv.Quote(sanitize(*m.Status)))
		}
	}
	c := &Completion{Cipher: ParseCipher(m.Cipher), CipherName: m.Cipher, SessionID: m.SessionID}
	if c.SessionID == "" {
		c.SessionID = m.SessionToken
	}
	if len(c.SessionID) > maxSessionID {
		return nil, hsErr(ReasonMalformed, step, "session id longer than 256 bytes")
	}
	if m.ServerProof != nil {
		p, ok := decodeB64(*m.ServerProof)
		if !ok {
			return nil, hsErr(ReasonServerProofMismatch, step, "server_proof is not base64")
		}
		c.ServerProof = p
	}
	return c, nil
}

// parseResponse parses the client's challenge response on the server side.
func parseResponse(msg []byte) (resp []byte, preferred string, err error) {
	var m struct {
		Response        *string `json:"response"`
		PreferredCipher string  `json:"preferred_cipher"`
	}
	const step = "challenge response"
	if json.Unmarshal(msg, &m) != nil || m.Response == nil {
		return nil, "", hsErr(ReasonMalformed, step, "no response field")
	}
	r, ok := decodeB64(*m.Response)
	if !ok {
		return nil, "", hsErr(ReasonMalformed, step, "response is not base64")
	}
	return r, m.PreferredCipher, nil
}

func hsErr(reason, step, detail string) *HandshakeError {
	return &HandshakeError{Reason: reason, Step: step, Detail: detail}
}

// peerErr turns a peer's "error" field into a HandshakeError: a BTSP failure
// {"error":"handshake_failed","reason":...}, or a JSON-RPC error object from a
// peer that did not take the hello for a handshake (its code and message go in
// Detail, reason malformed).
func peerErr(step string, errField json.RawMessage, reason string) *HandshakeError {
	var word string
	if json.Unmarshal(errField, &word) != nil {
		var rpc struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(errField, &rpc) == nil && (rpc.Code != 0 || rpc.Message != "") {
			return &HandshakeError{Reason: ReasonMalformed, Step: step,
				Detail: "peer answered a JSON-RPC error " + strconv.FormatInt(rpc.Code, 10) + " " + strconv.Quote(sanitize(rpc.Message))}
		}
		return hsErr(ReasonMalformed, step, "unreadable error field")
	}
	r := sanitize(reason)
	if r == "" {
		r = "unspecified"
	}
	e := &HandshakeError{Reason: r, Step: step, FromPeer: true}
	if word != "handshake_failed" {
		e.Detail = "error " + strconv.Quote(sanitize(word))
	}
	return e
}

// versionOf reads a JSON number that is a whole number.
func versionOf(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

var b64Encodings = []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding}

// decodeB64 accepts standard or URL base64, padded or not.
func decodeB64(s string) ([]byte, bool) {
	for _, enc := range b64Encodings {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// ephemeralKey decodes a hello's X25519 public key: base64 of KeySize bytes.
func ephemeralKey(step, field, s string) ([]byte, error) {
	pub, ok := decodeB64(s)
	if !ok {
		return nil, hsErr(ReasonMalformed, step, field+" is not base64")
	}
	if len(pub) != KeySize {
		return nil, hsErr(ReasonInvalidKeyLength, step, field+" is "+strconv.Itoa(len(pub))+" bytes")
	}
	return pub, nil
}
