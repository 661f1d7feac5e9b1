package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Options configure a Discoverer. The zero value looks in the standard
// places of the real environment.
type Options struct {
	// Getenv and Environ read the environment (os.Getenv, os.Environ).
	Getenv  func(string) string
	Environ func() []string
	// SocketDirs are --socket-dir values; when given, they replace the
	// standard socket directories.
	SocketDirs []string
	// Family is the preferred family id (--family, else $FAMILY_ID).
	Family string
	// Config is the user's configuration file (nil: none).
	Config *config.Config
	// Probe tunes the prober.
	Probe ProbeOptions
	// ProcRoot is the proc filesystem ("/proc"); NoProc skips it.
	ProcRoot string
	NoProc   bool
	// Sources, when non-nil, replaces the default local sources (tests).
	// Registries found among their targets are still asked.
	Sources []Source
	// Extra sources are added to the default ones (e.g. TARGET arguments).
	Extra []Source
	// NoRegistries skips asking Songbird and the Neural API.
	NoRegistries bool
	// Federation lets what registries name on other nodes and of other
	// families be probed (--federation): discovery.peers' nodes, remote
	// addresses. Without it they are listed unprobed. Either way at most
	// MaxRegistryProbes endpoints that only registries named are probed
	// per sweep.
	Federation bool
	// Confine keeps discovery to one ecosystem's own (the demo's): only
	// SocketDirs (not the runtime directory), what lies in them (manifests,
	// socket-registry.json, lean daemons), the registries found there, and
	// stdio Bus daemons listening in them or started by this process. The
	// environment, the config file's targets and every other bus on the
	// machine are left out.
	Confine bool
}

// SourceError is a problem one source had during a sweep. It does not stop
// the sweep.
type SourceError struct {
	Source string `json:"source"`
	Err    string `json:"error"`
}

// Snapshot is the result of one sweep.
type Snapshot struct {
	Targets []*Target     `json:"targets"`
	Errors  []SourceError `json:"errors,omitempty"`
	// Dirs are the socket directories that were read.
	Dirs    []string      `json:"socket_dirs"`
	Started time.Time     `json:"started"`
	Took    time.Duration `json:"took"`
}

// Find returns the targets that have s as a name, alias, ID, address or path.
func (s *Snapshot) Find(name string) []*Target {
	var out []*Target
	for _, t := range s.Targets {
		if t.HasName(name) {
			out = append(out, t)
		}
	}
	return out
}

// Discoverer runs the sources, merges what they find into targets and
// probes them. One Discoverer remembers the last sweep, so that known live
// targets are re-probed cheaply (health.liveness only) and, in watch mode,
// stale and dead ones with backoff. It is safe for concurrent use; sweeps
// are serialised.
type Discoverer struct {
	opts    Options
	prober  *Prober
	sweepMu sync.Mutex

	mu    sync.Mutex
	prev  map[string]*Target
	retry map[string]retryState
	// asked holds when each target last answered health.liveness (a probe
	// of its own that found it live): what a knock's HealthEvery counts
	// from. Not its probe's time: a sweep that learns nothing new of a
	// target keeps its earlier probe (and that probe's time).
	asked map[string]time.Time
	// audits counts the targets audited for their level (tests).
	audits atomic.Int64

	// regCache keeps each registry's last answer (by source and label), so
	// that one slow or failed answer does not make its targets flap away.
	// Owned by sweep (under sweepMu).
	regCache map[string]regAnswer
}

type regAnswer struct {
	found []Found
	fails int
}

// maxRegistryMisses is how many sweeps in a row a registry may fail before
// the targets only it knew are dropped.
const maxRegistryMisses = 3

