package capability

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

// Vector computed outside Go with Python's "cryptography" package:
//
//	seed = sha256(b"primal-identity-key:beardog:node-1")
//	msg  = sha256(b"beardog:0.9.0:capabilities.list,crypto.blake3_hash,crypto.sign_ed25519,health.liveness,")
//	sig  = Ed25519PrivateKey.from_private_bytes(seed).sign(msg)
const (
	vecPrimal  = "beardog"
	vecVersion = "0.9.0"
	vecNode    = "node-1"
	vecDigest  = "e8821be7956a279063698444b32af96870b5f879a73708502cb656a1c14f8163"
	vecPub     = "250977d14761f1efdea76a0f65a76d8f6e14f4c50f0175fbb584c1718f694a0c"
	vecSig     = "b87d5b3ce0be497b2cc4428a7b8f62402fcc2d4643e777e3fad91a66af450fef5d2b1c5499e45ef139df8223c3c8f21ff93aa4e162bfd58321a1b1c6d515b60c"
)

var vecMethods = []string{"health.liveness", "crypto.sign_ed25519", "capabilities.list", "crypto.blake3_hash"}

func vecAnnouncement() *SignedAnnouncement {
	return &SignedAnnouncement{
		SchemaVersion: 2, Algorithm: "ed25519", PublicKey: vecPub, Signature: vecSig,
		SignedFields: []string{"primal", "version", "methods"},
	}
}

func TestAnnouncementDigestVector(t *testing.T) {
	// The digest by hand, over the literal canonical string.
	want := sha256.Sum256([]byte("beardog:0.9.0:capabilities.list,crypto.blake3_hash,crypto.sign_ed25519,health.liveness,"))
	if hex.EncodeToString(want[:]) != vecDigest {
		t.Fatalf("hand digest %x != vector %s", want, vecDigest)
	}
	got := AnnouncementDigest(vecPrimal, vecVersion, vecMethods)
	if got != want {
		t.Errorf("AnnouncementDigest = %x, want %x", got, want)
	}
	// Order of the input does not matter; the caller's slice is not reordered.
	rev := []string{vecMethods[3], vecMethods[2], vecMethods[1], vecMethods[0]}
	if AnnouncementDigest(vecPrimal, vecVersion, rev) != want {
		t.Error("digest depends on input order")
	}
	if rev[0] != vecMethods[3] {
		t.Error("AnnouncementDigest reordered its argument")
	}
	// No methods: "p:v:".
	if AnnouncementDigest("p", "v", nil) != sha256.Sum256([]byte("p:v:")) {
		t.Error("empty-method digest wrong")
	}
}

func TestIdentityKeyVector(t *testing.T) {
	key := IdentityKey(vecPrimal, vecNode)
	seed := sha256.Sum256([]byte("primal-identity-key:beardog:node-1"))
	if hex.EncodeToString(key.Seed()) != hex.EncodeToString(seed[:]) {
		t.Errorf("seed = %x, want %x", key.Seed(), seed)
	}
	if pub := hex.EncodeToString(key.Public().(ed25519.PublicKey)); pub != vecPub {
		t.Errorf("public key = %s, want %s", pub, vecPub)
	}
	sa := Sign(key, vecPrimal, vecVersion, vecMethods)
	if sa.Signature != vecSig || sa.PublicKey != vecPub || sa.Algorithm != "ed25519" || sa.SchemaVersion != 2 {
		t.Errorf("Sign = %+v", sa)
	}
	// Check the vector with crypto/ed25519 directly, not through Verify.
	pub, _ := hex.DecodeString(vecPub)
	sig, _ := hex.DecodeString(vecSig)
	d, _ := hex.DecodeString(vecDigest)
	if !ed25519.Verify(pub, d, sig) {
		t.Fatal("vector does not verify with crypto/ed25519")
	}
}

