package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
				d.note("the endpoint requires BTSP (" + why + ") and no seed is known for family " + d.foreign + ": not connecting")
				return nil, &BTSPRequiredError{Endpoint: d.name, Family: d.foreign, OwnFamily: d.sec.Family,
					Claimed: d.foreign == d.sec.ClaimedFamily && d.sec.TargetFamily == "" && !FamilyScoped(d.ep, d.foreign)}
			}
			d.note("the endpoint requires BTSP (" + why + ") and no family seed is set: not connecting")
			return nil, &BTSPRequiredError{Endpoint: d.name}
		}
		d.warn("sending CLEARTEXT to an endpoint that requires BTSP (" + why + "), as --btsp-cipher null asks: no family seed is set, nothing is protected")
		d.forcedCleartext = true
	}
	return d.cleartext(ctx, facts)
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

// secureFramer carries one socket connection that may still be replaced:
// until the peer's first answer settles how to speak to it, it keeps what
// was written, and when that answer proves the peer did not process it
// ("BTSP handshake required" with a seed at hand, -32002 to a raw request,
// a parse error to a prefixed one) it reconnects accordingly and resends.
// A close proves nothing: it is never followed by a resend. Once settled it
// is a thin pass-through.
type secureFramer struct {
	d *secureDialer

	settled atomic.Bool // no more reconnects; cur no longer changes
	closed  atomic.Bool
	// wdl is the write deadline (Unix nanoseconds, 0 for none), so a
	// writer waiting for a reconnect in progress still honours it.
	wdl atomic.Int64

	// cur is the connection in use; it changes only before settling, with
	// mu held, and is read without mu (Close, write deadlines).
	cur atomic.Pointer[framerBox]

	// keyConfirm: the session's keys come from the handshake key and the
	// server's first frame has not been read yet; a first frame that does
	// not authenticate means the server does not hold the seed. Read side only.
	keyConfirm bool

	// decoded is the message classify decoded from the frame ReadFrame
	// returned, handed to the reader (takeDecoded) so that it does not
	// decode the frame again: a 10 MB answer was scanned whole twice.
	// Read side only.
	decoded    *Message
	decodedErr error

	mu      sync.Mutex // guards everything below until settled
	plan    plan
	desc    string
	sess    *btsp.Session // the BTSP session, nil for cleartext
	tried   map[plan]bool
	written [][]byte
	wbytes  int
	noSend  bool // too much written to resend: no reconnects

	closeCtx    context.Context
	closeCancel context.CancelFunc
}

type framerBox struct{ f Framer }

func (f *secureFramer) setCur(fr Framer) { f.cur.Store(&framerBox{fr}) }
func (f *secureFramer) load() Framer     { return f.cur.Load().f }

