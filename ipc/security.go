package ipc

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// PrefixMode says whether a socket connection starts with the riboCipher
// first-byte signal EC 01 (NDJSON JSON-RPC follows).
type PrefixMode uint8

const (
	// PrefixOff never sends the prefix (the zero value: the wire as it was).
	PrefixOff PrefixMode = iota
	// PrefixAuto sends raw JSON first (no EC 01) unless the endpoint memory
	// says the peer wants the prefix. Only an explicit answer that proves the
	// request was not processed makes it reconnect and resend: -32002
	// (prefix required) to a raw request, a -32700 parse error to a
	// prefixed one. A close is no proof: nothing is resent then. What an
	// answer proved is remembered per endpoint; a close never changes it.
	PrefixAuto
	// PrefixOn always sends the prefix.
	PrefixOn
)

func (m PrefixMode) String() string {
	switch m {
	case PrefixAuto:
		return "auto"
	case PrefixOn:
		return "on"
	}
	return "off"
}

// ParsePrefixMode reads a --prefix value: auto, on or off.
func ParsePrefixMode(s string) (PrefixMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto", "":
		return PrefixAuto, nil
	case "on", "yes", "true":
		return PrefixOn, nil
	case "off", "no", "false":
		return PrefixOff, nil
	}
	return 0, fmt.Errorf("unknown riboCipher prefix mode %q (want auto, on or off)", s)
}

// Seed holds a family seed (the FAMILY_SEED value). It never prints itself:
// every fmt verb, %#v and JSON encoding show a placeholder.
type Seed struct{ v string }

// NewSeed wraps a FAMILY_SEED value (surrounding whitespace is trimmed).
func NewSeed(s string) Seed { return Seed{v: strings.TrimSpace(s)} }

// ServerKey returns the seed's bytes, for the one place that needs them:
// serving BTSP (primalscope mock stands in for a family-scoped primal).
// Never print or store what it returns.
func (s Seed) ServerKey() []byte { return []byte(s.v) }

// IsZero reports whether no seed is set.
func (s Seed) IsZero() bool { return s.v == "" }

const redacted = "[family seed redacted]"

func (s Seed) String() string   { return redacted }
func (s Seed) GoString() string { return "ipc.Seed{" + redacted + "}" }

// Format prints the placeholder whatever the verb.
func (s Seed) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON encodes the placeholder, never the seed.
func (s Seed) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// candidates lists the byte strings the seed may stand for (see btsp.SeedCandidates).
func (s Seed) candidates() [][]byte { return btsp.SeedCandidates(s.v) }

