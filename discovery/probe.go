package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// Prober defaults.
const (
	DefaultConnectTimeout = 50 * time.Millisecond
	// DefaultRemoteConnectTimeout bounds connecting to a non-loopback TCP peer.
	DefaultRemoteConnectTimeout = 500 * time.Millisecond
	DefaultStaleTimeout         = 2 * time.Second
	DefaultDialConcurrency      = 32
	DefaultBusyConcurrency      = 32
	DefaultMaxOpen              = 512
	DefaultDeadTTL              = 30 * time.Second
)

// ProbeOptions tune a Prober. Zero values mean the defaults.
type ProbeOptions struct {
	// ConnectTimeout bounds connect() to a local TCP port (50 ms); on a
	// Unix socket, whose connect never waits, it is at least 500 ms so that
	// scheduling delays are not mistaken for a hung socket.
	ConnectTimeout time.Duration
	// RemoteConnectTimeout bounds connecting to a non-loopback TCP peer (500 ms).
	RemoteConnectTimeout time.Duration
	// StaleTimeout is how long a target has, from connecting, to answer
	// health.liveness; it also bounds the identity and capability calls
	// that follow. A target that does not answer in time is stale (2 s).
	StaleTimeout time.Duration
	// DialConcurrency bounds how many connects run at once (32).
	DialConcurrency int
	// BusyConcurrency bounds how many probes are busy at once (32): a
	// probe is busy from its connect until it ends, or until it has waited
	// twice as long as answers take now (from 20 ms to a quarter of
	// StaleTimeout): then it gives its place to the next probe and keeps
	// waiting within its own deadline. Hung sockets thus cost little, and
	// answering ones are not starved by this process's own work (2,000
	// answers at once would take longer than StaleTimeout on a loaded
	// machine, and pass live sockets off as stale).
	BusyConcurrency int
	// MaxOpen bounds how many probe connections are open at once (512).
	// Waiting for an answer holds a connection but not a dial slot, so a
	// hung socket never delays the others.
	MaxOpen int
	// DeadTTL is how long a dead endpoint stays cached (30 s): within it, a
	// socket file that has not changed is not dialled again.
	DeadTTL time.Duration
	// Security is how connections handle the riboCipher prefix and BTSP:
	// with a family seed, family-scoped sockets are probed through the
	// handshake. The zero value is the plain wire (BTSP sockets are then
	// reported locked). The seed never leaves ipc.
	Security ipc.Security
	// MaxFrame bounds one answer during a probe (at most 4 MiB; 0 means
	// 4 MiB), so a peer that answers more than the user allows is reported
	// as such rather than listed as live.
	MaxFrame int64
}

// probeMaxFrame is the frame limit of probe connections.
func (o ProbeOptions) probeMaxFrame() int64 {
	if o.MaxFrame > 0 && o.MaxFrame < 4<<20 {
		return o.MaxFrame
	}
	return 4 << 20
}

func (o ProbeOptions) withDefaults() ProbeOptions {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.RemoteConnectTimeout <= 0 {
		o.RemoteConnectTimeout = DefaultRemoteConnectTimeout
	}
	if o.StaleTimeout <= 0 {
		o.StaleTimeout = DefaultStaleTimeout
	}
	if o.DialConcurrency <= 0 {
		o.DialConcurrency = DefaultDialConcurrency
	}
	if o.BusyConcurrency <= 0 {
		o.BusyConcurrency = DefaultBusyConcurrency
	}
	if o.MaxOpen <= 0 {
		o.MaxOpen = DefaultMaxOpen
	}
	if o.DeadTTL <= 0 {
		o.DeadTTL = DefaultDeadTTL
	}
	return o
}

// CallResult is how one method answered during a probe.
type CallResult struct {
	// OK is true when the peer answered with a result.
	OK bool `json:"ok"`
	// Code and Message are the peer's error object, when it answered one.
	Code    int64  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	// Err is a transport problem or timeout (no answer at all).
	Err     string        `json:"err,omitempty"`
	Latency time.Duration `json:"latency"`
}

