package btsp

import (
	"fmt"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// Handshake failure reasons. The first three are words BTSP peers send in
// {"error":"handshake_failed","reason":...}; the rest name what this side saw.
const (
	// ReasonFamilyVerification: the challenge response did not verify; the
	// two sides do not hold the same family seed (or derive it differently).
	ReasonFamilyVerification = "family_verification"
	// ReasonUnsupportedVersion: a handshake version other than 1.
	ReasonUnsupportedVersion = "unsupported_version"
	// ReasonInvalidKeyLength: an ephemeral public key that is not 32 bytes.
	ReasonInvalidKeyLength = "invalid_key_length"
	// ReasonServerProofMismatch: the length-prefixed server_proof is missing or
	// does not verify, so the server did not prove it holds the family seed.
	ReasonServerProofMismatch = "server_proof_mismatch"
	// ReasonClosedWithoutWord: the peer closed the connection mid-handshake
	// without an error message (BTSP peers do this on a malformed message).
	ReasonClosedWithoutWord = "closed_without_word"
	// ReasonMalformed: a handshake message that cannot be parsed or is out of place.
	ReasonMalformed = "malformed"
	// ReasonTimeout: the context ended before the handshake did (Err says which).
	ReasonTimeout = "timeout"
	// ReasonIO: reading or writing the connection failed (Err says how).
	ReasonIO = "io"
	// ReasonWeakerCipher: the server chose a cipher weaker than the one asked
	// for (null < hmac_plain < chacha20_poly1305).
	ReasonWeakerCipher = "weaker_cipher"
	// ReasonNegotiateRefused: btsp.negotiate was asked for (ClientConfig.Negotiate)
	// and the server refused it, kept the null cipher, or chose a handshake
	// cipher that the upgrade does not apply to.
	ReasonNegotiateRefused = "negotiate_refused"
	// ReasonKeyConfirmation: the first frame of a session whose keys come from
	// the handshake key (btsp.negotiate) does not authenticate, so the server
	// does not hold the family seed.
	ReasonKeyConfirmation = "key_confirmation"
)

// HandshakeError is a failed BTSP handshake. Tell a wrong seed apart with
// WrongSeed (Reason == ReasonFamilyVerification).
type HandshakeError struct {
	Reason   string // one of the Reason constants, or the peer's own (sanitised) word
	Step     string // which handshake step: "client hello", "server hello", ...
	FromPeer bool   // the peer sent {"error":"handshake_failed","reason":...}
	Detail   string // a short human explanation; never key material
	Err      error  // the underlying I/O or context error, if any
	// Spoke says the peer answered in the handshake's framing before it
	// failed (a server hello, whole or cut): it speaks this framing, so
	// another framing is no way round the failure.
	Spoke bool
}

func (e *HandshakeError) Error() string {
	var b strings.Builder
	b.WriteString("btsp handshake")
	if e.Step != "" {
		b.WriteString(" (" + e.Step + ")")
	}
	b.WriteString(": ")
	if e.FromPeer {
		b.WriteString("peer refused: ")
	}
	b.WriteString(e.Reason)
	if e.Reason == ReasonFamilyVerification {
		b.WriteString(" (the family seed does not match the peer's)")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// WrongSeed reports whether the handshake failed because the seeds differ; a
// caller holding more seed candidates may reconnect and try the next one.
func (e *HandshakeError) WrongSeed() bool { return e.Reason == ReasonFamilyVerification }

// FrameTooLargeError is returned by ReadFrame when the peer announces or sends a
// message longer than the Session's limit. The session cannot resynchronise.
type FrameTooLargeError struct {
	Limit int64 // the limit in bytes
	Size  int64 // the announced length, or -1 when unknown (an NDJSON line)
}

func (e *FrameTooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("btsp: peer announced a %d-byte message, over the %d-byte limit", e.Size, e.Limit)
	}
	return fmt.Sprintf("btsp: peer sent a message over the %d-byte limit", e.Limit)
}

// Fault says what is wrong with a session frame (FrameError.Fault).
type Fault int

const (
	// FaultAuth: the frame does not authenticate (a flipped byte, the
	// other direction's key, a forged frame): its AEAD tag or MAC fails.
	FaultAuth Fault = iota
	// FaultReplay: the frame was seen before in this session, or its
	// counter is not the next one (a replay, a reordering, a dropped frame).
	FaultReplay
	// FaultCleartext: a cleartext JSON message where an encrypted or
	// authenticated frame belongs: a downgrade, or an impostor that does
	// not hold the session keys.
	FaultCleartext
	// FaultShort: the frame is shorter than its nonce and tag (or MAC).
	FaultShort
)

func (f Fault) String() string {
	switch f {
	case FaultAuth:
		return "authentication"
	case FaultReplay:
		return "replay"
	case FaultCleartext:
		return "cleartext"
	case FaultShort:
		return "short"
	}
	return "unknown"
}

// FrameError is a session frame that cannot be accepted on a session whose
// frames are authenticated (chacha20_poly1305, hmac_plain, negotiated): it
// fails authentication, is replayed or out of order, is cleartext JSON, or
// is too short. Every FrameError is a security failure, at whatever point
// of the session it comes: whoever sent it does not hold the session keys,
// or is replaying what someone who does sent. The session is unusable
// afterwards.
type FrameError struct {
	Fault  Fault
	Reason string
}

func (e *FrameError) Error() string {
	return "btsp: security failure: a session frame refused (" + e.Fault.String() + "): " + e.Reason
}

// InsecureSeedFileError is returned by ReadSeedFile for a seed file that group
// or others may read; the seed is not returned.
type InsecureSeedFileError struct {
	Path string
	Mode uint32 // permission bits
}

func (e *InsecureSeedFileError) Error() string {
	return fmt.Sprintf("seed file %s is readable by group or others (mode %04o); run chmod 600 %s", e.Path, e.Mode, e.Path)
}

// sanitize makes a peer-supplied word safe to put in an error (textsafe's
// visible escapes) and bounds it to 64 bytes (human.Clip), clipping before
// it escapes too so a long word is not copied whole.
func sanitize(s string) string {
	const n = 64
	return human.Clip(textsafe.Sanitize(human.Clip(s, n)), n)
}