// Security configures how socket transports (unix, abstract, tcp) deal with
// family-scoped peers: the BTSP handshake and the riboCipher prefix. The zero
// value is the plain wire: no prefix, no handshake, nothing remembered.
type Security struct {
	// Seed is the seed of Family, the user's own family (FAMILY_SEED or
	// --family-seed-file, given with FAMILY_ID or --family). It is never
	// used for a socket of another family: that one's seed comes from
	// Seeds. With Family unset the seed belongs to no named family: it is
	// used only for an endpoint of no family at all (standalone), never
	// offered to a socket whose name carries a family (a family it was not
	// given for; the user names it with --family). Without a seed for its
	// family, an endpoint that requires BTSP fails with *BTSPRequiredError
	// before anything is sent (naming the family).
	Seed Seed
	// Seeds are the seeds of other families, by family id (the config
	// file's [families.<id>] seed_file).
	Seeds map[string]Seed
	// TargetFamily is the family the endpoint belongs to as its name says
	// (NAME-<family>.sock, as discovery splits it); "" when unknown, and
	// then a name ending in -<id>.sock of Family or of a family in Seeds
	// says it. It picks the seed. It must never come from the peer's own
	// words (identity.get, a manifest, a registry's answer): see
	// ClaimedFamily.
	TargetFamily string
	// ClaimedFamily is a family the peer claims for itself (identity.get,
	// a manifest, a registry's answer) that no name gave: it is for display
	// and makes the endpoint family-scoped (nothing in cleartext), but it
	// never picks a seed. With it set and no family from TargetFamily or
	// the name, SeedFor gives no seed: a peer claiming the user's family
	// (over TCP there is not even an owner check) would otherwise get a
	// handshake keyed by the user's seed.
	ClaimedFamily string
	// Cipher is the cipher asked for. "" (auto, the default) accepts only a
	// session that is encrypted AND whose server proved it holds the seed:
	// the JSON-line handshake upgraded by btsp.negotiate, or the
	// length-prefixed handshake with chacha20_poly1305 and a verified
	// server_proof. A named cipher is asked for as such; a server choosing a
	// weaker one fails the handshake, and a session whose server is not
	// authenticated is allowed but warned about (Warn and the trace).
	Cipher btsp.Cipher
	// Negotiate asks for a null-cipher JSON-line handshake followed by the
	// btsp.negotiate upgrade to chacha20-poly1305 (what primalSpring and
	// biomeOS do), and nothing else: a refused upgrade fails.
	Negotiate bool
	// RequireBTSP says the endpoint announced that it requires BTSP
	// (transport_security.btsp_required): never send it cleartext.
	RequireBTSP bool
	// FamilyScoped says the target's name or directory shows it is
	// family-scoped (<primal>-<family>.sock, as discovery splits names): it
	// gets nothing in cleartext, like RequireBTSP, even on first contact.
	FamilyScoped bool
	// Family is the family id; a socket named <primal>-<family>.sock is
	// family-scoped (see FamilyScoped) whatever FamilyScoped says.
	Family string
	// Prefix is the riboCipher prefix mode.
	Prefix PrefixMode
	// Memory remembers per endpoint what worked (prefix, BTSP, framing);
	// may be nil. It holds facts only, never secrets.
	Memory *EndpointMemory
	// Warn, if set, receives what the user must see even without a trace: a
	// session weaker than the default (cleartext on purpose, a server that
	// is not authenticated). It never carries secrets. The same words go to
	// the trace.
	Warn func(string) `json:"-"`
	// TrustUIDs are local users trusted to serve Unix sockets besides the
	// user and root (--trust-uid, trust_uids): see PeerPolicy. They travel
	// with the rest of the run's security to every dial.
	TrustUIDs []uint32
	// TrustUnknownOwner is --trust-unknown-owner: the user asked by name
	// to call a loopback TCP port whose owner cannot be told (no socket
	// diagnostics nor tables to read, or no listener in this network
	// namespace). Without it such a call is refused (*UnknownOwnerError,
	// exit 5): a skipped check is never silent. With it the call is
	// made and said to be unchecked, loudly (Warn and the trace).
	TrustUnknownOwner bool `json:"trust_unknown_owner,omitempty"`
}

func (s *Security) active() bool {
	return !s.Seed.IsZero() || len(s.Seeds) > 0 || s.TargetFamily != "" || s.RequireBTSP || s.FamilyScoped || s.Family != "" ||
		s.Prefix != PrefixOff || s.Memory != nil || s.Cipher != "" || s.Negotiate || s.ClaimedFamily != ""
}

// SeedFor returns the seed to shake hands with at ep and the family ep
// belongs to (TargetFamily, else the longest of Family and Seeds' ids that
// ep's name ends in; "" when none is known), with that family's seed: Seed
// for Family (or for a socket of no known family), Seeds[family] for another.
// ok is false when ep belongs to another family whose seed is not known:
// Seed, the user's own family's, is never handed to another family's
// socket; with Family unset, Seed was given for no family, and is handed
// to no family either (only to an endpoint of none). A family only claimed
// (ClaimedFamily) picks nothing: ok is false and family is the claim.
func (s *Security) SeedFor(ep Endpoint) (seed Seed, family string, ok bool) {
	fam := s.TargetFamily
	if fam == "" {
		for f := range s.Seeds {
			if len(f) > len(fam) && FamilyScoped(ep, f) {
				fam = f
			}
		}
		if len(s.Family) > len(fam) && FamilyScoped(ep, s.Family) {
			fam = s.Family
		}
	}
	if (fam == "" || fam == "default") && s.ClaimedFamily != "" && s.ClaimedFamily != "default" {
		return Seed{}, s.ClaimedFamily, false
	}
	switch fam {
	case "", "default":
		return s.Seed, "", true // no family known: standalone, or the user's own
	case s.Family:
		return s.Seed, fam, true
	}
	if sd, ok := s.Seeds[fam]; ok {
		return sd, fam, true
	}
	return Seed{}, fam, false
}

// cleartextOnPurpose reports whether the user asked for the null cipher by
// name: with a seed, a null-cipher handshake; without one, cleartext to a
// family-scoped endpoint.
func (s *Security) cleartextOnPurpose() bool { return s.Cipher == btsp.CipherNull && !s.Negotiate }