// Implemented reports whether the method exists: it answered with a result
// or with an error other than "method not found".
func (c CallResult) Implemented() bool {
	return c.OK || (c.Err == "" && c.Refused() == "" && !isMethodNotFound(c.Code, c.Message))
}

// Refused says why the peer answered that it did not process the call
// ("riboCipher prefix required (-32002)", "BTSP handshake required"), or
// "" when it did not say so: such an answer proves neither that the
// method exists nor that it does not.
func (c CallResult) Refused() string {
	switch {
	case c.OK || c.Err != "":
		return ""
	case c.Code == -32002:
		return "riboCipher prefix required (-32002)"
	case (&ipc.RPCError{Code: c.Code, Message: c.Message}).IsBTSPRequired():
		return "BTSP handshake required"
	}
	return ""
}

func isMethodNotFound(code int64, msg string) bool {
	if code == -32601 || code == 12 {
		return true
	}
	m := strings.ToLower(msg)
	return code != 0 && (strings.Contains(m, "method not found") || strings.Contains(m, "unknown method"))
}

// Probe is what one probe of a target found.
type Probe struct {
	State State     `json:"state"`
	Err   string    `json:"error,omitempty"`
	At    time.Time `json:"at"`
	// Connect is how long connect() took.
	Connect time.Duration `json:"connect"`
	// Latency is the health.liveness round trip.
	Latency time.Duration `json:"latency"`
	// Wire is what the peer's answers looked like: "jsonrpc" or "lean".
	Wire     string             `json:"wire,omitempty"`
	Liveness *capability.Health `json:"liveness,omitempty"`
	// Readiness is the health.readiness answer, if any.
	Readiness *capability.Health `json:"readiness,omitempty"`
	// Calls records each method sent and how it answered.
	Calls        map[string]CallResult    `json:"calls,omitempty"`
	Identity     *capability.Identity     `json:"identity,omitempty"`
	Capabilities *capability.Capabilities `json:"capabilities,omitempty"`
	// CapsMethod is the method that answered with capabilities
	// (capabilities.list or capability.list).
	CapsMethod string `json:"caps_method,omitempty"`
	// CapsKeys are the top-level keys of the capabilities answer (to tell
	// an absent field from an empty one).
	CapsKeys []string `json:"caps_keys,omitempty"`
	// BTSPRequired is true when the peer demanded a BTSP handshake (or its
	// transport_security says one is mandatory).
	BTSPRequired bool `json:"btsp_required,omitempty"`
	// BTSPRejection is the peer's own rejection error, when it sent one.
	BTSPRejection *ipc.RPCError `json:"btsp_rejection,omitempty"`
	// Secured is true when the probe went through a BTSP handshake.
	Secured bool `json:"secured,omitempty"`
	// Session says what protected the probe's connection when BTSP was
	// involved (a session, or cleartext sent on purpose): whether the
	// server was authenticated and the messages encrypted. Nil otherwise.
	Session *ipc.SessionSecurity `json:"session,omitempty"`
	// Cached is true when the result came from the dead-endpoint cache.
	Cached bool `json:"cached,omitempty"`
	// Full is true when identity and capabilities were asked too.
	Full bool `json:"full,omitempty"`
	// CutOff is true when the target was judged stale before its own
	// deadline, by a sweep that judges as soon as it can
	// (SweepUntilJudged): every other target had been judged and it had
	// been silent far longer than they took. Err says how long.
	CutOff bool `json:"cut_off,omitempty"`
	// Incomplete is true when the probe did not run to its own end: the
	// caller's context ended while it waited for its turn ("not probed
	// yet") or while it ran ("probe cut short"). Its State is then unknown
	// unless the peer had already answered: nothing was learned, and a
	// sweep keeps the target's last judged probe instead.
	Incomplete bool `json:"incomplete,omitempty"`
}

