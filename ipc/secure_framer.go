package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// The framer a socket connection runs through once its security is
// settled: it learns the riboCipher prefix from the first answer, holds a
// BTSP session, and classifies what it reads before the Conn sees it.

// secureFramer carries one socket connection that may still be replaced:
// until the peer's first answer settles how to speak to it, it keeps what
// was written, and when that answer refuses the connection ("BTSP handshake
// required" with a seed at hand, -32002 to a raw request, a parse error to
// a prefixed one; each with a null id, see classify) it reconnects
// accordingly and resends what the resend rule (resendable) allows: the
// one request written, when it was the only one. Every message written on
// the refused connection and not resent fails its call with a
// *NotResentError (it may have reached the peer). A close proves nothing:
// it is never followed by a resend. The reconnect runs within the deadline
// of the call whose message it resends; when it fails, nothing more is
// written (refuseWrites). Once settled it is a thin pass-through.
type secureFramer struct {
	d *secureDialer

	settled atomic.Bool // no more reconnects; cur no longer changes
	closed  atomic.Bool
	// failed, once set (always before settled), says why nothing more is
	// written: the peer refused the connection and the reconnect failed,
	// or the peer demanded BTSP and none is opened (see refuseWrites).
	// Every write then fails with it, and it matches errNotWritten.
	failed atomic.Pointer[framerFailure]
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
	// names is classify's cache of the strings it decodes (a method, the
	// "2.0"), as a Conn has: a connection that only listens stays
	// unsettled, and each notification it pushed cost two strings more.
	// Read side only.
	names nameCache

	mu      sync.Mutex // guards everything below until settled
	plan    plan
	desc    string
	sess    *btsp.Session // the BTSP session, nil for cleartext
	tried   map[plan]bool
	written [][]byte
	wbytes  int
	noSend  bool // too much written to resend: no reconnects
	// firstDL is the write deadline (Unix nanoseconds, 0 for none) the
	// first message in written was sent under: its call's deadline, which
	// bounds a reconnect that resends it.
	firstDL int64
	// firstCtx is the context of the call that wrote it (nil when written
	// by WriteFrame, outside a call): once it ends, nobody waits for the
	// message and it is not resent (see reconnect).
	firstCtx context.Context

	// notResent, set by the Conn before it reads, is told the messages
	// written on a refused connection that are not resent (all but the
	// first), so that their calls fail at once. Called with mu held, from
	// the reading goroutine; it must not call back into the framer.
	notResent func(frames [][]byte, why string)

	closeCtx    context.Context
	closeCancel context.CancelFunc
}

type framerBox struct{ f Framer }

type framerFailure struct{ err error }

// refuseWrites puts the framer in its failed state (see failed): from now
// on no message is written, whatever waits in lockBy. Called with mu held,
// before settle.
func (f *secureFramer) refuseWrites(why error) {
	if f.failed.Load() == nil {
		f.failed.Store(&framerFailure{err: fmt.Errorf("%w: %w", errNotWritten, why)})
	}
}

// writeSettled writes p on a settled connection, unless it failed.
func (f *secureFramer) writeSettled(p []byte) error {
	if fl := f.failed.Load(); fl != nil {
		return fl.err
	}
	return f.load().WriteFrame(p)
}

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
func (f *secureFramer) WriteFrame(p []byte) error { return f.writeFrameCtx(nil, p) }

