package discovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestNewFamilyMatcherBuildsNoList: the prober builds a matcher for
// every probe; the known names are sorted once, not each time (a map, a
// copy and a sort: 10 allocations and a sixth of a liveness probe's CPU).
func TestNewFamilyMatcherBuildsNoList(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { NewFamilyMatcher(nil, "westgate", "default") })
	if n > 2 {
		t.Errorf("NewFamilyMatcher: %v allocations, want at most 2 (the matcher and its families)", n)
	}
	m := NewFamilyMatcher(nil, "westgate")
	if name, fam := m.Split("neural-api-westgate"); name != "neural-api" || fam != "westgate" {
		t.Errorf("Split: %q %q", name, fam)
	}
	if name, fam := NewFamilyMatcher([]string{"Zed-Prime"}).Split("zed-prime-x1"); name != "zed-prime" || fam != "x1" {
		t.Errorf("Split with an extra name: %q %q", name, fam)
	}
}

// startOne starts one crowd primal and returns its endpoint.
func startOne(t *testing.T) ipc.Endpoint {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipctest.StartCrowd(dir, 1, 0)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); os.RemoveAll(dir) })
	return ipc.Endpoint{Transport: ipc.Unix, Path: c.Live[0]}
}

// TestLivenessProbeAllocs bounds what a liveness-only probe of a live
// primal allocates (what the liveness round pays 2,000 times): the
// family decision is made once a probe, not twice.
// maxLivenessAllocs: 152 measured (183 before the matcher was shared and
// the family decided once).
const maxLivenessAllocs = 160

func TestLivenessProbeAllocs(t *testing.T) {
	ep := startOne(t)
	p := NewProber(ProbeOptions{})
	ctx := context.Background()
	spec := ProbeSpec{Endpoint: ep}
	if r := p.Probe(ctx, spec); r.State != StateLive {
		t.Fatalf("probe: %s %s", r.State, r.Err)
	}
	n := testing.AllocsPerRun(50, func() {
		if r := p.Probe(ctx, spec); r.State != StateLive {
			t.Fatalf("probe: %s %s", r.State, r.Err)
		}
	})
	t.Logf("%v allocations a liveness probe", n)
	if n > maxLivenessAllocs {
		t.Errorf("a liveness probe allocates %v times, want at most %d", n, maxLivenessAllocs)
	}
}

// TestLivenessRoundInSlices: a watcher asks its live targets health.liveness
// a few at a time between sweeps, at an even rate, each once every 2 ×
// HealthEvery, not all at once at the sweep that finds their answers
// expired (with sweeps every 300 ms and HealthEvery 1 s: 40 calls within a
// few milliseconds, once a second). Every target is still asked within
// 2 × HealthEvery of the first sweep's answers.
func TestLivenessRoundInSlices(t *testing.T) {
	const n = 40
	dir := tempDir(t)
	var servers []*ipctest.Server
	for i := 0; i < n; i++ {
		servers = append(servers, serve(t, dir, fmt.Sprintf("p%02d.sock", i), primal(fmt.Sprintf("p%02d", i), false).Config()))
	}
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every = time.Second
	ch := d.Watch(ctx, WatchOptions{Interval: 300 * time.Millisecond, MaxInterval: 300 * time.Millisecond,
		HealthEvery: every, PollInterval: time.Hour})
	watchUntil(t, ch, 20*time.Second, func(e Event) bool { return e.Kind == Synced && e.Sweep.Live == n })
	go func() {
		for range ch { // keep the watcher going
		}
	}()
	start := time.Now()
	base := make([]int64, n)
	for i, s := range servers {
		base[i] = s.Calls()
	}
	firstAsked := make([]time.Duration, n)
	const window = 100 * time.Millisecond
	const span = 5 * every / 2
	var perWindow []int64
	prev := int64(0)
	for time.Since(start) < span {
		time.Sleep(window)
		total := int64(0)
		for i, s := range servers {
			c := s.Calls() - base[i]
			total += c
			if c > 0 && firstAsked[i] == 0 {
				firstAsked[i] = time.Since(start)
			}
		}
		perWindow = append(perWindow, total-prev)
		prev = total
	}
	t.Logf("calls per %v after the first sweep: %v", window, perWindow)
	for i, at := range firstAsked {
		if at == 0 || at > 2*every+500*time.Millisecond {
			t.Errorf("p%02d first asked %v after the first sweep, want within 2 × HealthEvery (%v)", i, at, every)
		}
	}
	if most := slices.Max(perWindow); most > n/4 {
		t.Errorf("%d calls in one %v window: the round was asked in a burst, not in slices (%d targets, HealthEvery %v)", most, window, n, every)
	}
	// Each once every roundPeriod (2 s): about 50 calls in 2.5 s.
	want := float64(n) * float64(span) / float64(roundPeriod(every))
	if float64(prev) > want+n/4 || float64(prev) < want/2 {
		t.Errorf("%d calls in %v, want about %.0f (%d targets, each asked once every %v)", prev, span, want, n, roundPeriod(every))
	}
}

