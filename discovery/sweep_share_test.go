package discovery

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSweepKeepsOneCopyOfAnUnchangedTarget: between sweeps a target is
// held once, whoever holds it. A sweep's picture of a target is the one
// its onProbe was given, and a later sweep that learns nothing of it but
// times (a liveness-only probe of a live target) keeps the earlier one,
// probe and all; a target that changed is a new snapshot.
func TestSweepKeepsOneCopyOfAnUnchangedTarget(t *testing.T) {
	t.Parallel()
	dir := tempDir(t)
	serve(t, dir, "stays.sock", primal("stays", true).Config())
	goes := serve(t, dir, "goes.sock", primal("goes", false).Config())
	d := New(Options{Getenv: func(string) string { return "" }, SocketDirs: []string{dir}, NoProc: true, NoRegistries: true,
		Probe: ProbeOptions{StaleTimeout: 2 * time.Second}})
	var mu sync.Mutex
	given := map[string]*Target{}
	sweep := func() map[string]*Target {
		t.Helper()
		snap, err := d.Sweep(ctxT(t), func(tg *Target) {
			mu.Lock()
			given[tg.Name] = tg
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*Target{}
		for _, tg := range snap.Targets {
			out[tg.Name] = tg
		}
		return out
	}
	first := sweep()
	for _, name := range []string{"stays", "goes"} {
		if first[name] == nil || first[name].State() != StateLive || first[name].Probe.Capabilities == nil {
			t.Fatalf("first sweep: %s is %+v, want live and described", name, first[name])
		}
		if first[name] != given[name] {
			t.Errorf("first sweep: %s is held twice (the snapshot's and the one onProbe was given)", name)
		}
	}
	second := sweep()
	for _, name := range []string{"stays", "goes"} {
		if second[name] != first[name] {
			t.Errorf("second sweep: %s learnt nothing new but is a new copy (probe at %v, was %v)", name, second[name].Probe.At, first[name].Probe.At)
		}
	}
	goes.Close()
	third := sweep()
	if third["stays"] != first["stays"] {
		t.Error("third sweep: stays learnt nothing new but is a new copy")
	}
	if g := third["goes"]; g != nil && (g == first["goes"] || g.State() == StateLive) {
		t.Errorf("third sweep: goes stopped but is kept as it was (%s)", g.State())
	}
}

// TestSweepGoroutinesBoundedByPlaces: a sweep of many targets runs at
// most MaxOpen goroutines for its probes, not one a target waiting for a
// place (a crowd of 2,000 had 2,000 stacks at every sweep).
func TestSweepGoroutinesBoundedByPlaces(t *testing.T) {
	// Not parallel: the goroutines of other tests' sweeps would count.
	const places, silent = 3, 12
	c := smallCrowd(t, 0, silent)
	d := New(Options{Getenv: func(string) string { return "" }, SocketDirs: []string{c.Dir}, NoProc: true, NoRegistries: true,
		Probe: ProbeOptions{StaleTimeout: 300 * time.Millisecond, MaxOpen: places}})
	done := make(chan error, 1)
	go func() {
		_, err := d.Sweep(ctxT(t), nil)
		done <- err
	}()
	time.Sleep(150 * time.Millisecond) // the first places are taken, the rest wait
	buf := make([]byte, 1<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	<-done
	n := 0
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "discovery.(*probeRun)") && !strings.Contains(g, "(*probeRun).wait") {
			n++
		}
	}
	if n > places {
		t.Errorf("%d goroutines probe for a sweep of %d targets with %d places:\n%s", n, silent, places, dump)
	}
}
