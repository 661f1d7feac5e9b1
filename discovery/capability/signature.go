package capability

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// SignatureAlgorithm is the only algorithm the standard defines.
const SignatureAlgorithm = "ed25519"

// SignatureSchemaVersion is the canonical message format this package
// signs and verifies.
const SignatureSchemaVersion = 2

// SignedAnnouncement is the signed_announcement object of capabilities.list
// and discover_capabilities.
type SignedAnnouncement struct {
	SchemaVersion int    `json:"schema_version"`
	Algorithm     string `json:"algorithm"`
	// PublicKey is the hex Ed25519 verifying key (32 bytes).
	PublicKey string `json:"public_key"`
	// Signature is the hex Ed25519 signature (64 bytes).
	Signature    string   `json:"signature"`
	SignedFields []string `json:"signed_fields"`
}

// VerdictState is the outcome of checking a signed announcement.
type VerdictState string

// Verdict states.
const (
	// Verified: the signature is valid for the announced key and content.
	Verified VerdictState = "verified"
	// Invalid: a signature was given but does not check out (see Reason).
	Invalid VerdictState = "invalid"
	// Absent: no signed_announcement was given.
	Absent VerdictState = "absent"
)

// Verdict is the result of Verify.
type Verdict struct {
	State VerdictState `json:"state"`
	// Reason says why a signature is Invalid.
	Reason string `json:"reason,omitempty"`
	// PublicKey is the lower-case hex key that verified, for identity continuity.
	PublicKey string `json:"public_key,omitempty"`
}