// runRegistries asks the registries; one that fails to answer at all
// stands on its last answer for up to maxRegistryMisses sweeps.
func (d *Discoverer) runRegistries(ctx context.Context, srcs []Source, addErr func(string, error)) []Found {
	type res struct {
		key   string
		found []Found
		err   error
	}
	out := make([]res, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Add(1)
		go func(i int, s Source) {
			defer wg.Done()
			key := s.Name()
			switch r := s.(type) {
			case *SongbirdSource:
				key += " " + r.Endpoint.String()
			case *NeuralSource:
				key += " " + r.Endpoint.String()
			}
			fs, err := safeDiscover(ctx, s)
			out[i] = res{key, fs, err}
		}(i, s)
	}
	wg.Wait()
	if d.regCache == nil {
		d.regCache = map[string]regAnswer{}
	}
	var all []Found
	for _, r := range out {
		prev, had := d.regCache[r.key]
		if r.err != nil && len(r.found) == 0 && had && prev.fails < maxRegistryMisses {
			prev.fails++
			d.regCache[r.key] = prev
			addErr(r.key, fmt.Errorf("%w (keeping its last answer)", r.err))
			all = append(all, prev.found...)
			continue
		}
		addErr(r.key, r.err)
		d.regCache[r.key] = regAnswer{found: r.found}
		all = append(all, r.found...)
	}
	return all
}

type retryState struct {
	next time.Time
	wait backoff.Backoff
}

// New returns a Discoverer.
func New(opts Options) *Discoverer {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ
	}
	if opts.Family == "" {
		opts.Family = Family(opts.Getenv)
		if opts.Family == "" && opts.Config != nil {
			opts.Family = opts.Config.Discovery.Family
		}
	}
	if opts.Config != nil && opts.Probe.StaleTimeout == 0 {
		opts.Probe.StaleTimeout = time.Duration(opts.Config.Discovery.StaleTimeout)
	}
	if opts.Config != nil && opts.Config.Discovery.NoProc {
		opts.NoProc = true
	}
	return &Discoverer{opts: opts, prober: NewProber(opts.Probe), prev: map[string]*Target{}, retry: map[string]retryState{}, asked: map[string]time.Time{}}
}

// Prober returns the prober the Discoverer uses.
func (d *Discoverer) Prober() *Prober { return d.prober }

// Dirs returns the socket directories that exist now.
func (d *Discoverer) Dirs() []string {
	explicit := d.opts.SocketDirs
	var dirs []string
	if len(explicit) > 0 {
		dirs = SocketDirs(d.opts.Getenv, explicit)
	} else {
		dirs = SocketDirs(d.opts.Getenv, nil)
	}
	if d.opts.Config != nil && len(explicit) == 0 {
		dirs = append(dirs, existing(d.opts.Config.Discovery.SocketDirs)...)
	}
	return dedupe(dirs)
}

// WatchPaths returns the directories whose changes should trigger a sweep:
// the socket directories, the manifests directory and the runtime directory
// (for lean daemons), those that exist.
func (d *Discoverer) WatchPaths() []string {
	dirs := d.Dirs()
	var more []string
	for _, dir := range dirs {
		more = append(more, filepath.Join(dir, "manifests"))
	}
	if rt := paths.RuntimeDir(d.opts.Getenv); rt != "" && !d.opts.Confine {
		more = append(more, filepath.Join(rt, "ecoPrimals"), filepath.Join(rt, "ecoPrimals", "manifests"), rt)
	}
	return dedupe(append(dirs, existing(more)...))
}

