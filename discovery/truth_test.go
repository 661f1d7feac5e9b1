package discovery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// smallCrowd starts live answering and silent hung primals in a fresh
// directory, stopped when the test ends.
func smallCrowd(t *testing.T, live, silent int) *ipctest.Crowd {
	t.Helper()
	c, err := ipctest.StartCrowd(tempDir(t), live, silent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSweepQueuedProbesGetTheirOwnDeadline: with one probe at a time, an
// answering socket listed among hung ones waits for its turn, then gets
// its whole stale time: it is live, and every hung one is stale after its
// own probe, although the sweep takes several stale timeouts.
func TestSweepQueuedProbesGetTheirOwnDeadline(t *testing.T) {
	t.Parallel()
	c := smallCrowd(t, 1, 4)
	var found []Found
	for i, p := range c.Silent {
		found = append(found, Found{Endpoint: unixEP(p), Source: SrcConfig, Name: "hung" + string(rune('a'+i))})
		if i == 1 {
			found = append(found, Found{Endpoint: unixEP(c.Live[0]), Source: SrcConfig, Name: "live"})
		}
	}
	const stale = 400 * time.Millisecond
	d := New(Options{Getenv: func(string) string { return "" }, NoProc: true, NoRegistries: true,
		Sources: []Source{&StaticSource{Found: found}},
		Probe:   ProbeOptions{StaleTimeout: stale, MaxOpen: 1}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range snap.Targets {
		want := StateStale
		if tg.Name == "live" {
			want = StateLive
		}
		if tg.State() != want {
			t.Errorf("%s: %s (%s), want %s", tg.Name, tg.State(), tg.Probe.Err, want)
		}
	}
	if snap.Took < 4*stale {
		t.Errorf("the sweep took %v: four hung sockets, one probe at a time, cannot all be judged in less than %v", snap.Took, 4*stale)
	}
}

// TestProbeCutShortIsNotStale: a probe whose caller gives up before the
// probe's own deadline learns nothing: unknown, never stale; one that
// never got its turn is "not probed yet".
func TestProbeCutShortIsNotStale(t *testing.T) {
	t.Parallel()
	c := smallCrowd(t, 0, 1)
	pr := NewProber(ProbeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(c.Silent[0])})
	// (On a very loaded machine the probe may not even have started.)
	if r.State != StateUnknown || !r.Incomplete || !strings.Contains(r.Err, "cut short") && !strings.Contains(r.Err, "not probed yet") {
		t.Errorf("cut short: %s incomplete=%v (%s), want unknown", r.State, r.Incomplete, r.Err)
	}

	done, stop := context.WithCancel(context.Background())
	stop()
	r = pr.Probe(done, ProbeSpec{Endpoint: unixEP(c.Silent[0])})
	if r.State != StateUnknown || !r.Incomplete || !strings.Contains(r.Err, "not probed yet") {
		t.Errorf("never started: %s incomplete=%v (%s), want unknown, not probed yet", r.State, r.Incomplete, r.Err)
	}
}

// cutAfter is a source that ends its sweep's context once it has looked:
// the sweep has its targets, and no time left to probe them.
type cutAfter struct {
	Source
	cancel context.CancelFunc
}

func (c cutAfter) Discover(ctx context.Context) ([]Found, error) {
	fs, err := c.Source.Discover(ctx)
	c.cancel()
	return fs, err
}

// TestSweepKeepsLastJudgedHealth: a sweep whose caller gave up before it
// reached the targets leaves each with its last judged health (live stays
// live, stale stays stale); a target never judged is unknown ("not probed
// yet"), not stale.
func TestSweepKeepsLastJudgedHealth(t *testing.T) {
	t.Parallel()
	c := smallCrowd(t, 2, 1)
	var cut context.CancelFunc
	src := &SocketDirSource{Dirs: []string{c.Dir}, Matcher: NewFamilyMatcher(nil, "")}
	newD := func() *Discoverer {
		return New(Options{Getenv: func(string) string { return "" }, NoProc: true, NoRegistries: true,
			Sources: []Source{cutAfter{Source: src, cancel: func() { cut() }}},
			Probe:   ProbeOptions{StaleTimeout: 500 * time.Millisecond}})
	}
	d := newD()
	cut = func() {}
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]State{}
	for _, tg := range snap.Targets {
		before[tg.ID] = tg.State()
	}
	if len(before) != 3 || before[EndpointKey(unixEP(c.Silent[0]), "")] != StateStale {
		t.Fatalf("first sweep: %v", before)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cut = cancel
	snap, err = d.Sweep(ctx, nil)
	if err == nil {
		t.Fatal("a sweep with a cancelled context reported no error")
	}
	if len(snap.Targets) != 3 {
		t.Fatalf("%d targets, want 3", len(snap.Targets))
	}
	for _, tg := range snap.Targets {
		if tg.State() != before[tg.ID] {
			t.Errorf("%s: %s after a sweep that did not reach it, was %s", tg.Name, tg.State(), before[tg.ID])
		}
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	cut = cancel
	snap, _ = newD().Sweep(ctx, nil)
	if len(snap.Targets) != 3 {
		t.Fatalf("%d targets, want 3", len(snap.Targets))
	}
	for _, tg := range snap.Targets {
		if tg.State() != StateUnknown || tg.Probe == nil || !strings.HasPrefix(tg.Probe.Err, "not probed yet") {
			t.Errorf("%s never probed: %s, want unknown, not probed yet", tg.Name, tg.State())
		}
	}
}
