package discovery

import (
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
