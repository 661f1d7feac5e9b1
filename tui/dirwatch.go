package tui

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// DirWatcher is a small Discoverer over socket directories: every *.sock
// is a target (symlinks become aliases of what they point at), probed with
// discovery.Describe, re-probed periodically (each probe is also a heartbeat
// on the events tail) and rescanned when the directories change.
type DirWatcher struct {
	dirs     []string
	family   string
	interval time.Duration
	timeout  time.Duration
	// Heartbeats, when set, receives one event per liveness probe; sends
	// never block (a full channel drops the heartbeat).
	Heartbeats chan<- Event
}

// NewDirWatcher watches dirs (which should exist; see discovery.SocketDirs).
// interval is the re-probe period (5 s when zero), timeout bounds one probe
// (2 s when zero).
func NewDirWatcher(dirs []string, family string, interval, timeout time.Duration) *DirWatcher {
	if interval <= 0 {
		interval = 5 * time.Second
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &DirWatcher{dirs: dirs, family: family, interval: interval, timeout: timeout}
}

// Dirs reports the directories watched.
func (w *DirWatcher) Dirs() []string { return w.dirs }

// Watch scans, probes and streams changes until ctx ends.
func (w *DirWatcher) Watch(ctx context.Context, out chan<- TargetEvent) error {
	fw, err := fsnotify.NewWatcher()
	if err == nil {
		defer fw.Close()
		for _, d := range w.dirs {
			_ = fw.Add(d)
		}
	}
	kick := make(chan struct{}, 1)
	if fw != nil {
		go func() {
			var debounce <-chan time.Time
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-fw.Events:
					if !ok {
						return
					}
					debounce = time.After(150 * time.Millisecond)
				case <-fw.Errors:
				case <-debounce:
					debounce = nil
					select {
					case kick <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	known := map[string]Target{}
	full := true
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
			full = true
		case <-timer.C:
		}
		w.sweep(ctx, known, out, full)
		full = false
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(w.interval)
	}
}

// sockEntry is one socket file: its real path and the names pointing at it.
type sockEntry struct {
	path    string
	name    string
	aliases []string
}

func (w *DirWatcher) list() []sockEntry {
	byPath := map[string]*sockEntry{}
	var order []string
	for _, d := range w.dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, ".sock") || strings.HasSuffix(n, ".tarpc.sock") {
				continue
			}
			p := filepath.Join(d, n)
			real := p
			isLink := e.Type()&os.ModeSymlink != 0
			if isLink {
				r, err := filepath.EvalSymlinks(p)
				if err != nil {
					continue
				}
				real = r
			}
			base := strings.TrimSuffix(n, ".sock")
			se := byPath[real]
			if se == nil {
				se = &sockEntry{path: real}
				byPath[real] = se
				order = append(order, real)
			}
			if isLink {
				se.aliases = append(se.aliases, base)
			} else {
				se.name = base
			}
		}
	}
	out := make([]sockEntry, 0, len(order))
	for _, p := range order {
		se := byPath[p]
		if se.name == "" {
			se.name = strings.TrimSuffix(filepath.Base(p), ".sock")
		}
		sort.Strings(se.aliases)
		out = append(out, *se)
	}
	return out
}

func (w *DirWatcher) sweep(ctx context.Context, known map[string]Target, out chan<- TargetEvent, full bool) {
	socks := w.list()
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	results := map[string]Target{}
	for _, s := range socks {
		key := "unix://" + s.path
		seen[key] = true
		prev, had := known[key]
		wg.Add(1)
		go func(s sockEntry, prev Target, had bool) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			var t Target
			if had && !full && prev.Caps != nil {
				t = w.heartbeat(ctx, prev)
			} else {
				t = w.probe(ctx, s)
			}
			t.Name, t.Aliases = s.name, s.aliases
			mu.Lock()
			results[key] = t
			mu.Unlock()
		}(s, prev, had)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	keys := make([]string, 0, len(results))
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	send := func(ev TargetEvent) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, k := range keys {
		t := results[k]
		prev, had := known[k]
		known[k] = t
		switch {
		case !had:
			if !send(TargetEvent{Kind: TargetAdded, Target: t}) {
				return
			}
		case !sameTarget(prev, t):
			if !send(TargetEvent{Kind: TargetChanged, Target: t}) {
				return
			}
		}
	}
	for k, t := range known {
		if !seen[k] {
			delete(known, k)
			if !send(TargetEvent{Kind: TargetRemoved, Target: t}) {
				return
			}
		}
	}
}