// DefaultSources returns the local sources a sweep runs: socket
// directories, env, manifests, socket-registry.json, lean daemons, stdio
// Bus daemons in the process table and the config file.
func (d *Discoverer) DefaultSources() []Source {
	if d.opts.Sources != nil {
		return append(append([]Source(nil), d.opts.Sources...), d.opts.Extra...)
	}
	var known []string
	if d.opts.Config != nil {
		known = d.opts.Config.Discovery.KnownPrimals
	}
	dirs := d.Dirs()
	m := NewFamilyMatcher(known, d.opts.Family)
	if d.opts.Confine {
		return append(d.confinedSources(dirs, m), d.opts.Extra...)
	}
	sockDirs := dirs
	if rt := paths.RuntimeDir(d.opts.Getenv); rt != "" {
		// Songbird's other home: $XDG_RUNTIME_DIR/ecoPrimals/discovery(-<family>).sock.
		sockDirs = dedupe(append(append([]string(nil), dirs...), existing([]string{filepath.Join(rt, "ecoPrimals")})...))
	}
	srcs := []Source{
		&SocketDirSource{Dirs: sockDirs, Matcher: m},
		&EnvSource{Environ: d.opts.Environ, Matcher: m},
	}
	rt := paths.RuntimeDir(d.opts.Getenv)
	var regFiles, manDirs, leanRoots []string
	if rt != "" {
		manDirs = append(manDirs, filepath.Join(rt, "ecoPrimals", "manifests"))
		regFiles = append(regFiles, filepath.Join(rt, "biomeos", "socket-registry.json"))
		leanRoots = append(leanRoots, rt)
	}
	for _, dir := range dirs {
		regFiles = append(regFiles, filepath.Join(dir, "socket-registry.json"))
		manDirs = append(manDirs, filepath.Join(dir, "manifests"))
		leanRoots = append(leanRoots, dir)
	}
	srcs = append(srcs, &ManifestSource{Dirs: manDirs}, &LeanSource{Roots: leanRoots}, &RegistryFileSource{Paths: regFiles})
	if !d.opts.NoProc {
		srcs = append(srcs, &ProcSource{Root: d.opts.ProcRoot})
	}
	if d.opts.Config != nil {
		srcs = append(srcs, &ConfigSource{Config: d.opts.Config})
	}
	return append(srcs, d.opts.Extra...)
}

// confinedSources are the sources of a confined discoverer (Options.Confine):
// the socket directories and what lies in them only.
func (d *Discoverer) confinedSources(dirs []string, m *FamilyMatcher) []Source {
	var regFiles, manDirs []string
	for _, dir := range dirs {
		regFiles = append(regFiles, filepath.Join(dir, "socket-registry.json"))
		manDirs = append(manDirs, filepath.Join(dir, "manifests"))
	}
	srcs := []Source{&SocketDirSource{Dirs: dirs, Matcher: m}, &ManifestSource{Dirs: manDirs},
		&LeanSource{Roots: dirs}, &RegistryFileSource{Paths: regFiles}}
	if !d.opts.NoProc {
		srcs = append(srcs, &ProcSource{Root: d.opts.ProcRoot, Within: dirs, Parent: os.Getpid()})
	}
	return srcs
}

// Sweep looks everywhere once and probes every target. onProbe, when not
// nil, is called (from several goroutines, one target at a time) as each
// probe finishes, with a snapshot of that target; the returned Snapshot
// is complete. Every target is probed in full, each within its own
// connect and stale time, however many wait: hung sockets hold a place
// each (MaxOpen of them at once) for the stale timeout, so a sweep takes
// about (hung sockets / MaxOpen + 1) stale timeouts, plus the time the
// answering ones take. Only ctx ending cuts it short; targets not probed
// then are unknown ("not probed yet"), or keep what the last sweep of
// this Discoverer judged.
func (d *Discoverer) Sweep(ctx context.Context, onProbe func(*Target)) (*Snapshot, error) {
	return d.sweep(ctx, false, false, sweepHooks{onProbe: onProbe})
}

// sweepHooks are told of a sweep's progress as it goes. Each gets
// snapshots of its own (clones), never the sweep's working targets.
type sweepHooks struct {
	// onFound is called with the targets the sources (and then the
	// registries) found, before any of them is probed: the merged targets
	// as they stand, each with its last sweep's probe or none.
	onFound func([]*Target)
	// onProbe is called (from several goroutines, one target at a time)
	// as each probe finishes.
	onProbe func(*Target)
	// knockWithin, when positive, lets the sweep only knock on (connect
	// to, and hang up) a live Unix-socket target asked health.liveness
	// less than this long ago whose socket file is unchanged (knock).
	knockWithin time.Duration
}

// SweepUntilJudged is Sweep for a one-shot listing that prints as soon as
// every target that answers is judged: once every source has been read
// and every other probe has ended, a target that accepted a connection but
// has not answered health.liveness for far longer than the others took
// (eight times the slowest judged probe, at least 300 ms, at most the
// stale timeout) is not waited for until its own deadline. It is left
// unjudged: state unknown, Probe.CutOff and Incomplete set, Err saying how
// long it was waited for (never stale: that takes its own deadline). A
// caller that needs every verdict (a gate) uses Sweep.
func (d *Discoverer) SweepUntilJudged(ctx context.Context, onProbe func(*Target)) (*Snapshot, error) {
	return d.sweep(ctx, false, true, sweepHooks{onProbe: onProbe})
}

