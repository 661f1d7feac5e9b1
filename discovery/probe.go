package discovery

// The Prober: its options, the dead-endpoint cache, and one probe from
// connect to verdict (liveness, then identity, capabilities and health when
// Full).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
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

// ProbeSpec says what to probe and how.
type ProbeSpec struct {
	Endpoint ipc.Endpoint
	// Wire is "lean" to write the lean wire, WireHTTP to ask for the
	// event stream's headers (the biomeOS API); anything else writes
	// JSON-RPC.
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
	// key, when set, is EndpointKey(Endpoint, ""), as the sweep that
	// planned the probe computed it (the target's ID): the dead-endpoint
	// cache's key, not resolved again for every probe.
	key string
}

// Prober probes targets: connect within ConnectTimeout, health.liveness
// within StaleTimeout, then identity.get (falling back to identity) and
// capabilities.list (falling back to capability.list). It is safe for
// concurrent use and caches dead endpoints.
type Prober struct {
	opts ProbeOptions
	dial chan struct{}
	open chan struct{}
	// keyed counts the endpoints the prober resolved itself (tests).
	keyed atomic.Int64
	busy  chan struct{}
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

// Probe probes one endpoint. It returns within ConnectTimeout plus
// StaleTimeout (plus any wait for a free slot), or when ctx ends.
func (p *Prober) Probe(ctx context.Context, spec ProbeSpec) Probe {
	key := spec.key
	if key == "" {
		p.keyed.Add(1)
		key = EndpointKey(spec.Endpoint, "")
	}
	stamp := stampOf(spec.Endpoint)
	p.mu.Lock()
	if d, ok := p.dead[key]; ok {
		if time.Now().Before(d.until) && d.stamp == stamp {
			p.mu.Unlock()
			r := d.probe
			r.Cached, r.stamp = true, stamp
			return r
		}
		delete(p.dead, key)
	}
	p.mu.Unlock()

	res := p.probe(ctx, spec)
	res.stamp = stamp
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
	if spec.Wire == WireHTTP {
		return p.probeHTTP(ctx, ep, res, func() { <-p.dial })
	}
	wire := ipc.WireJSONRPC
	if spec.Wire == "lean" {
		wire = ipc.WireLean
	}
	opts := ipc.Options{Wire: wire, IncomingBuffer: 8, Endpoint: ep.String(), MaxFrame: p.opts.probeMaxFrame(),
		ConnectTimeout: connectTimeoutFor(ep, p.opts), Security: p.opts.Security}
	// A probe reaches a socket whoever serves it, to show it marked with
	// its owner; calls refuse such a socket (ipc.PeerPolicy).
	var ownerMu sync.Mutex
	opts.Peer = ipc.PeerPolicy{Observe: true, Seen: func(id ipc.PeerIdentity) {
		if !id.Foreign {
			return
		}
		ownerMu.Lock()
		res.Owner = &id
		ownerMu.Unlock()
	}}
	// A family-scoped name gets nothing in cleartext, even without FAMILY_ID.
	// One decision serves both: the family the name carries, with the
	// target's family and the user's to split it ("default" and "" add
	// none, so spec.Family and claim below give the same answer; it was
	// asked twice, a lstat, a stat and a matcher each time).
	named := ""
	if !opts.Security.FamilyScoped || opts.Security.TargetFamily == "" {
		named = p.scope.Family(ep, spec.Family, opts.Security.Family)
	}
	opts.Security.FamilyScoped = opts.Security.FamilyScoped || named != ""
	if opts.Security.TargetFamily == "" {
		// Picks the seed: the family the socket's NAME carries, never the
		// user's own for another family, nor for a peer that only says
		// (identity.get, a manifest, a registry) it is of a family.
		claim := spec.Family
		if claim == "default" {
			claim = ""
		}
		opts.Security.TargetFamily = named
		if opts.Security.TargetFamily == "" {
			opts.Security.ClaimedFamily = claim
		}
	}
	seed, _, _ := opts.Security.SeedFor(ep)
	secured := !seed.IsZero() && (opts.Security.FamilyScoped || ipc.FamilyScoped(ep, opts.Security.Family))
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
		var fp *ipc.ForeignPeerError
		if errors.As(err, &fp) {
			// It wants a BTSP handshake, and another local user serves it:
			// no handshake keyed by the seed was begun (marked by Seen).
			res.State, res.BTSPRequired = StateLocked, true
			res.Err = "no BTSP handshake attempted: " + fp.Peer.Why
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
			// Silent far longer than every other target took: not waited
			// for until its own deadline. That is no verdict (only its own
			// deadline passing makes it stale): not answered yet, said so.
			res.State, res.CutOff, res.Incomplete = StateUnknown, true, true
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
