package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// riboNDJSON is the riboCipher signal for NDJSON JSON-RPC.
var riboNDJSON = []byte{0xEC, 0x01}

// defaultHandshakeTimeout bounds one BTSP handshake attempt unless
// ConnectTimeout says otherwise (the caller's context bounds them all).
const defaultHandshakeTimeout = 5 * time.Second

// Limits on what an unsettled connection keeps for resending.
const (
	maxResendFrames = 256
	maxResendBytes  = 4 << 20
)

// secureDialer opens socket connections with the riboCipher prefix and the
// BTSP handshake as Security and the endpoint memory say.
type secureDialer struct {
	ep    Endpoint
	opts  Options
	sec   Security
	name  string // the endpoint as errors name it
	seeds [][]byte
	// family is the family the endpoint belongs to ("" unknown); foreign
	// is the same when it is not the user's and its seed is not known.
	family, foreign string
	stamp           string // socketStamp at dial time
	// forcedCleartext: cleartext to an endpoint that requires BTSP, on purpose.
	forcedCleartext bool
}

// plan is how one cleartext connection is opened.
type plan struct {
	prefix bool // EC 01 first
}

func dialSocket(ctx context.Context, ep Endpoint, opts Options) (Framer, error) {
	if !opts.Security.active() {
		c, err := dialPeer(ctx, ep, opts)
		if err != nil {
			return nil, err
		}
		return NetFramer(c, opts.MaxFrame), nil
	}
	d := &secureDialer{ep: ep, opts: opts, sec: opts.Security, name: opts.Endpoint}
	if d.name == "" {
		d.name = ep.String()
	}
	// The seed of the family the endpoint belongs to, never another's.
	seed, fam, known := d.sec.SeedFor(ep)
	d.seeds, d.family = seed.candidates(), fam
	if !known {
		d.foreign = fam
	}
	if d.sec.Memory != nil {
		d.stamp = socketStamp(ep)
	}
	return d.open(ctx)
}

func (d *secureDialer) note(s string) {
	if d.opts.Trace != nil {
		d.opts.Trace(TraceEvent{Time: time.Now(), Dir: Note, Warning: s})
	}
}

// warn says something the user must see: to the trace and to Security.Warn.
func (d *secureDialer) warn(s string) {
	d.note("WARNING: " + s)
	if d.sec.Warn != nil {
		d.sec.Warn(d.name + ": " + s)
	}
}

