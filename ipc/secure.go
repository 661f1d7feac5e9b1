package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// riboNDJSON is the riboCipher signal for NDJSON JSON-RPC.
var riboNDJSON = []byte{0xEC, 0x01}

// defaultHandshakeTimeout bounds one BTSP handshake unless ConnectTimeout
// says otherwise.
const defaultHandshakeTimeout = 5 * time.Second

// Limits on what an unsettled connection keeps for resending.
const (
	maxResendFrames = 256
	maxResendBytes  = 4 << 20
	maxReconnects   = 4
)

// secureDialer opens socket connections with the riboCipher prefix and the
// BTSP handshake as Security and the endpoint memory say.
type secureDialer struct {
	ep    Endpoint
	opts  Options
	sec   Security
	name  string // the endpoint as errors name it
	seeds [][]byte
	stamp string // socketStamp at dial time
}

// plan is how one connection is opened.
type plan struct {
	prefix bool // cleartext: EC 01 first; BTSP: EC 03 / EC 02 before the hello
	btsp   bool
}

func dialSocket(ctx context.Context, ep Endpoint, opts Options) (Framer, error) {
	if !opts.Security.active() {
		c, err := DialStream(ctx, ep, opts.ConnectTimeout)
		if err != nil {
			return nil, err
		}
		return NetFramer(c, opts.MaxFrame), nil
	}
	d := &secureDialer{ep: ep, opts: opts, sec: opts.Security, name: opts.Endpoint, seeds: opts.Security.Seed.candidates()}
	if d.name == "" {
		d.name = ep.String()
	}
	if d.sec.Memory != nil {
		d.stamp = socketStamp(ep)
	}
	if d.sec.Cipher == "" {
		d.sec.Cipher = btsp.CipherChaCha20Poly1305
	}
	if d.sec.Negotiate {
		d.sec.Cipher = btsp.CipherNull
	}
	return d.open(ctx)
}

