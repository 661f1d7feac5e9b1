package discovery

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/ipc"
)

// EventKind says what happened to a target.
type EventKind string

// Event kinds.
const (
	// Added: a target appeared (every target of the first sweep is Added).
	Added EventKind = "added"
	// Changed: something about a known target changed (state, names,
	// sources, level, identity...). The event carries the new snapshot.
	Changed EventKind = "changed"
	// Removed: no source finds the target any more. The event carries the
	// last snapshot.
	Removed EventKind = "removed"
	// Synced: a sweep finished; Sweep says how it went. Added, Changed and
	// Removed events of that sweep come before it.
	Synced EventKind = "synced"
)

// Event is one change in the discovered picture.
type Event struct {
	Kind EventKind `json:"event"`
	Time time.Time `json:"time"`
	// Target is a snapshot: never modified after it is sent (nil for Synced).
	Target *Target `json:"target,omitempty"`
	// Changes names what changed, for Changed events ("state", "name",
	// "aliases", "sources", "level", "identity", "capabilities", ...).
	Changes []string `json:"changes,omitempty"`
	// Sweep describes the sweep, for Synced events.
	Sweep *SweepInfo `json:"sweep,omitempty"`
}

// SweepInfo summarises one sweep.
type SweepInfo struct {
	// Reason is what started it: "start", "fs", "timer", "registry", "refresh".
	Reason  string        `json:"reason"`
	Targets int           `json:"targets"`
	Live    int           `json:"live"`
	Took    time.Duration `json:"took"`
	Errors  []SourceError `json:"errors,omitempty"`
	// Dropped counts refreshes dropped so far because a sweep was running.
	Dropped uint64 `json:"dropped"`
	// Next is when the next timed sweep is due.
	Next time.Time `json:"next"`
}

// WatchOptions tune Watch. Zero values mean the defaults.
type WatchOptions struct {
	// Interval is the base period of re-probing (5 s). After a sweep that
	// changes nothing it doubles, up to MaxInterval (60 s); any change
	// brings it back to Interval.
	Interval    time.Duration
	MaxInterval time.Duration
	// RetryBase and RetryMax bound the per-target backoff of stale and dead
	// targets (2 s to 60 s): they are not re-probed every sweep.
	RetryBase time.Duration
	RetryMax  time.Duration
	// HealthEvery sets how often a live target is asked health.liveness
	// (30 s; negative: never between sweeps, every sweep asks). Between
	// sweeps the round is asked in slices (every HealthEvery/10, at least
	// 50 ms): each slice asks the live Unix-socket targets whose answer
	// is oldest, at an even rate that asks each one once every 2 ×
	// HealthEvery; a change it finds goes out as a Changed event (no
	// Synced: no sweep ran). A timed, file-system or registry sweep only
	// knocks on a live Unix-socket target whose socket file is unchanged
	// and which answered within 2.5 × HealthEvery: it connects and hangs
	// up, asking nothing, and probes it only when that fails (one that
	// died without removing its socket is refused). So a peer that hangs
	// while its listener still accepts is found stale within about 2 ×
	// HealthEvery of its last answer (plus a slice and the stale
	// timeout), 2.5 × if the slices fell behind (the sweeps then ask it). A sweep the consumer asked
	// for (Refresh) asks every target; the first sweep asks everyone at
	// once. It is what lets 2,000 live targets be
	// watched: asking each one every sweep was most of a TUI's CPU, and
	// asking them all at once every round a burst of half a second.
	HealthEvery time.Duration
	// PollInterval is how often each Songbird registry is polled with
	// ipc.watch (2 s).
	PollInterval time.Duration
	// Debounce gathers bursts of file-system events into one refresh (100 ms).
	Debounce time.Duration
	// Buffer is the event channel's capacity (256). A consumer that falls
	// behind slows the watcher down; nothing is lost.
	Buffer int
	// Refresh, when not nil, asks for a sweep now each time a value is
	// received (a user pressing a refresh key). Like every refresh, it is
	// dropped while a sweep runs. Watch never closes it.
	Refresh <-chan struct{}
	// Progress sends targets while a sweep runs rather than when it ends
	// (on the slowest silent socket's timeout): each one found and not
	// known yet at once, as Added and not probed yet, then each as soon
	// as its probe ends, as Changed when that changed it. Without it
	// (the CLI's ls --watch) a sweep's events all follow its end.
	Progress bool
}