// TransportDescription says what the connection puts on the wire.
func (f *secureFramer) TransportDescription() string {
	if f.settled.Load() {
		return f.desc
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.desc
}

// SessionSecurity says what protects the connection: its BTSP session, or
// cleartext to a BTSP endpoint on purpose; false for plain cleartext to an
// endpoint that asked for nothing.
func (f *secureFramer) SessionSecurity() (SessionSecurity, bool) {
	var s *btsp.Session
	if f.settled.Load() {
		s = f.sess
	} else {
		f.mu.Lock()
		s = f.sess
		f.mu.Unlock()
	}
	if s == nil {
		return SessionSecurity{}, f.d.forcedCleartext
	}
	return SessionSecurity{BTSP: true, Cipher: string(s.Cipher()), Negotiated: s.Negotiated(),
		Encrypted: s.Encrypted(), Authenticated: s.ServerAuthenticated()}, true
}

// WriteFrame writes one message; before the connection is settled it is
// kept for resending, and a failed write is left for the reading side to
// discover (the peer may have refused the connection and closed it).
func (f *secureFramer) WriteFrame(p []byte) error {
	if f.settled.Load() {
		return f.load().WriteFrame(p)
	}
	if err := f.lockBy(); err != nil {
		return err
	}
	defer f.mu.Unlock()
	if f.settled.Load() {
		return f.load().WriteFrame(p)
	}
	if !f.noSend {
		if len(f.written) >= maxResendFrames || f.wbytes+len(p) > maxResendBytes {
			f.noSend, f.written, f.wbytes = true, nil, 0
		} else {
			f.written = append(f.written, append([]byte(nil), p...))
			f.wbytes += len(p)
		}
	}
	err := f.load().WriteFrame(p)
	if err != nil && !f.noSend && isPeerGone(err) {
		return nil // the reader sees why (and resends only if the peer proves it refused it)
	}
	return err
}

func isPeerGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// lockBy takes mu, giving up when the write deadline passes first: the
// reading side may hold mu through a reconnect of several seconds.
func (f *secureFramer) lockBy() error {
	for !f.mu.TryLock() {
		if dl := f.wdl.Load(); dl != 0 && time.Now().UnixNano() >= dl {
			return fmt.Errorf("waiting for the connection to settle: %w %w", errNotWritten, os.ErrDeadlineExceeded)
		}
		if f.closed.Load() {
			return os.ErrClosed
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// SetWriteDeadline bounds writes on the current connection. It takes no
// lock, so it can cut short a write in progress.
func (f *secureFramer) SetWriteDeadline(t time.Time) error {
	if t.IsZero() {
		f.wdl.Store(0)
	} else {
		f.wdl.Store(t.UnixNano())
	}
	if wd, ok := f.load().(WriteDeadliner); ok {
		return wd.SetWriteDeadline(t)
	}
	return nil
}

// Close closes the connection and stops a reconnect in progress (which
// then closes the connection it opened).
func (f *secureFramer) Close() error {
	f.closed.Store(true)
	f.closeCancel()
	return f.load().Close()
}

// action is what the first answer on an unsettled connection calls for.
type action uint8

const (
	actAccept   action = iota
	actBTSP            // the peer demanded BTSP: handshake, resend
	actNoPrefix        // the peer could not parse the prefixed request: raw, resend
	actPrefix          // the peer wants the prefix (-32002): prefixed, resend
	actPass            // a frame the peer pushed on its own: deliver it, stay unsettled
)

// ReadFrame returns the next message; on an unsettled connection the first
// answer may make it reconnect (see secureFramer) instead.
func (f *secureFramer) ReadFrame() ([]byte, error) {
	for {
		if f.settled.Load() {
			return f.readSettled()
		}
		frame, err := f.load().ReadFrame()
		if f.closed.Load() {
			return frame, err
		}
		f.mu.Lock()
		if err != nil {
			// A close, a reset or a cut line proves nothing about what the
			// peer made of the request: never resend; say what may help.
			err = f.closedErr(err)
			f.settle()
			f.mu.Unlock()
			return nil, err
		}
		act, why := f.classify(frame)
		if act == actPass {
			f.mu.Unlock()
			return frame, nil
		}
		if act == actAccept {
			f.settle()
			f.mu.Unlock()
			return frame, nil
		}
		f.decoded = nil // the frame is not delivered
		if rerr := f.reconnect(act, why, frame); rerr != nil {
			f.settle()
			f.mu.Unlock()
			return nil, rerr
		}
		f.mu.Unlock()
	}
}

// takeDecoded returns the message of frame when classify decoded it (the
// first answer of a connection), once; ok is false otherwise.
func (f *secureFramer) takeDecoded(frame []byte) (m *Message, ok bool, err error) {
	m, err = f.decoded, f.decodedErr
	f.decoded, f.decodedErr = nil, nil
	if m == nil || len(frame) == 0 || len(m.Raw) != len(frame) || &m.Raw[0] != &frame[0] {
		return nil, false, nil
	}
	return m, true, err
}

func (f *secureFramer) readSettled() ([]byte, error) {
	frame, err := f.load().ReadFrame()
	if f.keyConfirm {
		f.keyConfirm = false
		var fe *btsp.FrameError
		if errors.As(err, &fe) {
			return nil, &btsp.HandshakeError{Reason: btsp.ReasonKeyConfirmation, Step: "first frame",
				Detail: "the server's first frame does not authenticate with keys from the family seed: it is not who it claims to be", Err: err}
		}
	}
	return frame, err
}

// settle ends the unsettled phase. Called with mu held.
func (f *secureFramer) settle() {
	f.written, f.wbytes = nil, 0
	f.settled.Store(true)
}

// closedErr explains a connection that ended before any answer. Called
// with mu held.
func (f *secureFramer) closedErr(err error) error {
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, syscall.ECONNRESET) {
		return err
	}
	var what string
	if len(f.written) > 0 || f.noSend {
		what = "the peer closed the connection before answering; the request is NOT resent (the peer may have processed it)"
	} else {
		what = "the peer closed the connection without a word"
	}
	if f.d.sec.Prefix == PrefixAuto && !f.plan.prefix {
		what += "; it was sent without the riboCipher prefix: if the peer wants the prefix, retry with --prefix on"
	}
	f.d.note(what)
	return fmt.Errorf("%w (%s)", err, what)
}

// classify decides, from the first thing the peer sent, whether the
// connection is settled or must be reopened. Called with mu held.
func (f *secureFramer) classify(frame []byte) (action, string) {
	d, p := f.d, f.plan
	m, derr := DecodeMessage(frame)
	f.decoded, f.decodedErr = m, derr
	if derr != nil {
		return actAccept, "" // not JSON: proves nothing, changes nothing
	}
	if m.Error != nil && m.Error.IsBTSPRequired() {
		d.remember(func(ef *EndpointFacts) { ef.BTSPRequired = true })
		if len(d.seeds) > 0 && !f.noSend {
			return actBTSP, "the peer demands a BTSP handshake"
		}
		return actAccept, ""
	}
	if m.Error == nil && (m.Kind == KindNotification || m.Kind == KindEvent || m.Kind == KindRequest) {
		// Pushed by the peer on its own (a heartbeat, a server that speaks
		// first): it proves nothing about what the peer made of our bytes.
		return actPass, ""
	}
	auto := d.sec.Prefix == PrefixAuto
	var code int64
	if m.Error != nil {
		code = m.Error.Code
	}
	switch {
	case auto && !p.prefix && code == -32002:
		// The peer refused the connection for want of the prefix: nothing
		// on it was processed.
		d.remember(func(ef *EndpointFacts) { yes := true; ef.Prefix = &yes })
		if !f.noSend && !f.tried[plan{prefix: true}] {
			return actPrefix, "the peer wants the riboCipher prefix (error -32002)"
		}
		return actAccept, ""
	case auto && p.prefix && code == -32700:
		// The prefixed line could not be parsed: the prefix is not wanted.
		// Only a single request is proven unprocessed by it (a lenient
		// peer may have read the lines after the first).
		d.remember(func(ef *EndpointFacts) { no := false; ef.Prefix = &no })
		if !f.noSend && len(f.written) == 1 && !f.tried[plan{}] {
			return actNoPrefix, "the peer answered the riboCipher prefix with a parse error (-32700)"
		}
		return actAccept, ""
	}
	if auto || d.sec.Prefix == PrefixOn {
		// An answer: this way of speaking is understood.
		pre := p.prefix
		d.remember(func(ef *EndpointFacts) { ef.Prefix = &pre })
	}
	return actAccept, ""
}

// reconnect replaces the connection as act says and resends what was
// written. Called with mu held; the writer waits meanwhile.
func (f *secureFramer) reconnect(act action, why string, frame []byte) error {
	d := f.d
	// The refusal itself never reaches the Conn: trace it here.
	if d.opts.Trace != nil {
		d.opts.Trace(TraceEvent{Time: time.Now(), Dir: In, Data: frame, Size: len(frame), Warning: "refused: " + why})
	}
	n := len(f.written)
	what := fmt.Sprintf("reconnecting %s and resending %d message(s) the peer refused unprocessed", map[action]string{
		actBTSP: "with a BTSP handshake", actNoPrefix: "without the riboCipher prefix", actPrefix: "with the riboCipher prefix",
	}[act], n)
	d.note(why + ": " + what)
	timeout := d.opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(f.closeCtx, timeout+4*defaultHandshakeTimeout)
	defer cancel()
	var next Framer
	var desc string
	var sess *btsp.Session
	switch act {
	case actBTSP:
		sf, err := d.handshake(ctx, d.facts())
		if err != nil {
			return fmt.Errorf("reconnecting with BTSP after the peer demanded it: %w", err)
		}
		next, desc, sess = sf.load(), sf.desc, sf.sess
		f.keyConfirm = sf.keyConfirm
		sf.closeCancel()
		// A BTSP session is not reopened again.
		defer f.settle()
	case actNoPrefix, actPrefix:
		np := plan{prefix: act == actPrefix}
		f.tried[np] = true
		nc, err := d.dialCleartext(ctx, np)
		if err != nil {
			return fmt.Errorf("reconnecting %s: %w", map[bool]string{true: "with the riboCipher prefix", false: "without the riboCipher prefix"}[np.prefix], err)
		}
		next, desc = NetFramer(nc, d.opts.MaxFrame), d.describeCleartext(np)
		f.plan = np
	}
	old := f.load()
	f.setCur(next)
	f.desc, f.sess = desc, sess
	_ = old.Close()
	for _, w := range f.written {
		if err := next.WriteFrame(w); err != nil && !isPeerGone(err) {
			return fmt.Errorf("resending after reconnecting: %w", err)
		}
	}
	if f.closed.Load() {
		_ = next.Close()
		return os.ErrClosed
	}
	return nil
}