func TestVerify(t *testing.T) {
	if v := Verify(vecAnnouncement(), vecPrimal, vecVersion, vecMethods); v.State != Verified || v.PublicKey != vecPub {
		t.Fatalf("vector: %+v", v)
	}
	upper := vecAnnouncement()
	upper.PublicKey, upper.Signature = strings.ToUpper(vecPub), strings.ToUpper(vecSig)
	if v := Verify(upper, vecPrimal, vecVersion, vecMethods); v.State != Verified || v.PublicKey != vecPub {
		t.Errorf("upper-case hex: %+v", v)
	}
	noSchema := vecAnnouncement()
	noSchema.SchemaVersion = 0
	if v := Verify(noSchema, vecPrimal, vecVersion, vecMethods); v.State != Verified {
		t.Errorf("absent schema_version: %+v", v)
	}
	if v := Verify(nil, vecPrimal, vecVersion, vecMethods); v.State != Absent {
		t.Errorf("nil: %+v", v)
	}
	other := Sign(IdentityKey("beardog", "node-2"), vecPrimal, vecVersion, vecMethods)

	tests := []struct {
		name    string
		mut     func(sa *SignedAnnouncement)
		primal  string
		version string
		methods []string
		reason  string
	}{
		{name: "wrong algorithm", mut: func(sa *SignedAnnouncement) { sa.Algorithm = "rsa" }, reason: "algorithm"},
		{name: "empty algorithm", mut: func(sa *SignedAnnouncement) { sa.Algorithm = "" }, reason: "algorithm"},
		{name: "schema version", mut: func(sa *SignedAnnouncement) { sa.SchemaVersion = 1 }, reason: "schema_version"},
		{name: "public key not hex", mut: func(sa *SignedAnnouncement) { sa.PublicKey = "zz" + vecPub[2:] }, reason: "public_key is not hex"},
		{name: "public key odd length", mut: func(sa *SignedAnnouncement) { sa.PublicKey = vecPub[1:] }, reason: "public_key is not hex"},
		{name: "public key short", mut: func(sa *SignedAnnouncement) { sa.PublicKey = vecPub[:62] }, reason: "31 bytes"},
		{name: "public key long", mut: func(sa *SignedAnnouncement) { sa.PublicKey = vecPub + "00" }, reason: "33 bytes"},
		{name: "public key base64", mut: func(sa *SignedAnnouncement) { sa.PublicKey = base64.StdEncoding.EncodeToString(mustHex(vecPub)) }, reason: "public_key is base64"},
		{name: "signature base64", mut: func(sa *SignedAnnouncement) { sa.Signature = base64.StdEncoding.EncodeToString(mustHex(vecSig)) }, reason: "signature is base64"},
		{name: "signature not hex", mut: func(sa *SignedAnnouncement) { sa.Signature = "g" + vecSig[1:] }, reason: "signature is not hex"},
		{name: "signature short", mut: func(sa *SignedAnnouncement) { sa.Signature = vecSig[:126] }, reason: "63 bytes"},
		{name: "signature empty", mut: func(sa *SignedAnnouncement) { sa.Signature = "" }, reason: "0 bytes"},
		{name: "signature flipped", mut: func(sa *SignedAnnouncement) { sa.Signature = "c" + vecSig[1:] }, reason: "does not match"},
		{name: "other key", mut: func(sa *SignedAnnouncement) { sa.PublicKey = other.PublicKey }, reason: "does not match"},
		{name: "fields missing methods", mut: func(sa *SignedAnnouncement) { sa.SignedFields = []string{"primal", "version"} }, reason: "cover methods"},
		{name: "fields absent", mut: func(sa *SignedAnnouncement) { sa.SignedFields = nil }, reason: "primal, version, methods"},
		{name: "tampered primal", primal: "beardoq", reason: "does not match"},
		{name: "tampered version", version: "0.9.1", reason: "does not match"},
		{name: "method added", methods: append([]string{"crypto.exfiltrate"}, vecMethods...), reason: "does not match"},
		{name: "method dropped", methods: vecMethods[1:], reason: "does not match"},
		{name: "method duplicated", methods: append([]string{"health.liveness"}, vecMethods...), reason: "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sa := vecAnnouncement()
			if tt.mut != nil {
				tt.mut(sa)
			}
			p, v, m := vecPrimal, vecVersion, vecMethods
			if tt.primal != "" {
				p = tt.primal
			}
			if tt.version != "" {
				v = tt.version
			}
			if tt.methods != nil {
				m = tt.methods
			}
			got := Verify(sa, p, v, m)
			if got.State != Invalid || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("Verify = %+v, want invalid with %q", got, tt.reason)
			}
		})
	}
}