// ParseBTSPCipher reads a --btsp-cipher value: auto (or "": an
// authenticated encrypted session, returned as Cipher ""),
// chacha20_poly1305 (also chacha20, chacha20-poly1305), null, hmac_plain, or
// negotiate (a null handshake upgraded by btsp.negotiate). Unlike the
// handshake's own rule, an unknown name is an error here.
func ParseBTSPCipher(s string) (c btsp.Cipher, negotiate bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return "", false, nil
	case "chacha20_poly1305", "chacha20", "chacha20-poly1305":
		return btsp.CipherChaCha20Poly1305, false, nil
	case "null", "none":
		return btsp.CipherNull, false, nil
	case "hmac_plain":
		return btsp.CipherHMACPlain, false, nil
	case "negotiate":
		return btsp.CipherNull, true, nil
	}
	return "", false, fmt.Errorf("unknown BTSP cipher %q (want auto, chacha20_poly1305, null, hmac_plain or negotiate)", s)
}

// FamilyScoped reports whether a socket endpoint's file name is
// <primal>-<family>.sock for the given family id (ids may contain dashes,
// so the family is matched as a suffix, not split at the first dash).
func FamilyScoped(ep Endpoint, family string) bool {
	if family == "" || family == "default" || ep.Transport != Unix {
		return false
	}
	base := filepath.Base(ep.Path)
	suffix := "-" + family + ".sock"
	return strings.HasSuffix(base, suffix) && len(base) > len(suffix)
}

// transportDescriber is implemented by framers that can say what they put
// on the wire ("unix+btsp(chacha20_poly1305)").
type transportDescriber interface {
	TransportDescription() string
}

// Transport says how the connection reaches its peer, for display and
// history: "unix", "unix+ribocipher", "unix+btsp(chacha20_poly1305)", ...
// It is "" when the framer does not say.
func (c *Conn) Transport() string {
	if d, ok := c.f.(transportDescriber); ok {
		return d.TransportDescription()
	}
	return ""
}

// SessionSecurity says what protects a connection to an endpoint that uses,
// or requires, BTSP, for display: whether the server is authenticated and
// whether messages travel encrypted.
type SessionSecurity struct {
	// BTSP is true when a BTSP handshake opened the connection; false for
	// cleartext to a BTSP endpoint sent on purpose (--btsp-cipher null
	// without a family seed).
	BTSP bool `json:"btsp"`
	// Cipher is the session's cipher in force: "chacha20_poly1305" (also
	// after a btsp.negotiate upgrade), "hmac_plain" or "null"; "" without BTSP.
	Cipher string `json:"cipher,omitempty"`
	// Negotiated is true after a btsp.negotiate upgrade.
	Negotiated bool `json:"negotiated,omitempty"`
	// Encrypted is true when messages travel encrypted.
	Encrypted bool `json:"encrypted"`
	// Authenticated is true when the server proved it holds the family
	// seed (see btsp.Session.ServerAuthenticated). A JSON-line handshake
	// with a named cipher proves nothing: such sessions are not.
	Authenticated bool `json:"authenticated"`
}

// Weakness says in a few words what the session does not guarantee:
// "cleartext" (no BTSP, or the null cipher), "unauthenticated",
// "not encrypted" (hmac_plain), "unauthenticated, not encrypted"; "" for an
// authenticated encrypted session.
func (s SessionSecurity) Weakness() string {
	switch {
	case !s.BTSP || s.Cipher == "" || s.Cipher == string(btsp.CipherNull):
		return "cleartext"
	case !s.Authenticated && !s.Encrypted:
		return "unauthenticated, not encrypted"
	case !s.Authenticated:
		return "unauthenticated"
	case !s.Encrypted:
		return "not encrypted"
	}
	return ""
}

// sessionReporter is implemented by framers that know what protects them.
type sessionReporter interface {
	SessionSecurity() (SessionSecurity, bool)
}

// Session says what protects the connection when it was opened for an
// endpoint that uses or requires BTSP (a session, or cleartext on purpose);
// ok is false for connections that involve no BTSP at all. It is read at the
// time of the call: a connection that is told to start a BTSP handshake by
// its peer's first answer reports the session only after that answer.
func (c *Conn) Session() (s SessionSecurity, ok bool) {
	if r, isR := c.f.(sessionReporter); isR {
		return r.SessionSecurity()
	}
	return SessionSecurity{}, false
}
