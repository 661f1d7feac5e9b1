// Package btsp speaks BTSP, the family-scoped secure tunnel of the primal
// ecosystem, on both the client and the server side.
//
// A handshake (Client or Server) proves that both ends hold the same family
// seed and picks a cipher; it returns a *Session, a message framer that carries
// whole JSON messages afterwards. What the Session puts on the wire depends on
// the handshake's framing and cipher, as live BearDog does it:
//
//   - JSON-line handshake, cipher null: plain NDJSON on the same connection.
//   - JSON-line handshake, cipher null, then a btsp.negotiate upgrade to
//     chacha20-poly1305: [u32 BE length][random nonce12][ciphertext||tag16] frames
//     with keys from the handshake key and both sides' nonces.
//   - Length-prefixed handshake, cipher null: plaintext [u32 BE length][JSON] frames.
//   - Any handshake with cipher chacha20_poly1305: [u32 BE length][nonce12][ciphertext||tag16]
//     frames, nonce = 4 zero bytes + big-endian u64 counter per direction from 0,
//     keys from X25519 of the ephemeral keys and the session id.
//   - Any handshake with cipher hmac_plain: [u32 BE length][plaintext][HMAC-SHA256(plaintext)]
//     frames, HMAC keys derived exactly like the chacha20_poly1305 keys (one per
//     direction). Plaintext is readable on the wire; the MAC has no counter, so
//     this cipher authenticates messages but does not stop replays.
//
// The package knows nothing of primalscope's other packages; *Session satisfies
// ipc.Framer and ipc.WriteDeadliner structurally. Nothing here logs, and no error
// or trace note carries a seed, a key, an HMAC or a nonce.
package btsp

import "strings"

// Version is the only BTSP handshake version there is.
const Version = 1

// Framing is how the handshake messages are delimited on the wire.
type Framing int

const (
	// JSONLine: one JSON object per "\n"-terminated line (primalSpring, biomeOS).
	JSONLine Framing = iota
	// LengthPrefixed: every message is [u32 big-endian length][JSON].
	LengthPrefixed
)

func (f Framing) String() string {
	switch f {
	case JSONLine:
		return "json-line"
	case LengthPrefixed:
		return "length-prefixed"
	}
	return "unknown"
}

// riboCipher prefixes that announce a BTSP handshake.
const (
	ribo0              = 0xEC
	riboLengthPrefixed = 0x02
	riboJSONLine       = 0x03
)

// PrefixFor returns the two riboCipher bytes that announce a handshake in framing f.
func PrefixFor(f Framing) []byte {
	if f == LengthPrefixed {
		return []byte{ribo0, riboLengthPrefixed}
	}
	return []byte{ribo0, riboJSONLine}
}

// Cipher names a session cipher as the handshake spells it.
type Cipher string

const (
	// CipherNull: no protection after the handshake (NDJSON on a JSON-line
	// handshake, plaintext length-prefixed frames on a length-prefixed one).
	CipherNull Cipher = "null"
	// CipherChaCha20Poly1305: encrypted, authenticated, counter-checked frames.
	CipherChaCha20Poly1305 Cipher = "chacha20_poly1305"
	// CipherHMACPlain: plaintext frames followed by HMAC-SHA256 of the
	// plaintext, keyed per direction with the same 32-byte keys
	// chacha20_poly1305 would use (SessionKeys). Authenticated, readable, and
	// without replay protection.
	CipherHMACPlain Cipher = "hmac_plain"
)

// Strength orders ciphers by protection: null (0) < hmac_plain (1) <
// chacha20_poly1305 (2). A server that chooses a cipher weaker than the one a
// client asked for fails the client's handshake.
func (c Cipher) Strength() int {
	switch c {
	case CipherChaCha20Poly1305:
		return 2
	case CipherHMACPlain:
		return 1
	}
	return 0
}

// NegotiatedCipher is the only cipher name btsp.negotiate upgrades to (hyphen).
const NegotiatedCipher = "chacha20-poly1305"

// ParseCipher maps a handshake cipher name to a Cipher the way BearDog does:
// "" and "null" are CipherNull, "chacha20" is an alias of chacha20_poly1305,
// "hmac_plain" is CipherHMACPlain, and any other name falls back to
// CipherChaCha20Poly1305 (never to null).
func ParseCipher(name string) Cipher {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "null":
		return CipherNull
	case "hmac_plain":
		return CipherHMACPlain
	}
	return CipherChaCha20Poly1305
}

// Default message size limits for a Session's ReadFrame.
const (
	DefaultMaxFrame       = 16 << 20 // length-prefixed and encrypted frames
	DefaultMaxNDJSONFrame = 64 << 20 // NDJSON lines after a JSON-line null handshake
	// MaxHandshakeMessage bounds every handshake message in either framing.
	MaxHandshakeMessage = 64 << 10
)