// ProbeSpec says what to probe and how.
type ProbeSpec struct {
	Endpoint ipc.Endpoint
	// Wire is "lean" to write the lean wire; anything else writes JSON-RPC.
	Wire string
	// Pool is the stdio Bus pool to address.
	Pool string
	// Full also asks identity, capabilities, health.check and
	// health.readiness; otherwise only health.liveness.
	Full bool
	// wasStale says the target's last probe found it stale: it most likely
	// is again, so its probe does not take a busy place (it costs this
	// process nothing while it waits).
	wasStale bool
	// Family is the family id discovery split from the target's name; a
	// socket named -<Family>.sock is family-scoped (see FamilyScoped).
	Family string
	// cut, when set, may end the wait for the liveness answer early (see
	// SweepUntilJudged).
	cut *cutSignal
}

// cutSignal tells the probes of a sweep that every other target has been
// judged: a liveness answer that has been awaited at least after is not
// waited for any longer.
type cutSignal struct {
	ch    chan struct{}
	after atomic.Int64 // time.Duration, set before ch is closed
	once  sync.Once
}

func newCutSignal() *cutSignal { return &cutSignal{ch: make(chan struct{})} }

// fire closes the signal (once), asking liveness waits of at least after
// to end.
func (c *cutSignal) fire(after time.Duration) {
	c.once.Do(func() {
		c.after.Store(int64(after))
		close(c.ch)
	})
}

// errCutOff ends a liveness wait cut off by SweepUntilJudged.
var errCutOff = errors.New("cut off: every other target was judged")

// watch cancels a liveness call started at start once c fires and the call
// has waited c.after; it returns when ctx ends.
func (c *cutSignal) watch(ctx context.Context, cancel context.CancelCauseFunc, start time.Time) {
	select {
	case <-c.ch:
	case <-ctx.Done():
		return
	}
	if left := time.Duration(c.after.Load()) - time.Since(start); left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	cancel(errCutOff)
}

// Prober probes targets: connect within ConnectTimeout, health.liveness
// within StaleTimeout, then identity.get (falling back to identity) and
// capabilities.list (falling back to capability.list). It is safe for
// concurrent use and caches dead endpoints.
type Prober struct {
	opts ProbeOptions
	dial chan struct{}
	open chan struct{}
	busy chan struct{}
	// slowAt is when (UnixNano) this process last showed it was slow: a
	// first answer that took more than a quarter of the stale timeout, or
	// a connect that took more than half its timeout.
	slowAt atomic.Int64
	// answerNS is a moving average of how long answering probes take to
	// get their first answer (nanoseconds), which sets how long a probe
	// stays busy (busyHold).
	answerNS atomic.Int64
	// scope decides which sockets are family-scoped.
	scope FamilyScope

	mu   sync.Mutex
	dead map[string]deadEntry
}

type deadEntry struct {
	until time.Time
	stamp fileStamp
	probe Probe
}

// fileStamp identifies a version of a socket file: a new primal binding the
// same path makes a new inode.
type fileStamp struct {
	ok    bool
	ino   uint64
	dev   uint64
	mtime int64
}

func stampOf(ep ipc.Endpoint) fileStamp {
	if ep.Transport != ipc.Unix {
		return fileStamp{}
	}
	fi, err := os.Stat(ep.Path)
	if err != nil {
		return fileStamp{}
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileStamp{ok: true, mtime: fi.ModTime().UnixNano()}
	}
	return fileStamp{ok: true, ino: st.Ino, dev: uint64(st.Dev), mtime: fi.ModTime().UnixNano()}
}

// NewProber returns a Prober with opts (zero values mean the defaults).
func NewProber(opts ProbeOptions) *Prober {
	opts = opts.withDefaults()
	return &Prober{
		opts: opts,
		dial: make(chan struct{}, opts.DialConcurrency),
		open: make(chan struct{}, opts.MaxOpen),
		busy: make(chan struct{}, opts.BusyConcurrency),
		dead: map[string]deadEntry{},
	}
}

// Options returns the prober's options with defaults filled in.
func (p *Prober) Options() ProbeOptions { return p.opts }

// Forget drops key from the dead-endpoint cache (ForgetAll when key is "").
func (p *Prober) Forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if key == "" {
		p.dead = map[string]deadEntry{}
		return
	}
	delete(p.dead, key)
}