// Patience bounds how long SweepUntilJudged waits for a silent target
// once every other target has been judged: PatienceFactor times the
// slowest judged probe, at least MinPatience (and at most the stale
// timeout).
const (
	MinPatience    = 300 * time.Millisecond
	PatienceFactor = 8
)

func (d *Discoverer) sweep(ctx context.Context, backoff, untilJudged bool, hooks sweepHooks) (*Snapshot, error) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	start := time.Now()
	stale := d.prober.opts.StaleTimeout
	// Reading the sources and asking the registries fits in the stale
	// timeout plus a tenth. The probes have no such budget: one that waited
	// for its turn still gets its own whole deadline (a budget for the
	// sweep would turn the targets queued behind hung sockets into
	// failures); they end when ctx does.
	sctx, cancel := context.WithDeadline(ctx, start.Add(stale+stale/10))
	defer cancel()

	snap := &Snapshot{Started: start, Dirs: d.Dirs()}
	var errMu sync.Mutex
	addErr := func(src string, err error) {
		if err == nil {
			return
		}
		errMu.Lock()
		snap.Errors = append(snap.Errors, SourceError{Source: src, Err: err.Error()})
		errMu.Unlock()
	}
	found := runSources(sctx, d.DefaultSources(), addErr)

	p := &probeRun{d: d, ctx: ctx, backoff: backoff, onProbe: hooks.onProbe, knockWithin: hooks.knockWithin, probes: map[string]*Probe{}, published: map[string]*Target{}, answered: map[string]time.Time{}}
	if untilJudged {
		p.cut = newCutSignal()
	}
	targets := merge(found)
	d.found(targets, hooks.onFound)
	p.start(targets)

	if !d.opts.NoRegistries {
		regSrcs := registrySources(targets, stale, d.opts.Probe.Security, d.opts.Federation)
		if len(regSrcs) > 0 {
			more := d.runRegistries(sctx, regSrcs, addErr)
			if len(more) > 0 {
				found = append(found, more...)
				targets = merge(found)
				addErr(SrcReach, d.bound(targets)) // what registries named: own node and family, and not too many
				d.found(targets, hooks.onFound)    // shown at once, as probing
				p.start(targets)                   // probes only the new ones
			}
		}
	}
	if p.cut != nil {
		// Every probe has started: watch for the moment when only silent
		// targets are left.
		stop := make(chan struct{})
		defer close(stop)
		go p.patience(ctx, stop, start, stale)
	}
	p.wait()

	d.mu.Lock()
	defer d.mu.Unlock()
	next := make(map[string]*Target, len(targets))
	for i, t := range targets {
		if pr := p.probes[t.ID]; pr != nil {
			t.Probe = pr
		}
		// One copy of each target between sweeps: the one already handed
		// out when this sweep learnt nothing new of it, else the one this
		// sweep's onProbe was given when it is the same. (A watcher keeps
		// what it last sent, and so does its consumer: 2,000 targets
		// re-probed every few seconds were held twice, each with its own
		// probe.) The level is audited only when something but times
		// changed: Audit reads no time, so the same target but for times
		// has the level it had (an audit of every target at every sweep
		// was a tenth of an idle TUI's samples).
		d.finishFields(t)
		old := d.prev[t.ID]
		if old != nil {
			t.Level = old.Level
		}
		if old != nil && sameButTimes(old, t) {
			t = old
		} else {
			d.audit(t)
			if pub := p.published[t.ID]; pub != nil && reflect.DeepEqual(pub, t) {
				t = pub
			}
		}
		targets[i] = t
		next[t.ID] = t
	}
	d.prev = next
	d.noteAnswers(p.answered)
	sort.SliceStable(targets, func(i, j int) bool {
		if targets[i].Name != targets[j].Name {
			return targets[i].Name < targets[j].Name
		}
		return targets[i].ID < targets[j].ID
	})
	snap.Targets = targets
	sort.Slice(snap.Errors, func(i, j int) bool { return snap.Errors[i].Source < snap.Errors[j].Source })
	snap.Took = time.Since(start)
	return snap, ctx.Err()
}