// socketStamp identifies the socket file now at a Unix endpoint's path
// (inode and change time), so that facts about an earlier server at the
// same path are not applied to a new one. "" for other transports.
func socketStamp(ep Endpoint) string {
	if ep.Transport != Unix {
		return ""
	}
	st, err := os.Stat(ep.Path)
	if err != nil {
		return ""
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d.%d", sys.Ino, sys.Ctim.Sec, sys.Ctim.Nsec)
}

// facts returns what the memory knows about the endpoint, unless it was
// learned from another socket file at the same path (a restarted server).
func (d *secureDialer) facts() EndpointFacts {
	f, ok := d.sec.Memory.Get(d.ep)
	if !ok {
		return EndpointFacts{}
	}
	if f.Socket != "" && d.stamp != "" && f.Socket != d.stamp {
		d.note("the socket file changed since primalscope last reached it: what was learned about it is forgotten")
		d.sec.Memory.Forget(d.ep)
		return EndpointFacts{}
	}
	return f
}

// remember records facts about the endpoint (and which socket file they
// are about).
func (d *secureDialer) remember(change func(f *EndpointFacts)) {
	d.sec.Memory.Update(d.ep, func(f *EndpointFacts) {
		change(f)
		if d.stamp != "" {
			f.Socket = d.stamp
		}
	})
}

// btspRequired reports whether the endpoint must get nothing in cleartext,
// and why.
func (d *secureDialer) btspRequired(f EndpointFacts) (bool, string) {
	switch {
	case d.sec.RequireBTSP:
		return true, "it announced btsp_required"
	case d.sec.FamilyScoped || FamilyScoped(d.ep, d.sec.Family):
		return true, "its name says it is family-scoped"
	case f.BTSPRequired:
		return true, "it demanded a BTSP handshake before"
	case d.family != "" && d.family == d.sec.ClaimedFamily && d.sec.TargetFamily == "":
		return true, "it says it belongs to family " + d.family
	case d.family != "":
		return true, "its name says it belongs to family " + d.family
	}
	return false, ""
}

func (d *secureDialer) open(ctx context.Context) (Framer, error) {
	facts := d.facts()
	if req, why := d.btspRequired(facts); req {
		if len(d.seeds) > 0 {
			return d.handshake(ctx, facts)
		}
		if !d.sec.cleartextOnPurpose() {
			// Never send cleartext to an endpoint that requires BTSP.
			if d.foreign != "" {
				if d.sec.Family == "" && !d.sec.Seed.IsZero() {
					d.note("the endpoint requires BTSP (" + why + "); the seed set was given with no family and is not offered to family " + d.foreign + " (--family " + d.foreign + " gives it for that family): not connecting")
				} else {
					d.note("the endpoint requires BTSP (" + why + ") and no seed is known for family " + d.foreign + ": not connecting")
				}
			} else {
				d.note("the endpoint requires BTSP (" + why + ") and no family seed is set: not connecting")
			}
			return nil, d.refusal()
		}
		switch {
		case d.foreign != "" && d.sec.Family == "" && !d.sec.Seed.IsZero():
			d.warn("sending CLEARTEXT to an endpoint that requires BTSP (" + why + "), as --btsp-cipher null asks: the seed set was given with no family and is not offered to family " + d.foreign + ", nothing is protected")
		case d.foreign != "":
			d.warn("sending CLEARTEXT to an endpoint that requires BTSP (" + why + "), as --btsp-cipher null asks: no seed is known for family " + d.foreign + ", nothing is protected")
		default:
			d.warn("sending CLEARTEXT to an endpoint that requires BTSP (" + why + "), as --btsp-cipher null asks: no family seed is set, nothing is protected")
		}
		d.forcedCleartext = true
	}
	return d.cleartext(ctx, facts)
}

// refusal is the error of a dial that sends nothing because the endpoint
// requires BTSP and no seed is offered to it (see Security.SeedFor).
func (d *secureDialer) refusal() *BTSPRequiredError {
	if d.foreign == "" {
		return &BTSPRequiredError{Endpoint: d.name}
	}
	claimed := d.foreign == d.sec.ClaimedFamily && d.sec.TargetFamily == "" && !FamilyScoped(d.ep, d.foreign)
	return &BTSPRequiredError{Endpoint: d.name, Family: d.foreign, OwnFamily: d.sec.Family, Claimed: claimed,
		Unbound: !claimed && d.sec.Family == "" && !d.sec.Seed.IsZero()}
}

// SeedRefusal is the judgement a call to the socket ep (named name in
// errors) meets before anything is sent, as a dial with s makes it: when
// ep requires BTSP (s.RequireBTSP, s.FamilyScoped, or a family its name or
// s says it belongs to) and no seed is offered to it (SeedFor: a seed
// given with no family goes to no family's socket), the same
// *BTSPRequiredError the dial returns, which says the family and how to
// give or bind a seed for it (exit 5). nil when a seed is offered,
// cleartext is asked for by name (--btsp-cipher null), or nothing known
// before dialling says ep requires BTSP (a peer's demand is met, or
// refused, when the call is made). What the endpoint memory learned is
// not consulted.
func (s *Security) SeedRefusal(ep Endpoint, name string) *BTSPRequiredError {
	if ep.Transport != Unix && ep.Transport != Abstract && ep.Transport != TCP {
		return nil // no BTSP on other transports
	}
	d := &secureDialer{ep: ep, sec: *s, name: name}
	if d.name == "" {
		d.name = ep.String()
	}
	seed, fam, known := s.SeedFor(ep)
	d.seeds, d.family = seed.candidates(), fam
	if !known {
		d.foreign = fam
	}
	if req, _ := d.btspRequired(EndpointFacts{}); !req || len(d.seeds) > 0 || s.cleartextOnPurpose() {
		return nil
	}
	return d.refusal()
}

// cleartext opens an unsettled cleartext connection (see secureFramer).
func (d *secureDialer) cleartext(ctx context.Context, facts EndpointFacts) (Framer, error) {
	p := plan{prefix: d.cleartextPrefix(facts)}
	nc, err := d.dialCleartext(ctx, p)
	if err != nil {
		return nil, err
	}
	sf := &secureFramer{d: d, plan: p, desc: d.describeCleartext(p), tried: map[plan]bool{p: true}}
	sf.setCur(NetFramer(nc, d.opts.MaxFrame))
	sf.closeCtx, sf.closeCancel = context.WithCancel(context.Background())
	return sf, nil
}

// cleartextPrefix decides whether a cleartext connection starts with EC 01:
// in auto mode only when an answer proved that the peer wants it.
func (d *secureDialer) cleartextPrefix(f EndpointFacts) bool {
	switch d.sec.Prefix {
	case PrefixOn:
		return true
	case PrefixAuto:
		return f.Prefix != nil && *f.Prefix
	}
	return false
}

func (d *secureDialer) dialCleartext(ctx context.Context, p plan) (net.Conn, error) {
	nc, err := dialPeer(ctx, d.ep, d.opts)
	if err != nil {
		return nil, err
	}
	if p.prefix {
		if dl, ok := ctx.Deadline(); ok {
			_ = nc.SetWriteDeadline(dl)
		}
		_, err := nc.Write(riboNDJSON)
		_ = nc.SetWriteDeadline(time.Time{})
		if err != nil {
			nc.Close()
			return nil, &DialError{Endpoint: d.name, Err: fmt.Errorf("send riboCipher prefix: %w", err)}
		}
		d.note("sent the riboCipher prefix EC 01 (NDJSON JSON-RPC)")
	}
	return nc, nil
}

func (d *secureDialer) describeCleartext(p plan) string {
	s := string(d.ep.Transport)
	if p.prefix {
		s += "+ribocipher"
	}
	if d.forcedCleartext {
		s += " (CLEARTEXT to a BTSP endpoint, on purpose)"
	}
	return s
}

// describeSession says what a BTSP session puts on the wire and whether the
// server is authenticated: "unix+btsp(chacha20-poly1305 negotiated)",
// "unix+btsp(chacha20_poly1305, length-prefixed)",
// "unix+btsp(null, server not authenticated)".
func describeSession(t Transport, s *btsp.Session) string {
	c := string(s.Cipher())
	if s.Negotiated() {
		c = btsp.NegotiatedCipher + " negotiated"
	}
	if s.Framing() == btsp.LengthPrefixed {
		c += ", length-prefixed"
	}
	if !s.ServerAuthenticated() {
		c += ", server not authenticated"
	}
	return string(t) + "+btsp(" + c + ")"
}

// attempt is one way to open a BTSP session.
type attempt struct {
	framing   btsp.Framing
	cipher    btsp.Cipher // asked for in the handshake
	negotiate bool
}

func (a attempt) String() string {
	if a.negotiate {
		return a.framing.String() + " null+btsp.negotiate"
	}
	return a.framing.String() + " " + string(a.cipher)
}

// attempts lists the ways to try, in order. Auto tries the JSON-line
// handshake with the btsp.negotiate upgrade first (BearDog, primalSpring and
// biomeOS all do it, and a length-prefixed-only server closes at once on a
// JSON line) and then the length-prefixed handshake with chacha20_poly1305
// and server_proof (BearDog); the framing that worked last goes first.
func (d *secureDialer) attempts(f EndpointFacts) []attempt {
	var as []attempt
	switch {
	case d.sec.Negotiate:
		return []attempt{{framing: btsp.JSONLine, cipher: btsp.CipherNull, negotiate: true}}
	case d.sec.Cipher == "":
		as = []attempt{{framing: btsp.JSONLine, cipher: btsp.CipherNull, negotiate: true},
			{framing: btsp.LengthPrefixed, cipher: btsp.CipherChaCha20Poly1305}}
	default:
		as = []attempt{{framing: btsp.JSONLine, cipher: d.sec.Cipher}, {framing: btsp.LengthPrefixed, cipher: d.sec.Cipher}}
	}
	if f.Framing == btsp.LengthPrefixed.String() {
		as[0], as[1] = as[1], as[0]
	}
	return as
}

// btspPrefixes lists whether to send the handshake's riboCipher prefix, in
// the order to try.
func (d *secureDialer) btspPrefixes(f EndpointFacts) []bool {
	switch {
	case d.sec.Prefix == PrefixOn:
		return []bool{true}
	case d.sec.Prefix == PrefixOff:
		return []bool{false}
	case f.BTSPPrefix != nil:
		return []bool{*f.BTSPPrefix, !*f.BTSPPrefix}
	}
	return []bool{true, false}
}

// handshake opens a BTSP session, trying each attempt, each prefix and each
// seed candidate on a new connection (nothing but handshake messages has
// been sent, so trying again is safe), all within ctx. Any failure of them
// all is an error: never a fallback to cleartext.
func (d *secureDialer) handshake(ctx context.Context, facts EndpointFacts) (*secureFramer, error) {
	hsTimeout := max(d.opts.ConnectTimeout, defaultHandshakeTimeout)
	var fails []string
	var last error
	wrongSeed, spoke := false, false
	// linesOnly: the peer answered a JSON-line hello with a line that is no
	// BTSP message; a length-prefixed hello would not even be read (it has
	// no newline) and would cost a whole handshake timeout.
	linesOnly := false
attempts:
	for _, a := range d.attempts(facts) {
		if linesOnly && a.framing == btsp.LengthPrefixed {
			fails = append(fails, a.String()+": not tried (the peer answers in lines that are no BTSP messages)")
			continue
		}
	prefixes:
		for _, pre := range d.btspPrefixes(facts) {
			for i, seed := range d.seeds {
				if err := ctx.Err(); err != nil {
					if last == nil {
						last = &btsp.HandshakeError{Reason: btsp.ReasonTimeout, Step: "connect", Err: context.Cause(ctx)}
					}
					break attempts
				}
				how := a.String()
				if pre {
					how += fmt.Sprintf(" with prefix EC %02X", btsp.PrefixFor(a.framing)[1])
				}
				if len(d.seeds) > 1 {
					how += fmt.Sprintf(", seed reading %d of %d", i+1, len(d.seeds))
				}
				// A server another local user runs gets no handshake keyed
				// by the seed, even from a probe, which only observes who
				// serves a socket: refused here, once Seen has marked it.
				hopts := d.opts
				hopts.Peer.Observe = false
				nc, err := dialPeer(ctx, d.ep, hopts)
				if err != nil {
					if len(fails) > 0 && deadlinePassed(ctx) {
						// The deadline ended between two attempts (a
						// socket's deadline may fire a hair before its
						// context says so): the peer was reached, and
						// it is the time that ran out, not the connection.
						last = &btsp.HandshakeError{Reason: btsp.ReasonTimeout, Step: "connect", Err: context.DeadlineExceeded}
						fails = append(fails, how+": not tried (the deadline had passed)")
						break attempts
					}
					return nil, err
				}
				d.note("BTSP handshake (" + how + ")")
				hctx, cancel := context.WithTimeout(ctx, hsTimeout)
				s, err := btsp.Client(hctx, nc, btsp.ClientConfig{
					Seed: seed, Framing: a.framing, Cipher: a.cipher, Negotiate: a.negotiate,
					Prefix: pre, MaxFrame: d.opts.MaxFrame, Trace: d.note,
				})
				cancel()
				if err == nil {
					if d.sec.Cipher == "" && !d.sec.Negotiate && (!s.ServerAuthenticated() || s.Cipher() != btsp.CipherChaCha20Poly1305) {
						// Cannot happen with the attempts above; a guard all the same.
						s.Close()
						fails = append(fails, how+": the session is not authenticated and encrypted")
						continue prefixes
					}
					return d.established(s, a, pre), nil
				}
				last = err
				fails = append(fails, how+": "+err.Error())
				var he *btsp.HandshakeError
				if !errors.As(err, &he) {
					return nil, &DialError{Endpoint: d.name, Err: fmt.Errorf("BTSP handshake: %w", err)}
				}
				d.note("BTSP handshake failed (" + how + "): " + he.Error())
				switch {
				case he.WrongSeed() && i+1 < len(d.seeds):
					d.note("family_verification failed: trying the next reading of the seed")
					continue
				case he.WrongSeed():
					wrongSeed = true // another framing asks the same question
					break attempts
				case he.Reason == btsp.ReasonNegotiateRefused && len(seed) < btsp.MinNegotiateSeed:
					// BearDog refuses btsp.negotiate with a seed this
					// short: its length-prefixed handshake is the way.
					d.note("btsp.negotiate refused with a seed shorter than 16 bytes (BearDog's rule): trying the length-prefixed handshake")
					continue attempts
				case he.Spoke || he.FromPeer:
					// The peer answered in this framing, then failed (an
					// impostor, a downgrade, a hello cut and closed): it
					// speaks this framing, so another framing or prefix
					// is no way round it, and a peer that reads only
					// lines would leave a length-prefixed hello waiting
					// out the whole timeout. Stop with this failure.
					spoke = true
					break attempts
				case he.Reason == btsp.ReasonMalformed && a.framing == btsp.JSONLine && !pre:
					linesOnly = true
				}
				continue prefixes
			}
		}
	}
	msg := "no BTSP session could be opened, and nothing was sent in cleartext"
	if d.sec.Cipher == "" && !d.sec.Negotiate {
		msg = "no authenticated encrypted BTSP session could be opened (--btsp-cipher auto), and nothing was sent in cleartext"
	}
	if wrongSeed {
		msg = "the family seed does not match the peer's; nothing was sent in cleartext"
	}
	if spoke {
		msg = "the peer answered the BTSP handshake and then failed it; no other way was tried, and nothing was sent in cleartext"
	}
	if len(fails) > 1 {
		msg += " [tried: " + strings.Join(fails[:len(fails)-1], "; ") + "]"
	}
	return nil, &DialError{Endpoint: d.name, Err: fmt.Errorf("%s: %w", msg, last)}
}

// deadlinePassed reports whether ctx has ended or its deadline has passed
// (which a socket may notice before ctx does).
func deadlinePassed(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// established records what worked and wraps the session.
func (d *secureDialer) established(s *btsp.Session, a attempt, pre bool) *secureFramer {
	d.remember(func(f *EndpointFacts) {
		f.BTSPRequired, f.Framing = true, a.framing.String()
		if d.sec.Prefix == PrefixAuto {
			p := pre
			f.BTSPPrefix = &p
		}
	})
	desc := describeSession(d.ep.Transport, s)
	d.note("BTSP session established: " + s.Describe())
	switch {
	case s.Cipher() == btsp.CipherNull:
		d.warn("BTSP session with the null cipher, as --btsp-cipher null asks: calls travel in CLEARTEXT after the handshake (" + desc + ")")
	case !s.ServerAuthenticated():
		d.warn("the server is NOT authenticated: a JSON-line handshake does not prove that the peer holds the family seed, so an impostor may read this session (" + desc + "); --btsp-cipher auto accepts only authenticated sessions")
	}
	sf := &secureFramer{d: d, desc: desc, sess: s, keyConfirm: s.Negotiated()}
	sf.setCur(s)
	sf.settled.Store(true)
	sf.closeCtx, sf.closeCancel = context.WithCancel(context.Background())
	return sf
}