func (o WatchOptions) withDefaults() WatchOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Interval, 5*time.Second)
	def(&o.MaxInterval, 60*time.Second)
	def(&o.RetryBase, 2*time.Second)
	def(&o.RetryMax, 60*time.Second)
	def(&o.PollInterval, 2*time.Second)
	if o.HealthEvery == 0 {
		o.HealthEvery = 30 * time.Second
	}
	def(&o.Debounce, 100*time.Millisecond)
	if o.MaxInterval < o.Interval {
		o.MaxInterval = o.Interval
	}
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	return o
}

// Watch keeps the picture live: it sweeps at once, then again when a
// watched directory changes (fsnotify), when a Songbird registry's ipc.watch
// revision moves, and periodically with backoff. It sends Added, Changed
// and Removed events, then Synced, after each sweep. A refresh asked for
// while a sweep runs is dropped, not queued (and counted in
// SweepInfo.Dropped); since what it signalled may postdate the running
// sweep's reads, one catch-up sweep follows that sweep after Debounce,
// however many were dropped. The channel is closed after ctx ends and every
// goroutine Watch started has exited.
func (d *Discoverer) Watch(ctx context.Context, opts WatchOptions) <-chan Event {
	opts = opts.withDefaults()
	out := make(chan Event, opts.Buffer)
	w := &watcher{d: d, opts: opts, out: out, trig: make(chan string, 1), known: map[string]*Target{}}
	// The directories are watched before the first sweep reads them, so a
	// socket that appears just after that read is never missed.
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		fw = nil // periodic sweeps still run
	}
	w.paths = d.WatchPaths()
	w.pathsGen = 1
	watched := map[string]bool{}
	if fw != nil {
		for _, p := range w.paths {
			if fw.Add(p) == nil {
				watched[p] = true
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); w.sweeper(ctx) }()
	go func() { defer wg.Done(); w.fsLoop(ctx, fw, watched, w.pathsGen) }()
	go func() { defer wg.Done(); w.pollLoop(ctx) }()
	if opts.Refresh != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-opts.Refresh:
					if !ok {
						return
					}
					w.trigger("refresh")
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	return out
}

type watcher struct {
	d    *Discoverer
	opts WatchOptions
	out  chan Event
	trig chan string

	running atomic.Bool
	dropped atomic.Uint64
	missed  atomic.Bool
	missMu  sync.Mutex
	missedR string // the reason of the last refresh dropped while a sweep ran

	knownMu sync.Mutex
	// streamed says a change went out during the sweep running.
	streamed atomic.Bool
	known    map[string]*Target // written by sweeper and its sweep's hooks

	mu         sync.Mutex
	registries []ipc.Endpoint // live registries of the last sweep
	paths      []string       // directories to watch
	pathsGen   int
}

// trigger asks for a sweep; it is dropped when one is running or pending.
func (w *watcher) trigger(reason string) {
	if w.running.Load() {
		w.dropped.Add(1)
		w.missMu.Lock()
		w.missedR = reason
		w.missMu.Unlock()
		w.missed.Store(true)
		return
	}
	select {
	case w.trig <- reason:
	default:
		w.dropped.Add(1)
	}
}

