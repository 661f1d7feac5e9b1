package btsp

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/readfile"
	"golang.org/x/crypto/curve25519"
)

// KeySize is the size of X25519 keys, the handshake key and every session key.
const KeySize = 32

// HandshakeKey derives the handshake key from a family seed:
// HKDF-SHA256(salt="btsp-v1", ikm=seed, info="handshake"), 32 bytes.
func HandshakeKey(seed []byte) []byte {
	k, err := hkdf.Key(sha256.New, seed, []byte("btsp-v1"), "handshake", KeySize)
	if err != nil { // only for absurd lengths; 32 bytes never fails
		panic("btsp: hkdf: " + err.Error())
	}
	return k
}

// ChallengeResponse is the client's proof:
// HMAC-SHA256(handshakeKey, challenge || clientPub || serverPub).
func ChallengeResponse(handshakeKey, challenge, clientPub, serverPub []byte) []byte {
	return mac3(handshakeKey, challenge, clientPub, serverPub)
}

// ServerProof is the server's proof on the length-prefixed path:
// HMAC-SHA256(handshakeKey, challenge || serverPub || clientPub).
func ServerProof(handshakeKey, challenge, serverPub, clientPub []byte) []byte {
	return mac3(handshakeKey, challenge, serverPub, clientPub)
}

func mac3(key, a, b, c []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(a)
	m.Write(b)
	m.Write(c)
	return m.Sum(nil)
}

// SessionKeys derives the per-direction keys of a handshake that chose a real
// cipher: HKDF-SHA256(salt="btsp-session-v1", ikm=shared, info=sessionID),
// 64 bytes, the first 32 server→client, the last 32 client→server. shared is
// X25519(own secret, peer public).
func SessionKeys(shared []byte, sessionID string) (s2c, c2s []byte) {
	k, err := hkdf.Key(sha256.New, shared, []byte("btsp-session-v1"), sessionID, 2*KeySize)
	if err != nil {
		panic("btsp: hkdf: " + err.Error())
	}
	return k[:KeySize:KeySize], k[KeySize:]
}

// NegotiateKeys derives the keys of a btsp.negotiate upgrade:
// PRK = HKDF-Extract(salt=clientNonce||serverNonce, ikm=handshakeKey), then
// Expand with info "btsp-session-v1-c2s" and "btsp-session-v1-s2c", 32 bytes each.
func NegotiateKeys(handshakeKey, clientNonce, serverNonce []byte) (c2s, s2c []byte) {
	salt := make([]byte, 0, len(clientNonce)+len(serverNonce))
	salt = append(append(salt, clientNonce...), serverNonce...)
	prk, err := hkdf.Extract(sha256.New, handshakeKey, salt)
	if err == nil {
		c2s, err = hkdf.Expand(sha256.New, prk, "btsp-session-v1-c2s", KeySize)
	}
	if err == nil {
		s2c, err = hkdf.Expand(sha256.New, prk, "btsp-session-v1-s2c", KeySize)
	}
	if err != nil {
		panic("btsp: hkdf: " + err.Error())
	}
	return c2s, s2c
}

// X25519 computes the shared secret of secret and a peer's public key. It fails
// for a key that is not 32 bytes or a low-order point.
func X25519(secret, peerPub []byte) ([]byte, error) {
	if len(peerPub) != KeySize {
		return nil, fmt.Errorf("x25519: public key is %d bytes, want 32", len(peerPub))
	}
	return curve25519.X25519(secret, peerPub)
}

// SeedCandidates lists the byte strings a FAMILY_SEED value may stand for, in
// the order to try them: its raw UTF-8 bytes first (what BearDog uses), then,
// when it looks like hex (16 or more hex digits), its hex decoding, otherwise,
// when it looks like base64 (decoding to 12 or more bytes), its base64 decoding (what primalSpring also accepts). A caller whose
// handshake fails with a family_verification HandshakeError may reconnect and
// try the next candidate. An empty seed has no candidates.
func SeedCandidates(familySeed string) [][]byte {
	if familySeed == "" {
		return nil
	}
	out := [][]byte{[]byte(familySeed)}
	s := strings.TrimSpace(familySeed)
	if s == "" {
		return out
	}
	var dec []byte
	if looksHex(s) {
		dec, _ = hex.DecodeString(s)
	} else if b, ok := decodeB64(s); ok && len(b) >= minDecodedSeed {
		dec = b
	}
	if len(dec) > 0 && string(dec) != familySeed {
		out = append(out, dec)
	}
	return out
}

// A hex-looking seed has at least 16 hex digits; a base64-looking one decodes
// to at least 12 bytes. Shorter strings are taken as raw bytes only.
const (
	minHexSeed     = 16
	minDecodedSeed = 12
)

func looksHex(s string) bool {
	if len(s) < minHexSeed || len(s)%2 != 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// maxSeedFile bounds what ReadSeedFile reads.
const maxSeedFile = 64 << 10

// ReadSeedFile reads a family seed from a file and trims surrounding
// whitespace. It refuses, with *InsecureSeedFileError, a file that group or
// others may read (a seed is a family secret), as well as an empty file, a
// file that is not regular, or one over 64 KiB. Pass the result to SeedCandidates.
func ReadSeedFile(path string) (string, error) {
	f, st, err := readfile.Open(path)
	if err != nil {
		return "", fmt.Errorf("read seed file: %w", err)
	}
	defer f.Close()
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", &InsecureSeedFileError{Path: path, Mode: uint32(perm)}
	}
	buf, err := readfile.All(f, path, maxSeedFile)
	if err != nil {
		return "", fmt.Errorf("read seed file: %w", err)
	}
	s := strings.TrimSpace(string(buf))
	if s == "" {
		return "", fmt.Errorf("read seed file %s: empty", path)
	}
	return s, nil
}