// found hands onFound (when set) a snapshot of targets before they are
// probed: each as the last sweep judged it, or not probed yet.
func (d *Discoverer) found(targets []*Target, onFound func([]*Target)) {
	if onFound == nil {
		return
	}
	out := make([]*Target, len(targets))
	d.mu.Lock()
	for i, t := range targets {
		tc := t.clone()
		if prev := d.prev[t.ID]; prev != nil {
			tc.Probe = prev.Probe
		}
		d.finishTarget(tc)
		out[i] = tc
	}
	d.mu.Unlock()
	onFound(out)
}

// runSources runs every source at once and gathers what they find.
func runSources(ctx context.Context, srcs []Source, addErr func(string, error)) []Found {
	var mu sync.Mutex
	var all []Found
	var wg sync.WaitGroup
	for _, s := range srcs {
		wg.Add(1)
		go func(s Source) {
			defer wg.Done()
			fs, err := safeDiscover(ctx, s)
			addErr(s.Name(), err)
			mu.Lock()
			all = append(all, fs...)
			mu.Unlock()
		}(s)
	}
	wg.Wait()
	return all
}

// safeDiscover runs one source, turning a panic into an error: one broken
// source must not take discovery down.
func safeDiscover(ctx context.Context, s Source) (fs []Found, err error) {
	defer func() {
		if r := recover(); r != nil {
			fs, err = nil, fmt.Errorf("source %s panicked: %v", s.Name(), r)
		}
	}()
	return s.Discover(ctx)
}

// probeRun probes the targets of one sweep, each ID once.
type probeRun struct {
	d       *Discoverer
	ctx     context.Context
	backoff bool
	onProbe func(*Target)
	// knockWithin: see sweepHooks.
	knockWithin time.Duration

	mu     sync.Mutex
	probes map[string]*Probe
	// published is what onProbe was given of each target (when set).
	published map[string]*Target
	// answered: when each target this run asked found live answered.
	answered map[string]time.Time
	stale    []probeJob // first probes that found their target stale
	queue    []probeJob // probes asked for, no worker has taken yet
	workers  int        // goroutines taking them (at most MaxOpen)
	wg       sync.WaitGroup

	// cut, for SweepUntilJudged, ends the waits of silent targets once
	// every other probe has ended.
	cut      *cutSignal
	pending  atomic.Int64 // first probes running
	lastDone atomic.Int64 // UnixNano when a probe last ended
	slowest  atomic.Int64 // the longest judged probe (a verdict before its deadline)
}

func (p *probeRun) start(targets []*Target) {
	for _, t := range targets {
		p.mu.Lock()
		_, done := p.probes[t.ID]
		if !done {
			p.probes[t.ID] = nil
		}
		p.mu.Unlock()
		if done || t.NoProbe || t.Endpoint.Transport == "" {
			continue
		}
		spec, carry, skip := p.d.plan(t, p.backoff)
		if !skip && carry != nil && knock(spec, carry, p.d.askedAt(t.ID, carry), p.knockWithin) {
			// Still there, and asked recently: it keeps its probe.
			skip = true
		}
		if skip {
			p.mu.Lock()
			p.probes[t.ID] = carry
			p.mu.Unlock()
			continue
		}
		p.run(probeJob{t: t, spec: spec, carry: carry})
	}
}

// probeJob is one target's probe in a sweep.
type probeJob struct {
	t     *Target
	spec  ProbeSpec
	carry *Probe // the last sweep's probe, if any
	stale Probe  // a verdict with a timeout, while wait decides whether to believe it
	// second: a second look at a stale verdict in doubt.
	second bool
	// first: a first probe this sweep, watched for the cut; queued: when
	// it was asked for.
	first  bool
	queued time.Time
}