// TestSweepAuditsOnlyWhatChanged: a sweep audits the level of a target
// only when something but times changed (every target at every sweep
// before: a tenth of an idle TUI's samples with 2,000 targets), and the
// levels stay what an audit gives.
func TestSweepAuditsOnlyWhatChanged(t *testing.T) {
	dir := tempDir(t)
	for i := 0; i < 3; i++ {
		serve(t, dir, fmt.Sprintf("p%d.sock", i), primal(fmt.Sprintf("p%d", i), i == 0).Config())
	}
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx := ctxT(t)
	sweep := func() *Snapshot {
		t.Helper()
		snap, err := d.Sweep(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range snap.Targets {
			if want := Audit(tg, AuditOptions{}).Level; tg.Level != want {
				t.Errorf("%s: level %d, an audit gives %d", tg.Name, tg.Level, want)
			}
		}
		return snap
	}
	sweep()
	if n := d.audits.Load(); n != 3 {
		t.Errorf("first sweep: %d audits, want 3", n)
	}
	sweep()
	sweep()
	if n := d.audits.Load(); n != 3 {
		t.Errorf("two sweeps that learnt nothing new audited %d targets", n-3)
	}
	serve(t, dir, "p3.sock", primal("p3", false).Config())
	snap := sweep()
	if n := d.audits.Load(); n != 4 {
		t.Errorf("a sweep that found one new target audited %d targets, want 1", n-3)
	}
	if len(snap.Targets) != 4 {
		t.Errorf("%d targets, want 4", len(snap.Targets))
	}
}

// TestSweepProbesWithTheTargetsKey: a sweep's probes use the key merge
// computed (the target's ID) for the dead-endpoint cache, not a
// filepath.EvalSymlinks of their path each (a lstat a step, 2,000 times a
// round); the dead verdict is still kept and found under it.
func TestSweepProbesWithTheTargetsKey(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "alive.sock", primal("alive", false).Config())
	staleFile(t, filepath.Join(dir, "gone.sock"))
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	for i := 0; i < 2; i++ {
		snap, err := d.Sweep(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range snap.Targets {
			want := StateLive
			if tg.Name == "gone" {
				want = StateDead
			}
			if tg.State() != want {
				t.Errorf("sweep %d: %s %s, want %s", i, tg.Name, tg.State(), want)
			}
			if tg.Name == "gone" && i == 1 && (tg.Probe == nil || !tg.Probe.Cached) {
				t.Errorf("the second sweep did not find the dead verdict in the cache")
			}
		}
	}
	if n := d.prober.keyed.Load(); n != 0 {
		t.Errorf("the prober resolved %d endpoints itself, want 0", n)
	}
}

// TestAskSliceCredit: the slices' credit follows the time given, never
// below nothing (a time since the last slice that went backwards asks
// nobody), and at most the paced targets.
func TestAskSliceCredit(t *testing.T) {
	dir := tempDir(t)
	for i := 0; i < 4; i++ {
		serve(t, dir, fmt.Sprintf("p%d.sock", i), primal(fmt.Sprintf("p%d", i), false).Config())
	}
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	ctx := ctxT(t)
	if _, err := d.Sweep(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, credit := d.askSlice(ctx, time.Second, -time.Hour, 0); credit != 0 {
		t.Errorf("credit %v after a time gone backwards, want 0", credit)
	}
	if _, credit := d.askSlice(ctx, time.Second, 300*time.Millisecond, 0.5); credit < 0.69 || credit > 0.71 {
		t.Errorf("credit %v after 0.3 s of 4 targets a second (and 0.5), want 0.7 (one asked)", credit)
	}
	if _, credit := d.askSlice(ctx, time.Second, time.Hour, 0); credit != 0 {
		t.Errorf("credit %v after an hour, want 0 (everyone asked, nothing banked)", credit)
	}
}