func sameTarget(a, b Target) bool {
	return a.Health == b.Health && a.Latency == b.Latency && a.Level == b.Level && a.Err == b.Err &&
		reflect.DeepEqual(a.Aliases, b.Aliases) && a.Caps == b.Caps
}

// probe describes one socket from scratch.
func (w *DirWatcher) probe(ctx context.Context, s sockEntry) Target {
	t := Target{
		Key: "unix://" + s.path, Name: s.name, Aliases: s.aliases, Endpoint: "unix://" + s.path,
		Wire: "jsonrpc", Sources: []string{"socket-dir"},
	}
	if w.family != "" && strings.HasSuffix(s.name, "-"+w.family) {
		t.Family = w.family
	} else if i := strings.IndexByte(s.name, '-'); i > 0 {
		t.Family = s.name[i+1:]
	}
	pctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	ep, _ := ipc.ParseEndpoint(t.Endpoint)
	c, err := ipc.Dial(pctx, ep, ipc.Options{Endpoint: t.Endpoint, ConnectTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Health, t.Err = HealthDown, err.Error()
		return t
	}
	defer c.Close()
	d, err := discovery.Describe(pctx, c)
	if err != nil {
		var be *ipc.BTSPRequiredError
		var te *ipc.TimeoutError
		switch {
		case errors.As(err, &be):
			t.BTSP, t.Health = true, HealthLive
		case errors.As(err, &te), errors.Is(err, context.DeadlineExceeded):
			t.Health = HealthStale
		default:
			t.Health = HealthDown
		}
		t.Err = err.Error()
	}
	if d != nil {
		if d.Health != nil {
			t.Latency = d.HealthLatency
			if d.Health.Alive {
				t.Health = HealthLive
			} else if t.Health == HealthUnknown {
				t.Health = HealthStale
			}
		} else if t.Health == HealthUnknown {
			t.Health = HealthStale
		}
		t.Identity = d.Identity
		t.Caps = d.Capabilities
		t.Tree = d.Tree
		if t.Caps != nil && t.Caps.TransportSecurity.RequiresBTSP() {
			t.BTSP = true
		}
		t.Level = roughLevel(d)
	}
	return t
}

// roughLevel estimates the Capability Wire Standard level until discovery's
// compliance check is wired in: 1 answers liveness and lists methods, 2 uses
// the standard envelope and identity.get, 3 adds cost estimates and
// operation dependencies.
func roughLevel(d *discovery.Description) int {
	if d.Health == nil || d.Capabilities == nil {
		return 0
	}
	lvl := 1
	c := d.Capabilities
	if c.Format == "standard" && d.Identity != nil && !d.Identity.Legacy {
		lvl = 2
		if len(c.CostEstimates) > 0 && len(c.OperationDependencies) > 0 {
			lvl = 3
		}
	}
	return lvl
}

// heartbeat re-checks liveness of a known target and reports a heartbeat.
func (w *DirWatcher) heartbeat(ctx context.Context, t Target) Target {
	pctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	ep, err := ipc.ParseEndpoint(t.Endpoint)
	if err != nil {
		return t
	}
	start := time.Now()
	c, err := ipc.Dial(pctx, ep, ipc.Options{Endpoint: t.Endpoint, ConnectTimeout: 500 * time.Millisecond})
	ev := Event{Time: start, Source: t.Name, TargetKey: t.Key, Kind: EvHeartbeat, Name: "health.liveness"}
	if err != nil {
		t.Health, t.Err = HealthDown, err.Error()
		ev.Data = []byte(`"down"`)
	} else {
		resp, err := c.Call(pctx, "health.liveness", nil)
		c.Close()
		switch {
		case err == nil:
			t.Health, t.Latency, t.Err = HealthLive, resp.Elapsed, ""
			ev.Latency = resp.Elapsed
			ev.Data = boundedCopy(resp.Result)
		default:
			t.Health, t.Err = HealthStale, err.Error()
			ev.Data = []byte(`"stale"`)
		}
	}
	if w.Heartbeats != nil {
		select {
		case w.Heartbeats <- ev:
		default:
		}
	}
	return t
}