// run probes j's target: queued, and taken by one of at most MaxOpen
// workers (the prober's places), not a goroutine a target waiting for a
// place (2,000 of them, 16 MB of stacks, at every sweep of a crowd).
func (p *probeRun) run(j probeJob) {
	p.wg.Add(1)
	j.first = j.spec.cut == nil && !j.second
	if j.first && p.cut != nil {
		j.spec.cut = p.cut
		p.pending.Add(1)
	}
	j.queued = time.Now()
	p.mu.Lock()
	p.queue = append(p.queue, j)
	spawn := p.workers < p.d.prober.opts.MaxOpen
	if spawn {
		p.workers++
	}
	p.mu.Unlock()
	if spawn {
		go p.work()
	}
}

// work probes queued targets, in order, until none is left.
func (p *probeRun) work() {
	for {
		p.mu.Lock()
		if len(p.queue) == 0 {
			p.queue = nil // the next ones start a fresh array
			p.workers--
			p.mu.Unlock()
			return
		}
		j := p.queue[0]
		p.queue[0] = probeJob{}
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.probeOne(j)
	}
}

// probeOne probes j's target and records the verdict (or keeps it for
// wait, when it is in doubt).
func (p *probeRun) probeOne(j probeJob) {
	defer p.wg.Done()
	first, began := j.first, j.queued
	r := p.d.prober.Probe(p.ctx, j.spec)
	if first && p.cut != nil {
		if !r.CutOff && r.State != StateStale && !r.Incomplete {
			took := int64(time.Since(began))
			for old := p.slowest.Load(); took > old && !p.slowest.CompareAndSwap(old, took); old = p.slowest.Load() {
			}
		}
		p.lastDone.Store(time.Now().UnixNano())
		p.pending.Add(-1)
	}
	if r.State == StateStale || r.State == StateLive && r.Full && r.timedOut() {
		// Decided in wait, once the others are done.
		j.stale = r
		p.mu.Lock()
		p.stale = append(p.stale, j)
		p.mu.Unlock()
		return
	}
	p.publish(j, r)
}

// patience fires p.cut when the probes still running are the silent
// ones: none has ended for PatienceFactor times the slowest judged probe
// (at least MinPatience, at most stale) since the last one ended (or since
// the sweep began). It returns when stop is closed or ctx ends.
func (p *probeRun) patience(ctx context.Context, stop <-chan struct{}, began time.Time, stale time.Duration) {
	tick := time.NewTicker(MinPatience / 10)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if p.pending.Load() == 0 {
			continue
		}
		wait := min(max(PatienceFactor*time.Duration(p.slowest.Load()), MinPatience), stale)
		last := began
		if n := p.lastDone.Load(); n != 0 {
			last = time.Unix(0, n)
		}
		if time.Since(last) >= wait {
			p.cut.fire(wait)
			return
		}
	}
}

// publish records the probe of a target (and tells onProbe).
func (p *probeRun) publish(j probeJob, r Probe) {
	fresh := r.State == StateLive && !r.Incomplete
	switch {
	case r.Incomplete && j.carry != nil:
		// This sweep did not get to judge it: it keeps its last judged
		// health until a probe of its own ends.
		r = *j.carry
	case !j.spec.Full && j.carry != nil:
		r = carryOver(r, j.carry)
	}
	var tc *Target
	if p.onProbe != nil {
		tc = j.t.clone()
		tc.Probe = &r
		p.d.finishTarget(tc)
	}
	p.mu.Lock()
	p.probes[j.t.ID] = &r
	if fresh {
		p.answered[j.t.ID] = r.At
	}
	if tc != nil {
		p.published[j.t.ID] = tc
	}
	p.mu.Unlock()
	if tc != nil {
		p.onProbe(tc)
	}
}

// maxSecondLooks is how many times a sweep probes again a target whose
// stale verdict is in doubt.
const maxSecondLooks = 2