// writeFrameCtx is WriteFrame for the call whose context is ctx (nil for
// none): a message kept for resending is resent only while ctx lasts, and
// one whose ctx ended while it waited for a reconnect is not written.
func (f *secureFramer) writeFrameCtx(ctx context.Context, p []byte) error {
	if f.settled.Load() {
		return f.writeSettled(p)
	}
	if err := f.lockBy(); err != nil {
		return err
	}
	defer f.mu.Unlock()
	if ctx != nil && ctx.Err() != nil {
		// It waited through a reconnect and its caller has gone.
		return fmt.Errorf("waiting for the connection to settle: %w %w", errNotWritten, context.Cause(ctx))
	}
	f.applyWriteDeadline()
	if f.settled.Load() {
		return f.writeSettled(p)
	}
	if !f.noSend {
		if len(f.written) >= maxResendFrames || f.wbytes+len(p) > maxResendBytes {
			f.noSend, f.written, f.wbytes, f.firstCtx = true, nil, 0, nil
		} else {
			if len(f.written) == 0 {
				f.firstDL = f.wdl.Load()
				f.firstCtx = ctx
			}
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

// applyWriteDeadline sets the write deadline (wdl) on the connection in
// use: a writer that waited in lockBy through a reconnect set it on the
// connection that was replaced. Called with mu held.
func (f *secureFramer) applyWriteDeadline() {
	wd, ok := f.load().(WriteDeadliner)
	if !ok {
		return
	}
	if dl := f.wdl.Load(); dl != 0 {
		_ = wd.SetWriteDeadline(time.Unix(0, dl))
	} else {
		_ = wd.SetWriteDeadline(time.Time{})
	}
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
		refusal := f.decoded.Error
		f.decoded = nil // the frame is not delivered
		f.dropUnproven(why)
		if rerr := f.reconnect(act, why, frame, refusal); rerr != nil {
			// The refused connection is the peer's "no": nothing more goes
			// on it (a writer waiting in lockBy would otherwise write its
			// request there, in cleartext after a BTSP demand), and none
			// opens in its place.
			f.refuseWrites(rerr)
			_ = f.load().Close()
			f.settle()
			f.mu.Unlock()
			return nil, rerr
		}
		f.mu.Unlock()
	}
}

// setNotResent installs the Conn's hook for messages that are not resent
// (see notResent). Called before the Conn's first read.
func (f *secureFramer) setNotResent(fn func(frames [][]byte, why string)) { f.notResent = fn }

// resendable is the resend rule, one for every refusal (a BTSP demand,
// -32002, a parse error to a prefixed line; each only with a null id, see
// classify): a refusal says that the peer refused a line of the
// connection, not which one. Only when exactly one request was written on
// it is that request proven unprocessed, and resent on the new
// connection. With more, nothing is resent: the primals of
// ECOSYSTEM-FACTS.md refuse the first line and close, but a peer that
// reads on, or lets some methods through in cleartext and refuses others
// (some BearDog builds do), may be running any of them. Called with mu
// held.
func (f *secureFramer) resendable() bool { return !f.noSend && len(f.written) == 1 }

// dropUnproven applies the resend rule (resendable) before a reconnect:
// when more than one message was written on the refused connection, none
// is kept; they are handed to notResent (their calls fail: they may have
// reached the peer) and never sent again. Called with mu held.
func (f *secureFramer) dropUnproven(why string) {
	if len(f.written) == 0 || f.resendable() {
		return
	}
	rest := f.written
	f.written, f.wbytes, f.firstDL, f.firstCtx = nil, 0, 0, nil
	f.d.note(fmt.Sprintf("%d messages were written on the refused connection: NOT resent (a refusal does not say which line it answers; the peer may be running any of them)", len(rest)))
	if f.notResent != nil {
		f.notResent(rest, why)
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
	f.written, f.wbytes, f.firstDL, f.firstCtx = nil, 0, 0, nil
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
	m, derr := decodeMessage(frame, &f.names)
	f.decoded, f.decodedErr = m, derr
	if derr != nil {
		return actAccept, "" // not JSON: proves nothing, changes nothing
	}
	// A refusal of the connection answers no call: its id is null (as a
	// BTSP demand, a riboCipher primal's "prefix required" and a parse
	// error are). An error that names a request's id is that call's own
	// answer, whatever its code (a server may use -32002 for its own
	// errors, and one that lets some methods through in cleartext demands
	// BTSP for others by their id): the peer read the request and may be
	// running the others; nothing is sent again.
	connLevel := len(m.ID) == 0 || string(m.ID) == "null"
	if m.Error != nil && m.Error.IsBTSPRequired() {
		d.remember(func(ef *EndpointFacts) { ef.BTSPRequired = true })
		if connLevel && len(d.seeds) > 0 && !f.noSend {
			return actBTSP, "the peer demands a BTSP handshake"
		}
		// No handshake follows: nothing more goes on this connection. The
		// Conn refuses every call once it reads a null-id demand (one with
		// an id is that call's answer, delivered to it, and the calls in
		// flight may still be answered); a writer that waited in lockBy
		// meanwhile must not slip out in cleartext first.
		f.refuseWrites(&BTSPRequiredError{Endpoint: d.name, Peer: m.Error})
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
	case auto && !p.prefix && code == -32002 && connLevel:
		// The peer refused the connection for want of the prefix: nothing
		// on it was processed.
		d.remember(func(ef *EndpointFacts) { yes := true; ef.Prefix = &yes })
		if !f.noSend && !f.tried[plan{prefix: true}] {
			return actPrefix, "the peer wants the riboCipher prefix (error -32002)"
		}
		return actAccept, ""
	case auto && p.prefix && code == -32700 && connLevel:
		// The prefixed line could not be parsed: the prefix is not wanted.
		// A parse error reconnects only when the resend rule resends
		// (resendable). With more written, it names none of them: the
		// Conn settles the calls in flight (their answers by id, the
		// rest as unattributed) and then closes the connection.
		d.remember(func(ef *EndpointFacts) { no := false; ef.Prefix = &no })
		if f.resendable() && !f.tried[plan{}] {
			return actNoPrefix, "the peer answered the riboCipher prefix with a parse error (-32700)"
		}
		return actAccept, ""
	}
	if auto || d.sec.Prefix == PrefixOn {
		// An answer: this way of speaking is understood; but a parse error
		// refusing the prefixed line (with --prefix on, which does not
		// reconnect) says the prefix is not.
		pre := p.prefix && !(code == -32700 && connLevel)
		d.remember(func(ef *EndpointFacts) { ef.Prefix = &pre })
	}
	return actAccept, ""
}

// reconnect replaces the connection as act says and resends what was
// written. Called with mu held; the writer waits meanwhile. A BTSP
// handshake that fails after the peer's demand (refusal) is a
// *BTSPRequiredError carrying how it failed: the Conn then refuses every
// later call (exit 5, or 4 when the time ran out).
func (f *secureFramer) reconnect(act action, why string, frame []byte, refusal *RPCError) error {
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
	// The reconnect is bounded by its own budget, by Close, and by the
	// deadline of the call whose message it resends: that call's caller
	// (the whole command, under --timeout) waits for it, and past that
	// deadline nobody does.
	dl := time.Now().Add(timeout + 4*defaultHandshakeTimeout)
	if f.firstDL != 0 && f.firstDL < dl.UnixNano() {
		dl = time.Unix(0, f.firstDL)
	}
	ctx, cancel := context.WithDeadline(f.closeCtx, dl)
	defer cancel()
	var next Framer
	var desc string
	var sess *btsp.Session
	switch act {
	case actBTSP:
		sf, err := d.handshake(ctx, d.facts())
		if err != nil {
			if f.closed.Load() {
				return os.ErrClosed
			}
			return &BTSPRequiredError{Endpoint: d.name, Peer: refusal, Failed: err}
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
	// Close may have come while the new connection was opened (it closed
	// the old one): nothing goes out after it. Past the deadline, nobody
	// waits for the answer. (A Close from now on closes next.)
	if f.closed.Load() {
		_ = next.Close()
		return os.ErrClosed
	}
	if len(f.written) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not resent after reconnecting: %w %w", errNotWritten, context.Cause(ctx))
	}
	// A call given up meanwhile (cancelled: with no deadline, nothing
	// else ends its wait) is not sent again: its caller no longer waits
	// for it, and a request reaches the peer only for someone who does.
	// The new connection serves the calls that follow.
	fc := f.firstCtx
	if fc != nil && fc.Err() != nil {
		d.note(fmt.Sprintf("the call was cancelled during the reconnect (%v): its request is NOT resent", context.Cause(fc)))
		f.written, f.wbytes, f.firstDL, f.firstCtx = nil, 0, 0, nil
		return nil
	}
	// The resend is bounded by the same deadline: a peer that stops
	// reading would otherwise hold it, and mu, until Close; and a cancel
	// of its call cuts it short.
	if wd, ok := next.(WriteDeadliner); ok {
		_ = wd.SetWriteDeadline(dl)
		var stop func() bool
		fired := make(chan struct{})
		if fc != nil {
			stop = context.AfterFunc(fc, func() {
				_ = wd.SetWriteDeadline(time.Unix(1, 0))
				close(fired)
			})
		}
		defer func() {
			if stop != nil && !stop() {
				<-fired // its deadline is set: the reset below comes after it
			}
			_ = wd.SetWriteDeadline(time.Time{})
		}()
	}
	for _, w := range f.written {
		if err := next.WriteFrame(w); err != nil && !isPeerGone(err) {
			return fmt.Errorf("resending after reconnecting: %w", err)
		}
	}
	return nil
}