func (w *watcher) sweeper(ctx context.Context) {
	// The period between sweeps doubles while nothing changes.
	pace := backoff.Backoff{Min: w.opts.Interval, Max: w.opts.MaxInterval}
	timer := time.NewTimer(0)
	defer timer.Stop()
	reason := "start"
	catchUp := "" // set when the next timed sweep catches up a dropped refresh
	first := true
	// The liveness round, asked in slices between sweeps (askSlice).
	var slice <-chan time.Time
	credit := 0.0
	var sliced time.Time // when the last slice (or sweep) ended
	if w.opts.HealthEvery > 0 {
		tk := time.NewTicker(roundTick(w.opts.HealthEvery))
		defer tk.Stop()
		slice = tk.C
	}
	for {
		if !first {
			select {
			case <-ctx.Done():
				return
			case reason = <-w.trig:
			case <-timer.C:
				reason = "timer"
				if catchUp != "" {
					reason = catchUp
				}
			case <-slice:
				// (Not the tick's time: a tick waiting while a sweep ran
				// is older than the sweep's end.)
				now := time.Now()
				var changed []*Target
				// The credit follows the time since the last slice, not
				// the ticks: a tick missed while the goroutine was busy
				// is made up (not the time of sweeps: see below).
				changed, credit = w.d.askSlice(ctx, roundPeriod(w.opts.HealthEvery), now.Sub(sliced), credit)
				sliced = time.Now()
				for _, t := range changed {
					w.d.noteRetry(t, w.opts.RetryBase, w.opts.RetryMax)
					w.stream(ctx, t)
				}
				continue
			}
			catchUp = ""
		} else {
			<-timer.C
		}
		w.running.Store(true)
		w.missed.Store(false)
		// With Progress, targets go out as they are judged, not when the
		// sweep ends: found ones first, not probed yet.
		var hooks sweepHooks
		if reason != "refresh" {
			// The slices ask each live target once every 2 ×
			// HealthEvery (roundPeriod); a sweep asks one they have not
			// reached half a HealthEvery later (they fell behind). At 2 ×
			// the sweeps would ask the head of the slices' queue, and the
			// slices ask it again.
			hooks.knockWithin = roundPeriod(w.opts.HealthEvery) + w.opts.HealthEvery/2
		}
		if w.opts.Progress {
			hooks.onFound = func(ts []*Target) {
				for _, t := range ts {
					w.stream(ctx, t)
				}
			}
			hooks.onProbe = func(t *Target) { w.stream(ctx, t) }
		}
		snap, err := w.d.sweep(ctx, !first, false, hooks)
		if err != nil && ctx.Err() != nil {
			return
		}
		changed := w.emit(ctx, snap, first)
		if w.streamed.Swap(false) {
			changed = true
		}
		first = false
		if changed {
			pace.Reset()
		}
		w.running.Store(false)
		wait := pace.Next()
		if w.missed.Load() {
			// A refresh was dropped while this sweep ran: whatever it
			// signalled may have happened after the directories were
			// read, so one catch-up sweep follows soon (at most one).
			wait = w.opts.Debounce
			w.missMu.Lock()
			catchUp = w.missedR
			w.missMu.Unlock()
		}
		next := time.Now().Add(wait)
		live := 0
		for _, t := range snap.Targets {
			if t.State() == StateLive {
				live++
			}
			w.d.noteRetry(t, w.opts.RetryBase, w.opts.RetryMax)
		}
		info := &SweepInfo{Reason: reason, Targets: len(snap.Targets), Live: live, Took: snap.Took,
			Errors: snap.Errors, Dropped: w.dropped.Load(), Next: next}
		if !w.send(ctx, Event{Kind: Synced, Time: time.Now(), Sweep: info}) {
			return
		}
		w.noteSnapshot(snap)
		if sliced.IsZero() {
			sliced = time.Now()
		} else {
			// The sweep asked or knocked on everyone: its time earns
			// the slices no credit.
			sliced = sliced.Add(snap.Took)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

func (w *watcher) send(ctx context.Context, e Event) bool {
	select {
	case w.out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// stream sends what a sweep in progress learnt of t: Added when it is
// new, Changed when it differs from what was last sent. It reports
// whether anything was sent.
func (w *watcher) stream(ctx context.Context, t *Target) bool {
	w.knownMu.Lock()
	old := w.known[t.ID]
	e := Event{Kind: Added, Time: time.Now(), Target: t}
	if old != nil {
		diff := Diff(old, t)
		if len(diff) == 0 {
			w.knownMu.Unlock()
			return false
		}
		e.Kind, e.Changes = Changed, diff
	}
	w.known[t.ID] = t
	w.knownMu.Unlock()
	w.streamed.Store(true)
	return w.send(ctx, e)
}

// emit compares the sweep with what is known and sends the differences.
func (w *watcher) emit(ctx context.Context, snap *Snapshot, first bool) bool {
	w.knownMu.Lock()
	defer w.knownMu.Unlock()
	changed := false
	now := time.Now()
	seen := map[string]bool{}
	for _, t := range snap.Targets {
		seen[t.ID] = true
		old := w.known[t.ID]
		w.known[t.ID] = t
		if old == nil {
			changed = true
			if !w.send(ctx, Event{Kind: Added, Time: now, Target: t}) {
				return changed
			}
			continue
		}
		if diff := Diff(old, t); len(diff) > 0 {
			changed = true
			if !w.send(ctx, Event{Kind: Changed, Time: now, Target: t, Changes: diff}) {
				return changed
			}
		}
	}
	for id, t := range w.known {
		if !seen[id] {
			delete(w.known, id)
			changed = true
			if !w.send(ctx, Event{Kind: Removed, Time: now, Target: t}) {
				return changed
			}
		}
	}
	return changed
}

// Diff names what differs between two snapshots of the same target, leaving
// out latency and probe times (which change every sweep).
func Diff(a, b *Target) []string {
	var d []string
	add := func(cond bool, what string) {
		if cond {
			d = append(d, what)
		}
	}
	add(a.State() != b.State(), "state")
	add(a.Name != b.Name, "name")
	add(!reflect.DeepEqual(a.Aliases, b.Aliases), "aliases")
	add(a.Family != b.Family, "family")
	add(a.Kind != b.Kind, "kind")
	add(a.Address != b.Address, "endpoint")
	add(!reflect.DeepEqual(a.Sources, b.Sources), "sources")
	add(!reflect.DeepEqual(a.Capabilities, b.Capabilities), "registered_capabilities")
	add(a.Level != b.Level, "level")
	add(a.BTSP() != b.BTSP(), "btsp")
	add(a.WeakSession() != b.WeakSession(), "session")
	add(!reflect.DeepEqual(a.Notes, b.Notes), "notes")
	var ai, bi, ac, bc any
	if a.Probe != nil {
		ai, ac = a.Probe.Identity, capsSig(a.Probe)
	}
	if b.Probe != nil {
		bi, bc = b.Probe.Identity, capsSig(b.Probe)
	}
	add(!reflect.DeepEqual(ai, bi), "identity")
	add(!reflect.DeepEqual(ac, bc), "capabilities")
	return d
}

func capsSig(p *Probe) any {
	if p.Capabilities == nil {
		return nil
	}
	return p.Capabilities.Methods
}

// noteSnapshot records the live registries (for ipc.watch polling) and the
// directories to watch.
func (w *watcher) noteSnapshot(snap *Snapshot) {
	var regs []ipc.Endpoint
	for _, t := range snap.Targets {
		if t.Kind == KindRegistry && t.State() == StateLive && t.Endpoint.Transport != "" {
			regs = append(regs, t.Endpoint)
		}
	}
	paths := w.d.WatchPaths()
	w.mu.Lock()
	w.registries = regs
	if !reflect.DeepEqual(paths, w.paths) {
		w.paths = paths
		w.pathsGen++
	}
	w.mu.Unlock()
}

// fsLoop watches the directories with fsnotify and triggers a sweep after a
// burst of events settles.
// watched holds the directories Watch already added, as of paths
// generation gen.
func (w *watcher) fsLoop(ctx context.Context, fw *fsnotify.Watcher, watched map[string]bool, gen int) {
	if fw == nil {
		return
	}
	defer fw.Close()
	resync := func() (added bool) {
		w.mu.Lock()
		paths, g := w.paths, w.pathsGen
		w.mu.Unlock()
		if g == gen {
			return false
		}
		gen = g
		want := map[string]bool{}
		for _, p := range paths {
			want[p] = true
			if !watched[p] {
				if fw.Add(p) == nil {
					watched[p] = true
					added = true
				}
			}
		}
		for p := range watched {
			if !want[p] {
				_ = fw.Remove(p)
				delete(watched, p)
			}
		}
		return added
	}
	check := time.NewTicker(time.Second)
	defer check.Stop()
	var debounce *time.Timer
	var debounceC <-chan time.Time
	defer func() {
		if debounce != nil {
			debounce.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-check.C:
			// A directory watched only now may have changed since the
			// sweep that named it read it: catch up.
			if resync() {
				w.trigger("fs")
			}
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			if debounce == nil {
				debounce = time.NewTimer(w.opts.Debounce)
				debounceC = debounce.C
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.trigger("fs")
			}
		case <-debounceC:
			debounce, debounceC = nil, nil
			w.trigger("fs")
		}
	}
}

// pollLoop polls each live Songbird registry with ipc.watch and triggers a
// sweep when its revision moves.
func (w *watcher) pollLoop(ctx context.Context) {
	t := time.NewTicker(w.opts.PollInterval)
	defer t.Stop()
	revs := map[string]int64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		regs := append([]ipc.Endpoint(nil), w.registries...)
		w.mu.Unlock()
		moved := false
		// A poll may take longer than the poll period (a fresh connection,
		// the riboCipher fallback, a loaded machine); a too-tight bound
		// would make every poll fail and the revision never be learnt.
		limit := max(w.opts.PollInterval, time.Second)
		for _, ep := range regs {
			key := EndpointKey(ep, "")
			since, known := revs[key]
			pctx, cancel := context.WithTimeout(ctx, limit)
			r := Registry{Endpoint: ep, Timeout: limit, Security: w.d.opts.Probe.Security}
			res, err := r.Watch(pctx, since)
			cancel()
			if err != nil {
				continue
			}
			switch {
			case known && (res.Revision != since || len(res.Events) > 0):
				moved = true
			case !known && res.Revision > 0:
				// The first poll cannot tell what the sweep that found this
				// registry saw: a registration between that sweep and now
				// would be missed until the periodic sweep. One catch-up
				// sweep closes the gap.
				moved = true
			}
			revs[key] = res.Revision
		}
		if moved {
			w.trigger("registry")
		}
	}
}