// wait waits for every probe. A timeout reached while this process was
// itself slow (Prober.doubtful) may be this process not reading an answer
// in time: a stale verdict, or a live target's identity or capabilities
// call that timed out (it would be judged below its level). Such targets
// are probed again, together, once the others are done (up to
// maxSecondLooks times). A stale verdict still in doubt then is not
// judged (unknown, Incomplete: it keeps its last judged health).
func (p *probeRun) wait() {
	p.wg.Wait()
	for round := 0; ; round++ {
		p.mu.Lock()
		stale := p.stale
		p.stale = nil
		p.mu.Unlock()
		var again []probeJob
		for _, j := range stale {
			r := j.stale
			if p.d.prober.doubtful(r) {
				if round < maxSecondLooks && p.ctx.Err() == nil {
					again = append(again, j)
					continue
				}
				if r.State == StateStale {
					r.State, r.Incomplete = StateUnknown, true
					r.Err = "not judged: " + r.Err + ", but this process was itself too slow to be sure (a loaded machine)"
				}
			}
			p.publish(j, r)
		}
		if len(again) == 0 {
			return
		}
		for _, j := range again {
			// A second look gets its whole deadline.
			j.spec.cut, j.second = nil, true
			p.run(j)
		}
		p.wg.Wait()
	}
}

// plan decides how to probe t given the last sweep: a full probe for a new
// or changed target, liveness only for a known live one; in backoff mode a
// stale or dead target is skipped until its retry time.
func (d *Discoverer) plan(t *Target, backoff bool) (spec ProbeSpec, carry *Probe, skip bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	spec = ProbeSpec{Endpoint: t.Endpoint, Wire: t.WireHint, Pool: t.Pool, Full: true, Family: t.Family}
	if t.Pool == "" && t.ID != "" && !strings.HasPrefix(t.ID, "name:") {
		spec.key = t.ID // merge's EndpointKey (with no pool)
	}
	prev := d.prev[t.ID]
	if prev == nil || prev.Probe == nil {
		return spec, nil, false
	}
	carry = prev.Probe
	spec.wasStale = carry.State == StateStale
	if backoff && carry.State != StateLive {
		r := d.retry[t.ID]
		if time.Now().Before(r.next) {
			return spec, carry, true
		}
	}
	if carry.State == StateLive && carry.Full && (carry.Capabilities != nil || carry.Identity != nil) {
		spec.Full = false
	}
	return spec, carry, false
}

// askedAt is when the target id last answered health.liveness (carry's
// time when this Discoverer has not noted it).
func (d *Discoverer) askedAt(id string, carry *Probe) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if at, ok := d.asked[id]; ok {
		return at
	}
	return carry.At
}

// noteAnswers records the answers of a sweep and forgets the targets gone
// (d.mu held, d.prev the sweep's targets).
func (d *Discoverer) noteAnswers(answered map[string]time.Time) {
	for id, at := range answered {
		d.asked[id] = at
	}
	for id := range d.asked {
		if _, ok := d.prev[id]; !ok {
			delete(d.asked, id)
		}
	}
}

// carryOver keeps what a full probe learned when a later liveness-only
// probe finds the target still live.
func carryOver(r Probe, prev *Probe) Probe {
	if r.State != StateLive {
		return r
	}
	r.Full = prev.Full
	r.Identity, r.Capabilities, r.CapsMethod, r.CapsKeys = prev.Identity, prev.Capabilities, prev.CapsMethod, prev.CapsKeys
	r.Readiness = prev.Readiness
	if r.Wire == "" {
		r.Wire = prev.Wire
	}
	r.BTSPRequired = r.BTSPRequired || prev.BTSPRequired
	calls := map[string]CallResult{}
	for k, v := range prev.Calls {
		calls[k] = v
	}
	for k, v := range r.Calls {
		calls[k] = v
	}
	r.Calls = calls
	return r
}

// sameButTimes reports whether b is a as a later sweep saw it, with
// nothing learnt but times: when the probe ran, how long its connect and
// its calls took. (Diff, what watchers are told of, leaves out more.)
func sameButTimes(a, b *Target) bool {
	if a == b {
		return true
	}
	at, bt := *a, *b
	at.Probe, bt.Probe = nil, nil
	if !reflect.DeepEqual(at, bt) {
		return false
	}
	if a.Probe == nil || b.Probe == nil {
		return a.Probe == b.Probe
	}
	ap, bp := *a.Probe, *b.Probe
	if len(ap.Calls) != len(bp.Calls) {
		return false
	}
	for k, ac := range ap.Calls {
		bc, ok := bp.Calls[k]
		ac.Latency, bc.Latency = 0, 0
		if !ok || ac != bc {
			return false
		}
	}
	ap.At, bp.At = time.Time{}, time.Time{}
	ap.Connect, bp.Connect, ap.Latency, bp.Latency = 0, 0, 0, 0
	ap.Calls, bp.Calls = nil, nil
	return reflect.DeepEqual(ap, bp)
}