func (d *secureDialer) note(s string) {
	if d.opts.Trace != nil {
		d.opts.Trace(TraceEvent{Time: time.Now(), Dir: Note, Warning: s})
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

// cleartextPrefix decides whether a cleartext connection starts with EC 01.
func (d *secureDialer) cleartextPrefix(f EndpointFacts) bool {
	switch d.sec.Prefix {
	case PrefixOn:
		return true
	case PrefixAuto:
		return f.Prefix == nil || *f.Prefix
	}
	return false
}

func (d *secureDialer) open(ctx context.Context) (Framer, error) {
	facts := d.facts()
	known := facts.BTSPRequired || d.sec.RequireBTSP
	guessed := !known && !facts.NotBTSP && FamilyScoped(d.ep, d.sec.Family)
	if known && len(d.seeds) == 0 {
		// Never send cleartext to an endpoint known to require BTSP.
		d.note("the endpoint requires BTSP and no family seed is set: not connecting")
		return nil, &BTSPRequiredError{Endpoint: d.name}
	}
	if (known || guessed) && len(d.seeds) > 0 {
		f, err := d.handshake(ctx)
		if err == nil {
			return f, nil
		}
		if !guessed || !notBTSPPeer(err) {
			return nil, err
		}
		d.note("the peer does not speak BTSP (" + err.Error() + "): trying cleartext")
		d.remember(func(f *EndpointFacts) { f.NotBTSP = true })
	}
	p := plan{prefix: d.cleartextPrefix(facts)}
	nc, err := d.dialCleartext(ctx, p)
	if err != nil {
		return nil, err
	}
	sf := &secureFramer{d: d, plan: p, desc: d.describeCleartext(p)}
	sf.setCur(NetFramer(nc, d.opts.MaxFrame))
	sf.tried = map[plan]bool{p: true}
	sf.closeCtx, sf.closeCancel = context.WithCancel(context.Background())
	return sf, nil
}

func (d *secureDialer) dialCleartext(ctx context.Context, p plan) (net.Conn, error) {
	nc, err := DialStream(ctx, d.ep, d.opts.ConnectTimeout)
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
	return s
}

func describeSession(t Transport, s *btsp.Session) string {
	c := string(s.Cipher())
	if s.Negotiated() {
		c = btsp.NegotiatedCipher + " negotiated"
	}
	if s.Framing() == btsp.LengthPrefixed {
		c += ", length-prefixed"
	}
	return string(t) + "+btsp(" + c + ")"
}

// notBTSPPeer reports whether a handshake failure says the peer does not
// speak BTSP at all (as opposed to a wrong seed, a refusal or a timeout).
func notBTSPPeer(err error) bool {
	var he *btsp.HandshakeError
	if !errors.As(err, &he) {
		return false
	}
	return !he.FromPeer && (he.Reason == btsp.ReasonMalformed || he.Reason == btsp.ReasonClosedWithoutWord)
}

// handshake opens a BTSP session: JSON-line framing first (what primalSpring
// and biomeOS use), then, where the peer closed without a word,
// length-prefixed; in auto prefix mode with nothing known, with the
// riboCipher prefix first, then without; each seed candidate in turn after a
// family_verification failure, each on a new connection.
func (d *secureDialer) handshake(ctx context.Context) (*secureFramer, error) {
	facts := d.facts()
	framings := []btsp.Framing{btsp.JSONLine, btsp.LengthPrefixed}
	if facts.Framing == btsp.LengthPrefixed.String() {
		framings = []btsp.Framing{btsp.LengthPrefixed, btsp.JSONLine}
	}
	if d.sec.Negotiate {
		framings = []btsp.Framing{btsp.JSONLine} // the upgrade exists on the NDJSON path only
	}
	var prefixes []bool
	switch {
	case d.sec.Prefix == PrefixOn:
		prefixes = []bool{true}
	case d.sec.Prefix == PrefixOff:
		prefixes = []bool{false}
	case facts.Prefix != nil:
		prefixes = []bool{*facts.Prefix, !*facts.Prefix}
	default:
		prefixes = []bool{true, false}
	}
	hsTimeout := d.opts.ConnectTimeout
	if hsTimeout <= 0 || hsTimeout < defaultHandshakeTimeout {
		hsTimeout = defaultHandshakeTimeout
	}
	var last error
	for _, fr := range framings {
		for _, pre := range prefixes {
			for i, seed := range d.seeds {
				nc, err := DialStream(ctx, d.ep, d.opts.ConnectTimeout)
				if err != nil {
					return nil, err
				}
				if len(d.seeds) > 1 {
					d.note(fmt.Sprintf("BTSP handshake (%s framing, seed reading %d of %d)", fr, i+1, len(d.seeds)))
				} else {
					d.note(fmt.Sprintf("BTSP handshake (%s framing)", fr))
				}
				hctx, cancel := context.WithTimeout(ctx, hsTimeout)
				s, err := btsp.Client(hctx, nc, btsp.ClientConfig{
					Seed: seed, Framing: fr, Cipher: d.sec.Cipher, Negotiate: d.sec.Negotiate,
					Prefix: pre, MaxFrame: d.opts.MaxFrame, Trace: d.note,
				})
				cancel()
				if err == nil {
					d.remember(func(f *EndpointFacts) {
						f.BTSPRequired, f.NotBTSP, f.Framing = true, false, fr.String()
						if d.sec.Prefix == PrefixAuto && pre {
							t := true
							f.Prefix = &t
						}
					})
					desc := describeSession(d.ep.Transport, s)
					d.note("BTSP session established: " + s.Describe())
					sf := &secureFramer{d: d, plan: plan{prefix: pre, btsp: true}, desc: desc}
					sf.setCur(s)
					sf.settled.Store(true)
					sf.closeCtx, sf.closeCancel = context.WithCancel(context.Background())
					return sf, nil
				}
				last = err
				var he *btsp.HandshakeError
				if !errors.As(err, &he) {
					return nil, &DialError{Endpoint: d.name, Err: err}
				}
				if he.WrongSeed() && i+1 < len(d.seeds) {
					d.note("family_verification failed: trying the next reading of the seed")
					continue
				}
				if !notBTSPPeer(err) || he.Reason == btsp.ReasonMalformed && !pre {
					// A refusal, a timeout, or an answer in lines that is no
					// BTSP message (another framing would not be read at all).
					return nil, &DialError{Endpoint: d.name, Err: fmt.Errorf("BTSP handshake: %w", err)}
				}
				break // this framing/prefix is not understood: try the next
			}
		}
	}
	return nil, &DialError{Endpoint: d.name, Err: fmt.Errorf("BTSP handshake: %w", last)}
}

// secureFramer carries one socket connection that may still be replaced:
// until the peer has answered something that settles how to speak to it, it
// keeps what was written, and when the first answer says "BTSP handshake
// required" (with a seed at hand), refuses the riboCipher prefix, or wants
// it, it reconnects accordingly and resends what the peer refused unread.
// Once settled it is a thin pass-through.
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

	mu      sync.Mutex // guards everything below until settled
	plan    plan
	desc    string
	tried   map[plan]bool
	written [][]byte
	wbytes  int
	noSend  bool // too much written to resend: no reconnects
	redials int

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
			f.noSend, f.written = true, nil
		} else {
			f.written = append(f.written, append([]byte(nil), p...))
			f.wbytes += len(p)
		}
	}
	err := f.load().WriteFrame(p)
	if err != nil && !f.noSend && isPeerGone(err) {
		return nil // the reader sees why and resends it on the next connection
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
	actAccept action = iota
	actBTSP
	actNoPrefix
	actPrefix
	actPass // a frame the peer pushed on its own: deliver it, stay unsettled
)