func TestSignRoundTrip(t *testing.T) {
	key := IdentityKey("rhizocrypt", "tower-2")
	methods := []string{"dag.session.create", "dag.event.append", "health.liveness"}
	sa := Sign(key, "rhizocrypt", "0.14.0", methods)
	if v := Verify(&sa, "rhizocrypt", "0.14.0", methods); v.State != Verified {
		t.Fatalf("round trip: %+v", v)
	}
	// And through Parse, as a fake server would send it.
	body, _ := json.Marshal(map[string]any{
		"primal": "rhizocrypt", "version": "0.14.0", "methods": methods, "signed_announcement": sa,
	})
	c := mustParse(t, body)
	if c.Signature.State != Verified {
		t.Errorf("Parse verdict = %+v", c.Signature)
	}
}

func TestParseSignature(t *testing.T) {
	good := string(payload(t, "beardog_signed.json"))
	tests := []struct {
		name  string
		raw   string
		state VerdictState
		why   string
	}{
		{"independent vector", good, Verified, ""},
		{"tampered method list", strings.Replace(good, `"crypto.blake3_hash"]`, `"crypto.blake3_hash", "crypto.extra"]`, 1), Invalid, "does not match"},
		{"tampered version", strings.Replace(good, `"version": "0.9.0"`, `"version": "0.9.1"`, 1), Invalid, "does not match"},
		{"null announcement", `{"primal":"p","version":"1","methods":["a.b"],"signed_announcement":null}`, Absent, ""},
		{"announcement is a string", `{"primal":"p","version":"1","methods":["a.b"],"signed_announcement":"sig"}`, Invalid, "not an object"},
		{"public_key is a number", `{"primal":"p","version":"1","methods":["a.b"],"signed_announcement":{"algorithm":"ed25519","public_key":5}}`, Invalid, "public_key"},
		{"schema_version fractional", `{"primal":"p","version":"1","methods":["a.b"],"signed_announcement":{"schema_version":2.5}}`, Invalid, "schema_version"},
		{"signed_fields not array", `{"primal":"p","version":"1","methods":["a.b"],"signed_announcement":{"algorithm":"ed25519","signed_fields":"all"}}`, Invalid, "signed_fields"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, json.RawMessage(tt.raw))
			if c.Signature.State != tt.state || !strings.Contains(c.Signature.Reason, tt.why) {
				t.Errorf("Signature = %+v, want %s with %q", c.Signature, tt.state, tt.why)
			}
		})
	}
	// Duplicates in the wire list are signed as sent, even though Methods is de-duplicated.
	key := IdentityKey("songbird", "n")
	dup := []string{"ipc.list", "ipc.list", "health.liveness"}
	sa := Sign(key, "songbird", "1", dup)
	body, _ := json.Marshal(map[string]any{"primal": "songbird", "version": "1", "methods": dup, "signed_announcement": sa})
	c := mustParse(t, body)
	if c.Signature.State != Verified || len(c.Methods) != 2 {
		t.Errorf("duplicates: verdict %+v, methods %v", c.Signature, c.Methods)
	}
}

func mustHex(s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}