// finishTarget applies what the probe learned: the identity's name and
// family, and the compliance level; and schedules retries of targets that
// did not answer. d.mu must not be needed by callers other than sweep.
func (d *Discoverer) finishTarget(t *Target) {
	d.finishFields(t)
	d.audit(t)
}

// audit sets t's compliance level.
func (d *Discoverer) audit(t *Target) {
	if t.Probe == nil {
		t.Level = 0
		return
	}
	d.audits.Add(1)
	t.Level = Audit(t, AuditOptions{}).Level
}

// finishFields is finishTarget but for the level.
func (d *Discoverer) finishFields(t *Target) {
	if t.Probe == nil {
		return
	}
	if o := t.Probe.Owner; o != nil {
		if w := OwnerWarning(o); !contains(t.Warnings, w) {
			t.Warnings = append(t.Warnings, w)
		}
	}
	splitByIdentity(t) // beta-west-tower-1 whose identity says "beta" (family.go)
	if id := t.Probe.Identity; id != nil {
		if n := cleanName(id.Primal); n != "" && n != t.Name && weakName(t) {
			if !contains(t.Aliases, t.Name) {
				t.Aliases = append(t.Aliases, t.Name)
			}
			t.Name = n
			var as []string
			for _, a := range t.Aliases {
				if a != n {
					as = append(as, a)
				}
			}
			sort.Strings(as)
			t.Aliases = as
		}
		if t.Family == "" && id.FamilyID != "" && id.FamilyID != "default" {
			t.Family = cleanName(id.FamilyID)
		}
	}
}

// weakName reports whether the target's name came from a source that only
// guesses it (env variables, aliases, registry files, process table).
func weakName(t *Target) bool {
	for _, s := range t.Sources {
		if s.Name == t.Name {
			switch s.Source {
			case SrcSocketDir, SrcConfig, SrcSongbird, SrcNeural, SrcManifest:
				return false
			}
		}
	}
	return true
}

// noteRetry updates the retry schedule of a target after a sweep in watch
// mode: live targets are cleared, others back off from base to max.
func (d *Discoverer) noteRetry(t *Target, base, max time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.State() == StateLive || t.State() == StateUnprobed {
		delete(d.retry, t.ID)
		return
	}
	r := d.retry[t.ID]
	if time.Now().Before(r.next) {
		return // skipped this time; keep the schedule
	}
	r.wait.Min, r.wait.Max = base, max
	r.next = time.Now().Add(r.wait.Next())
	d.retry[t.ID] = r
}

// Resolve finds targets by TARGET argument in a snapshot: a name, alias,
// address or path; failing that, an address string is parsed and matched by
// endpoint identity.
func (s *Snapshot) Resolve(arg string) []*Target {
	if ts := s.Find(arg); len(ts) > 0 {
		return ts
	}
	ep, err := ipc.ParseEndpoint(arg)
	if err != nil {
		return nil
	}
	key := EndpointKey(ep, "")
	var out []*Target
	for _, t := range s.Targets {
		if t.ID == key || EndpointKey(t.Endpoint, "") == key {
			out = append(out, t)
		}
	}
	return out
}

// registrySources are the sources that ask the registries among targets
// (Songbird, the Neural API) for what they know.
func registrySources(targets []*Target, timeout time.Duration, sec ipc.Security, federation bool) []Source {
	var out []Source
	for _, t := range targets {
		if t.NoProbe || t.Endpoint.Transport == "" {
			continue
		}
		switch t.Kind {
		case KindRegistry:
			out = append(out, &SongbirdSource{Registry: Registry{Endpoint: t.Endpoint, Timeout: timeout, Security: targetSecurity(sec, t)}, Label: t.Address, Federation: federation})
		case KindNeural:
			out = append(out, &NeuralSource{Endpoint: t.Endpoint, Timeout: timeout, Label: t.Address, Security: targetSecurity(sec, t)})
		}
	}
	return out
}