// ReadFrame returns the next message; on an unsettled connection the first
// answer may make it reconnect (see secureFramer) instead.
func (f *secureFramer) ReadFrame() ([]byte, error) {
	if f.settled.Load() {
		return f.load().ReadFrame()
	}
	for {
		frame, err := f.load().ReadFrame()
		if f.closed.Load() {
			return frame, err
		}
		f.mu.Lock()
		act, why := f.classify(frame, err)
		if act == actPass {
			f.mu.Unlock()
			return frame, nil
		}
		if act == actAccept {
			f.written, f.wbytes = nil, 0
			f.settled.Store(true)
			f.mu.Unlock()
			return frame, err
		}
		if rerr := f.reconnect(act, why, frame, err); rerr != nil {
			f.settled.Store(true)
			f.mu.Unlock()
			return nil, rerr
		}
		if f.plan.btsp {
			// A BTSP session is not reopened again.
			f.written, f.wbytes = nil, 0
			f.settled.Store(true)
		}
		f.mu.Unlock()
	}
}

// classify decides, from the first thing the peer sent (or its closing the
// connection), whether the connection is settled or must be reopened.
// Called with mu held.
func (f *secureFramer) classify(frame []byte, rerr error) (action, string) {
	d, p := f.d, f.plan
	if f.noSend || f.redials >= maxReconnects {
		return actAccept, ""
	}
	auto := d.sec.Prefix == PrefixAuto
	if rerr != nil {
		if !errors.Is(rerr, io.EOF) && !errors.Is(rerr, syscall.ECONNRESET) && !errors.Is(rerr, io.ErrUnexpectedEOF) {
			return actAccept, ""
		}
		switch {
		case auto && p.prefix && !f.tried[plan{}]:
			return actNoPrefix, "the peer closed the connection after the riboCipher prefix"
		case auto && !p.prefix && !f.tried[plan{prefix: true}]:
			return actPrefix, "the peer closed the connection without a word (it may want the riboCipher prefix)"
		}
		return actAccept, ""
	}
	m, derr := DecodeMessage(frame)
	if derr == nil && m.Error != nil && m.Error.IsBTSPRequired() {
		d.remember(func(ef *EndpointFacts) { ef.BTSPRequired, ef.NotBTSP = true, false })
		if len(d.seeds) > 0 {
			return actBTSP, "the peer demands a BTSP handshake"
		}
		return actAccept, ""
	}
	var code int64
	if derr == nil && m.Error != nil {
		code = m.Error.Code
	}
	switch {
	case auto && p.prefix && (code == -32700 || code == -32002) && !f.tried[plan{}]:
		return actNoPrefix, fmt.Sprintf("the peer answered the riboCipher prefix with error %d", code)
	case auto && !p.prefix && code == -32002 && !f.tried[plan{prefix: true}]:
		return actPrefix, "the peer wants the riboCipher prefix (error -32002)"
	}
	if derr == nil && m.Error == nil && (m.Kind == KindNotification || m.Kind == KindEvent || m.Kind == KindRequest) {
		// Pushed by the peer on its own (a heartbeat, a server that speaks
		// first): it proves nothing about what the peer made of our bytes.
		return actPass, ""
	}
	if auto && derr == nil {
		pre := p.prefix
		d.remember(func(ef *EndpointFacts) { ef.Prefix = &pre })
	}
	return actAccept, ""
}

// reconnect replaces the connection as act says and resends what was
// written. Called with mu held; the writer waits meanwhile.
func (f *secureFramer) reconnect(act action, why string, frame []byte, rerr error) error {
	d := f.d
	f.redials++
	if rerr == nil {
		// The refusal itself never reaches the Conn: trace it here.
		if d.opts.Trace != nil {
			d.opts.Trace(TraceEvent{Time: time.Now(), Dir: In, Data: frame, Size: len(frame), Warning: "refused: " + why})
		}
	}
	n := len(f.written)
	what := fmt.Sprintf("reconnecting %s and resending %d message(s) refused unread", map[action]string{
		actBTSP: "with a BTSP handshake", actNoPrefix: "without the riboCipher prefix", actPrefix: "with the riboCipher prefix",
	}[act], n)
	d.note(why + ": " + what)
	timeout := d.opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(f.closeCtx, timeout+2*defaultHandshakeTimeout)
	defer cancel()
	var next Framer
	var np plan
	var desc string
	switch act {
	case actBTSP:
		sf, err := d.handshake(ctx)
		if err != nil {
			return fmt.Errorf("reconnecting with BTSP after the peer demanded it: %w", err)
		}
		next, np, desc = sf.load(), sf.plan, sf.desc
		sf.closeCancel()
	case actNoPrefix, actPrefix:
		np = plan{prefix: act == actPrefix}
		f.tried[np] = true
		nc, err := d.dialCleartext(ctx, np)
		if err != nil {
			return fmt.Errorf("reconnecting %s: %w", map[bool]string{true: "with the riboCipher prefix", false: "without the riboCipher prefix"}[np.prefix], err)
		}
		next, desc = NetFramer(nc, d.opts.MaxFrame), d.describeCleartext(np)
		if act == actNoPrefix {
			d.remember(func(ef *EndpointFacts) { no := false; ef.Prefix = &no })
		}
	}
	old := f.load()
	f.setCur(next)
	f.plan, f.desc = np, desc
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