// AnnouncementDigest returns the 32-byte message the standard signs:
// SHA-256(primal ":" version ":" + method "," for each method in byte-wise
// sorted order). Duplicates are kept, as the signer keeps them.
func AnnouncementDigest(primal, version string, methods []string) [32]byte {
	sorted := append([]string(nil), methods...)
	sort.Strings(sorted)
	h := sha256.New()
	h.Write([]byte(primal))
	h.Write([]byte(":"))
	h.Write([]byte(version))
	h.Write([]byte(":"))
	for _, m := range sorted {
		h.Write([]byte(m))
		h.Write([]byte(","))
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// IdentityKey derives a primal instance's Ed25519 identity key, as the standard
// says: seed = SHA-256("primal-identity-key:" || primal || ":" || node_id).
// It is meant for fake servers and tests.
func IdentityKey(primal, nodeID string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("primal-identity-key:" + primal + ":" + nodeID))
	return ed25519.NewKeyFromSeed(seed[:])
}

// Sign produces the signed_announcement for primal, version and methods with key.
func Sign(key ed25519.PrivateKey, primal, version string, methods []string) SignedAnnouncement {
	d := AnnouncementDigest(primal, version, methods)
	sig := ed25519.Sign(key, d[:])
	pub, _ := key.Public().(ed25519.PublicKey)
	return SignedAnnouncement{
		SchemaVersion: SignatureSchemaVersion,
		Algorithm:     SignatureAlgorithm,
		PublicKey:     hex.EncodeToString(pub),
		Signature:     hex.EncodeToString(sig),
		SignedFields:  []string{"primal", "version", "methods"},
	}
}

// Verify checks sa against primal, version and methods as the peer sent them
// (before any de-duplication). A nil sa is Absent. It is Invalid for a wrong
// algorithm, an unsupported schema_version, malformed hex, wrong key or
// signature lengths, signed_fields that do not cover primal, version and
// methods, or a signature that does not match. Keys and signatures must be
// hex, as the standard says; base64 ones (seen from newer BearDog builds) are
// Invalid with a Reason that says so.
func Verify(sa *SignedAnnouncement, primal, version string, methods []string) Verdict {
	if sa == nil {
		return Verdict{State: Absent}
	}
	bad := func(format string, args ...any) Verdict {
		return Verdict{State: Invalid, Reason: fmt.Sprintf(format, args...)}
	}
	if !strings.EqualFold(sa.Algorithm, SignatureAlgorithm) {
		return bad("algorithm %s is not ed25519", quote(sa.Algorithm))
	}
	if sa.SchemaVersion != 0 && sa.SchemaVersion != SignatureSchemaVersion {
		return bad("unsupported schema_version %d", sa.SchemaVersion)
	}
	var missing []string
	for _, f := range []string{"primal", "version", "methods"} {
		found := false
		for _, s := range sa.SignedFields {
			if s == f {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return bad("signed_fields do not cover %s", strings.Join(missing, ", "))
	}
	pub, why := hexField("public_key", sa.PublicKey, ed25519.PublicKeySize)
	if why != "" {
		return bad("%s", why)
	}
	sig, why := hexField("signature", sa.Signature, ed25519.SignatureSize)
	if why != "" {
		return bad("%s", why)
	}
	d := AnnouncementDigest(primal, version, methods)
	if !ed25519.Verify(ed25519.PublicKey(pub), d[:], sig) {
		return bad("signature does not match primal, version and methods")
	}
	return Verdict{State: Verified, PublicKey: hex.EncodeToString(pub)}
}

// hexField decodes a hex field of exactly n bytes; why says what is wrong
// with it ("" when nothing is).
func hexField(field, s string, n int) (b []byte, why string) {
	b, err := hex.DecodeString(s)
	switch {
	case err != nil && looksBase64(s, n):
		return nil, field + " is base64, not hex as the standard requires"
	case err != nil:
		return nil, field + " is not hex"
	case len(b) != n:
		return nil, fmt.Sprintf("%s is %d bytes, want %d", field, len(b), n)
	}
	return b, ""
}

// looksBase64 reports whether s is standard base64 of exactly n bytes. Some
// BearDog versions encode announcement keys and signatures that way; Verify
// still rejects them, but says why.
func looksBase64(s string, n int) bool {
	b, err := base64.StdEncoding.DecodeString(s)
	return err == nil && len(b) == n
}

// verifySigned checks the parsed announcement against the answer as sent.
func (c *Capabilities) verifySigned() Verdict {
	if c.Signature.State == Invalid {
		// The announcement itself was malformed; parseSignedAnnouncement said why.
		return c.Signature
	}
	if c.SignedAnnouncement == nil {
		return Verdict{State: Absent}
	}
	if c.signedOverflow {
		return Verdict{State: Invalid, Reason: fmt.Sprintf("more than %d methods; not verified", MaxMethods)}
	}
	return Verify(c.SignedAnnouncement, c.Primal, c.Version, c.signed)
}

// parseSignedAnnouncement decodes signed_announcement; a malformed one gives
// a nil announcement and an Invalid verdict.
func parseSignedAnnouncement(raw json.RawMessage) (*SignedAnnouncement, Verdict) {
	if isNull(raw) {
		return nil, Verdict{State: Absent}
	}
	m, ok := object(raw)
	if !ok {
		return nil, Verdict{State: Invalid, Reason: fmt.Sprintf("signed_announcement is %s, not an object", aKind(raw))}
	}
	sa := &SignedAnnouncement{}
	bad := func(field string) (*SignedAnnouncement, Verdict) {
		return nil, Verdict{State: Invalid, Reason: fmt.Sprintf("signed_announcement.%s is %s", field, aKind(m[field]))}
	}
	if v, ok := m["schema_version"]; ok && !isNull(v) {
		n, ok := number(v)
		if !ok || n != float64(int(n)) || n < 0 || n > 1<<20 {
			return bad("schema_version")
		}
		sa.SchemaVersion = int(n)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"algorithm", &sa.Algorithm}, {"public_key", &sa.PublicKey}, {"signature", &sa.Signature}} {
		v, present := m[f.name]
		if !present || isNull(v) {
			continue
		}
		s, ok := str(v)
		if !ok {
			return bad(f.name)
		}
		if len(s) > MaxNameLen {
			return nil, Verdict{State: Invalid, Reason: fmt.Sprintf("signed_announcement.%s is too long", f.name)}
		}
		*f.dst = s
	}
	if v, ok := m["signed_fields"]; ok && !isNull(v) {
		items, ok := array(v)
		if !ok {
			return bad("signed_fields")
		}
		for _, it := range items {
			if s, ok := str(it); ok && len(sa.SignedFields) < MaxExtraKeys {
				sa.SignedFields = append(sa.SignedFields, truncUTF8(s, MaxNameLen))
			}
		}
	}
	return sa, Verdict{}
}
