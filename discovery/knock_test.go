package discovery

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// watchUntil reads ch until done says so (it is given every event), or
// fails the test after limit.
func watchUntil(t *testing.T, ch <-chan Event, limit time.Duration, done func(Event) bool) {
	t.Helper()
	timeout := time.After(limit)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("event stream closed")
			}
			if done(e) {
				return
			}
		case <-timeout:
			t.Fatalf("not seen within %v", limit)
		}
	}
}

// TestWatchKnocks: between liveness rounds (HealthEvery), a watcher's
// timed sweeps ask a live Unix-socket target nothing (they connect and
// hang up); the target stays live; a refresh asks it. Without knocking,
// every sweep sent it health.liveness (4 calls in 4 sweeps here).
func TestWatchKnocks(t *testing.T) {
	dir := tempDir(t)
	s := serve(t, dir, "alpha.sock", primal("alpha", false).Config())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refresh := make(chan struct{})
	ch := d.Watch(ctx, WatchOptions{Interval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		HealthEvery: time.Hour, PollInterval: time.Hour, Refresh: refresh})
	sweeps := 0
	var after int64
	watchUntil(t, ch, 10*time.Second, func(e Event) bool {
		if e.Kind != Synced {
			return false
		}
		if e.Sweep.Live != 1 {
			t.Errorf("sweep %d (%s): %d live", sweeps, e.Sweep.Reason, e.Sweep.Live)
		}
		sweeps++
		if sweeps == 1 {
			after = s.Calls() // the first, full probe
		}
		return sweeps == 5
	})
	if n := s.Calls() - after; n != 0 {
		t.Errorf("4 timed sweeps within HealthEvery sent %d calls, want none (a knock asks nothing)", n)
	}
	// A refresh asks.
	before := s.Calls()
	refresh <- struct{}{}
	watchUntil(t, ch, 10*time.Second, func(e Event) bool { return e.Kind == Synced && e.Sweep.Reason == "refresh" })
	if s.Calls() == before {
		t.Error("a refresh asked the target nothing")
	}
}

// TestWatchKnockFindsTheDead: a primal that dies without removing its
// socket file (the same file: same inode and mtime) is refused at the
// knock and judged dead on the next timed sweep, as when every sweep
// asked it.
func TestWatchKnockFindsTheDead(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "alpha.sock")
	s := serve(t, dir, "alpha.sock", primal("alpha", false).Config())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := d.Watch(ctx, WatchOptions{Interval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		HealthEvery: time.Hour, PollInterval: time.Hour, Debounce: time.Hour})
	sweeps := 0
	watchUntil(t, ch, 10*time.Second, func(e Event) bool { sweeps += b2i(e.Kind == Synced); return sweeps == 2 })
	// The crash: the listener goes, the file stays (kept by a link while
	// the server removes its name, then put back).
	keep := filepath.Join(tempDir(t), "keep")
	if err := os.Link(path, keep); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Rename(keep, path); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	watchUntil(t, ch, 5*time.Second, func(e Event) bool {
		return e.Target != nil && e.Target.Name == "alpha" && e.Kind != Removed && e.Target.State() == StateDead
	})
	t.Logf("judged dead %v after the crash", time.Since(t0).Round(time.Millisecond))
}

// TestWatchHealthRound: a peer that hangs while its listener still
// accepts passes a knock; the liveness round (HealthEvery after its last
// answer) finds it stale.
func TestWatchHealthRound(t *testing.T) {
	dir := tempDir(t)
	var hang atomic.Bool
	cfg := primal("alpha", false).Config()
	live := cfg.Methods["health.liveness"]
	cfg.Methods["health.liveness"] = func(ctx context.Context, p json.RawMessage) (any, error) {
		if hang.Load() {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return live(ctx, p)
	}
	serve(t, dir, "alpha.sock", cfg)
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 300 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = 400 * time.Millisecond
	ch := d.Watch(ctx, WatchOptions{Interval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		HealthEvery: every, PollInterval: time.Hour})
	watchUntil(t, ch, 10*time.Second, func(e Event) bool { return e.Kind == Synced })
	hang.Store(true)
	t0 := time.Now()
	watchUntil(t, ch, 10*time.Second, func(e Event) bool {
		return e.Target != nil && e.Target.Name == "alpha" && e.Target.State() == StateStale
	})
	took := time.Since(t0)
	t.Logf("judged stale %v after it hung", took.Round(time.Millisecond))
	if took > every+5*time.Second {
		t.Errorf("a hung peer was judged stale after %v (HealthEvery %v)", took, every)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWatchAsksOnceARound: after its liveness round, a live target is
// asked again a round later, not at every sweep: the round's answer
// counts from when it came. (The sweep kept the earlier probe of a target
// that did not change, with the time of the round before; every sweep
// after the first round was a liveness round of every target.)
func TestWatchAsksOnceARound(t *testing.T) {
	dir := tempDir(t)
	s := serve(t, dir, "alpha.sock", primal("alpha", false).Config())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = 400 * time.Millisecond
	ch := d.Watch(ctx, WatchOptions{Interval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		HealthEvery: every, PollInterval: time.Hour})
	watchUntil(t, ch, 10*time.Second, func(e Event) bool { return e.Kind == Synced })
	start, before := time.Now(), s.Calls()
	const window = 5 * every
	sweeps := 0
	watchUntil(t, ch, 10*time.Second, func(e Event) bool {
		sweeps += b2i(e.Kind == Synced)
		return time.Since(start) >= window
	})
	calls := s.Calls() - before
	t.Logf("%d calls in %v (%d sweeps, HealthEvery %v)", calls, window, sweeps, every)
	if rounds := int64(window/every) + 2; calls > rounds || calls < 2 {
		t.Errorf("%d liveness calls in %v (%d sweeps), want about one each %v (at most %d, at least 2)", calls, window, sweeps, every, rounds)
	}
}