// localConnectFloor is the least time given to connect() on a Unix socket.
// The kernel never makes such a connect wait (it succeeds, or fails at
// once: refused, no such file, backlog full), so a timeout there only
// measures this process's own scheduling; on a busy machine a 50 ms timer
// would pass live and dead sockets off as stale.
const localConnectFloor = 500 * time.Millisecond

func connectTimeoutFor(ep ipc.Endpoint, opts ProbeOptions) time.Duration {
	opts = opts.withDefaults()
	if ep.Transport == ipc.Unix || ep.Transport == ipc.Abstract {
		return max(opts.ConnectTimeout, localConnectFloor)
	}
	if ep.Transport == ipc.TCP {
		host, _, err := net.SplitHostPort(ep.Address)
		if err == nil {
			ip := net.ParseIP(host)
			if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return opts.RemoteConnectTimeout
			}
		}
	}
	return opts.ConnectTimeout
}

// acquire takes a place in ch, unless ctx ends first (or has ended: a
// free place does not win over a context already done).
func acquire(ctx context.Context, ch chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Probe probes one endpoint. It returns within ConnectTimeout plus
// StaleTimeout (plus any wait for a free slot), or when ctx ends.
func (p *Prober) Probe(ctx context.Context, spec ProbeSpec) Probe {
	key := EndpointKey(spec.Endpoint, "")
	stamp := stampOf(spec.Endpoint)
	p.mu.Lock()
	if d, ok := p.dead[key]; ok {
		if time.Now().Before(d.until) && d.stamp == stamp {
			p.mu.Unlock()
			r := d.probe
			r.Cached = true
			return r
		}
		delete(p.dead, key)
	}
	p.mu.Unlock()

	res := p.probe(ctx, spec)
	if res.State == StateDead {
		p.mu.Lock()
		p.dead[key] = deadEntry{until: time.Now().Add(p.opts.DeadTTL), stamp: stamp, probe: res}
		p.mu.Unlock()
	}
	return res
}

func (p *Prober) probe(ctx context.Context, spec ProbeSpec) (res Probe) {
	res = Probe{State: StateUnknown, At: time.Now(), Full: spec.Full}
	ep := spec.Endpoint
	if ep.Transport == "" {
		res.State, res.Err = StateUnprobed, "no address"
		return res
	}
	if !acquire(ctx, p.open) {
		return notReached(ctx, res)
	}
	defer func() { <-p.open }()
	if !spec.wasStale {
		if !acquire(ctx, p.busy) {
			return notReached(ctx, res)
		}
		// The busy place is given up when the probe ends or, if that
		// takes longer, after busyHold: the probe then waits on for its
		// own deadline.
		idle := sync.OnceFunc(func() { <-p.busy })
		defer idle()
		holdTimer := time.AfterFunc(p.busyHold(), idle)
		defer holdTimer.Stop()
	}
	if !acquire(ctx, p.dial) {
		return notReached(ctx, res)
	}
	// The probe's own deadline starts now, when it has its places, not when
	// it was queued: however many probes wait, each target gets its whole
	// connect and stale time. The caller's ctx ending first cuts the probe
	// short, which says nothing about the target (settle).
	parent := ctx
	res.At = time.Now()
	ctx, cancelProbe := context.WithDeadlineCause(parent, res.At.Add(connectTimeoutFor(ep, p.opts)+p.opts.StaleTimeout), errProbeDeadline)
	defer cancelProbe()
	defer func() { res = p.settle(parent, ctx, res, spec) }()
	wire := ipc.WireJSONRPC
	if spec.Wire == "lean" {
		wire = ipc.WireLean
	}
	opts := ipc.Options{Wire: wire, IncomingBuffer: 8, Endpoint: ep.String(), MaxFrame: p.opts.probeMaxFrame(),
		ConnectTimeout: connectTimeoutFor(ep, p.opts), Security: p.opts.Security}
	// A family-scoped name gets nothing in cleartext, even without FAMILY_ID.
	opts.Security.FamilyScoped = opts.Security.FamilyScoped || p.scope.Scoped(ep, spec.Family, opts.Security.Family)
	secured := !opts.Security.Seed.IsZero() && (opts.Security.FamilyScoped || ipc.FamilyScoped(ep, opts.Security.Family))
	start := time.Now()
	fr, err := ipc.DialFramer(ctx, ep, opts)
	res.Connect = time.Since(start)
	<-p.dial
	if err != nil {
		var be *ipc.BTSPRequiredError
		if errors.As(err, &be) {
			res.State, res.BTSPRequired, res.BTSPRejection, res.Err = StateLocked, true, be.Peer, err.Error()
			return res
		}
		res.State, res.Err = classifyDialErr(err), err.Error()
		var he *btsp.HandshakeError
		if errors.As(err, &he) {
			// It answered, but the handshake failed (wrong seed, refusal).
			res.State, res.BTSPRequired = StateLocked, true
		}
		return res
	}
	res.Secured = secured
	conn := ipc.NewConn(fr, opts)
	defer conn.Close()
	// What protected the connection, read when the probe ends: a peer's
	// first answer may have turned it into a BTSP session.
	defer func() {
		if ss, ok := conn.Session(); ok {
			res.Session = &ss
			res.Secured = res.Secured || ss.BTSP
		}
	}()

	deadline := start.Add(res.Connect + p.opts.StaleTimeout)
	pctx, cancel := context.WithDeadlineCause(ctx, deadline, errProbeDeadline)
	defer cancel()
	res.Calls = map[string]CallResult{}
	var mu sync.Mutex
	callIn := func(ctx context.Context, method string) (*ipc.Response, CallResult, error) {
		resp, cr, garbage, err := callWatching(ctx, conn, method, spec.Pool)
		mu.Lock()
		res.Calls[method] = cr
		if garbage != "" && res.Err == "" {
			res.Err = garbage
		}
		mu.Unlock()
		return resp, cr, err
	}
	call := func(method string) (*ipc.Response, CallResult, error) { return callIn(pctx, method) }

	// The liveness answer may be waited for less than the deadline: see
	// SweepUntilJudged.
	lctx, lcancel := context.WithCancelCause(pctx)
	defer lcancel(nil)
	if spec.cut != nil {
		go spec.cut.watch(lctx, lcancel, time.Now())
	}
	resp, cr, lerr := callIn(lctx, "health.liveness")
	if resp != nil {
		p.noteAnswer(time.Since(res.At))
		res.Latency = cr.Latency // only an answer has a latency
		res.Wire = wireOf(resp.Raw)
	}
	switch {
	case resp != nil && resp.Error != nil && resp.Error.IsBTSPRequired():
		res.State, res.BTSPRequired, res.BTSPRejection = StateLocked, true, resp.Error
		return res
	case cr.OK:
		h := capability.ParseLiveness(resp.Result)
		res.Liveness = &h
		res.State = StateLive
	case cr.Err == "" && resp != nil:
		res.State = StateLive // it answered: alive, though liveness is not implemented
	default:
		var be *ipc.BTSPRequiredError
		if errors.As(lerr, &be) {
			res.State, res.BTSPRequired = StateLocked, true
			if be != nil {
				res.BTSPRejection = be.Peer
			}
			return res
		}
		switch {
		case res.Err != "":
			res.State = StateError
		case ep.Transport == ipc.Unix && !exists(ep.Path):
			res.State, res.Err = StateDead, "the socket vanished during the probe"
		case errors.Is(context.Cause(lctx), errCutOff) && pctx.Err() == nil:
			// Silent far longer than every other target took: judged
			// without waiting for its own deadline, and said so.
			res.State, res.CutOff = StateStale, true
			res.Err = fmt.Sprintf("no answer to health.liveness within %s (cut off: every other target had been judged; the probe timeout is %s)",
				time.Duration(spec.cut.after.Load()).Round(time.Millisecond), p.opts.StaleTimeout)
		case strings.HasPrefix(cr.Err, "timeout") && (errors.Is(context.Cause(pctx), errProbeDeadline) || !time.Now().Before(deadline)):
			// Its own deadline passed with no answer: only that is stale.
			// (On a loaded machine the call may see the deadline pass
			// before the context's timer has fired.)
			if time.Since(deadline) > p.opts.StaleTimeout/8 {
				p.noteSlow() // this process noticed the deadline late
			}
			res.State = StateStale
			res.Err = fmt.Sprintf("no answer to health.liveness within %s", p.opts.StaleTimeout)
		default:
			res.State, res.Err = StateError, cr.Err
		}
		return res
	}
	if !spec.Full {
		return res
	}
	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		r, cr, _ := call(capability.MethodIdentityGet)
		method := capability.MethodIdentityGet
		if !cr.OK && cr.Err == "" {
			r, cr, _ = call(capability.MethodIdentity)
			method = capability.MethodIdentity
		}
		if cr.OK {
			if id, err := capability.ParseIdentity(r.Result); err == nil {
				id.Method = method
				mu.Lock()
				res.Identity = id
				mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		method := "capabilities.list"
		r, cr, _ := call(method)
		if !cr.OK && cr.Err == "" {
			method = "capability.list"
			r, cr, _ = call(method)
		}
		if cr.OK {
			c, err := capability.Parse(r.Result)
			mu.Lock()
			if err == nil {
				res.Capabilities = c
				res.CapsMethod = method
				res.CapsKeys = topKeys(r.Result)
				if c.TransportSecurity.RequiresBTSP() {
					res.BTSPRequired = true
				}
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		call("health.check")
	}()
	go func() {
		defer wg.Done()
		r, cr, _ := call("health.readiness")
		if cr.OK {
			h := capability.ParseReadiness(r.Result)
			mu.Lock()
			res.Readiness = &h
			mu.Unlock()
		}
	}()
	wg.Wait()
	return res
}

// minBusyHold is the least time a probe stays busy while it waits for its
// first answer.
const minBusyHold = 20 * time.Millisecond

// busyHold is how long a probe keeps its busy place while it waits:
// twice the recent time to a first answer, from minBusyHold to a quarter
// of the stale timeout. When this process is slow to read answers (a
// loaded machine), answers take longer, probes stay busy longer and fewer
// start at once, so that no answering target waits for its turn to be
// read past its own deadline.
func (p *Prober) busyHold() time.Duration {
	most := p.opts.StaleTimeout / 4
	avg := p.answerNS.Load()
	if avg == 0 {
		return most // nothing measured yet: be slow to let more in
	}
	return min(max(2*time.Duration(avg), minBusyHold), most)
}

// noteSlow records that this process has just shown it is slow.
func (p *Prober) noteSlow() { p.slowAt.Store(time.Now().UnixNano()) }

// doubtful reports whether a probe's timeout (a stale verdict, or a call
// that timed out) may be this process's own fault: it showed it was slow
// (an answer or a connect that took long, a deadline noticed late) after
// the probe started. Asked once the other probes are done, it sees the
// slow answers that a jam noted only after the verdict.
func (p *Prober) doubtful(r Probe) bool {
	return p.slowAt.Load() >= r.At.UnixNano()
}

// timedOut reports whether one of the probe's calls got no answer in time.
func (r Probe) timedOut() bool {
	for _, c := range r.Calls {
		if strings.HasPrefix(c.Err, "timeout") {
			return true
		}
	}
	return false
}

// noteAnswer adds one first-answer time to the moving average: a slower
// answer weighs 1/2, a faster one 1/8, so that the hold grows at once when
// this process falls behind and shrinks only gradually.
func (p *Prober) noteAnswer(d time.Duration) {
	if d > p.opts.StaleTimeout/4 {
		p.noteSlow()
	}
	for {
		old := p.answerNS.Load()
		next := int64(d)
		switch {
		case old == 0:
		case next > old:
			next = old + (next-old)/2
		default:
			next = old + (next-old)/8
		}
		if p.answerNS.CompareAndSwap(old, next) {
			return
		}
	}
}

// errProbeDeadline is the cause of a probe's own deadline passing (as
// opposed to its caller's context ending).
var errProbeDeadline = errors.New("the probe's own deadline passed")

// notReached is the result of a probe that never started: the caller's ctx
// ended while it waited for a free place. Nothing was learned.
func notReached(ctx context.Context, res Probe) Probe {
	res.State, res.Incomplete = StateUnknown, true
	res.Err = "not probed yet: " + context.Cause(ctx).Error()
	return res
}

// settle keeps a probe that the caller's ctx cut short (before the probe's
// own deadline) from judging the target: a timeout, a cancelled dial or a
// closed call then says nothing about the peer, so the state is unknown
// and the probe is marked Incomplete. A verdict the peer itself gave (it
// answered, or demanded BTSP) stands. A connect slower than half
// its timeout is noted as a sign that this process is slow.
func (p *Prober) settle(parent, ctx context.Context, res Probe, spec ProbeSpec) Probe {
	if res.Connect > connectTimeoutFor(spec.Endpoint, p.opts)/2 {
		p.noteSlow()
	}
	if parent.Err() == nil || errors.Is(context.Cause(ctx), errProbeDeadline) {
		return res
	}
	res.Incomplete = true
	switch res.State {
	case StateLive, StateLocked, StateUnprobed:
		return res
	}
	res.State = StateUnknown
	res.Err = "probe cut short: " + context.Cause(parent).Error()
	return res
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// classifyDialErr tells dead (nothing there) from stale (a listener that
// does not accept in time).
func classifyDialErr(err error) State {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOTSOCK),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return StateDead
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return StateError
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.EAGAIN) {
		return StateStale
	}
	return StateDead
}

// callWatching sends method and waits for its answer, giving up early when
// the peer sends something that is not JSON-RPC (garbage is described in
// the third result) or closes the connection. err is the call's error.
func callWatching(ctx context.Context, c *ipc.Conn, method, pool string) (resp *ipc.Response, cr CallResult, garbage string, err error) {
	type out struct {
		resp *ipc.Response
		err  error
	}
	ch := make(chan out, 1)
	start := time.Now()
	go func() {
		r, err := c.Send(ctx, ipc.Request{Method: method, Params: json.RawMessage("{}"), Pool: pool})
		ch <- out{r, err}
	}()
	finish := func(o out) (*ipc.Response, CallResult, string, error) {
		cr := CallResult{Latency: time.Since(start)}
		if o.resp != nil && o.resp.Error != nil {
			cr.Code, cr.Message = o.resp.Error.Code, human.Clip(o.resp.Error.Message, 256)
			return o.resp, cr, "", o.err
		}
		if o.err != nil {
			cr.Err = describeCallErr(o.err)
			return o.resp, cr, "", o.err
		}
		cr.OK = true
		return o.resp, cr, "", nil
	}
	incoming := c.Incoming()
	for {
		select {
		case o := <-ch:
			return finish(o)
		case m, ok := <-incoming:
			if !ok {
				incoming = nil
				continue
			}
			if m.Kind == ipc.KindInvalid {
				// The answer is not JSON-RPC: do not wait for the deadline.
				// The call's goroutine ends when the Conn is closed.
				return nil, CallResult{Err: "garbage answer", Latency: time.Since(start)},
					"answered with something that is not JSON-RPC: " + human.Clip(string(m.Raw), 60), errGarbage
			}
		}
	}
}

var errGarbage = errors.New("garbage answer")

func describeCallErr(err error) string {
	var te *ipc.TimeoutError
	if errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded) {
		return "timeout: " + err.Error()
	}
	var ce *ipc.ClosedError
	if errors.As(err, &ce) {
		return "closed: " + err.Error()
	}
	return err.Error()
}

// wireOf tells a JSON-RPC answer from a lean one (no "jsonrpc" member).
func wireOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if bytes.Contains(raw, []byte(`"jsonrpc"`)) {
		return "jsonrpc"
	}
	return "lean"
}

// topKeys returns the top-level keys of a JSON object (nil otherwise).
func topKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		if len(out) < 256 {
			out = append(out, human.Clip(k, 64))
		}
	}
	sort.Strings(out)
	return out
}
