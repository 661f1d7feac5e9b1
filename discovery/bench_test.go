package discovery

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// benchDir lays out 200 sockets: 100 live primals, 50 stale (accept and
// never answer) and 50 dead files (nobody listening).
func benchDir(b *testing.B) string {
	b.Helper()
	dir := tempDir(b)
	for i := 0; i < 100; i++ {
		serve(b, dir, fmt.Sprintf("live%03d.sock", i), primal(fmt.Sprintf("live%03d", i), i%2 == 0).Config())
	}
	for i := 0; i < 50; i++ {
		serve(b, dir, fmt.Sprintf("stale%03d.sock", i), ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	}
	for i := 0; i < 50; i++ {
		staleFile(b, filepath.Join(dir, fmt.Sprintf("dead%03d.sock", i)))
	}
	return dir
}

func benchDiscoverer(dir string, stale time.Duration) *Discoverer {
	return New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: stale}})
}

// BenchmarkSweep200 measures a cold sweep (a new Discoverer each time) of
// 200 sockets with a 300 ms stale timeout: the time to the first live
// target, and to the complete sweep, which must stay within 1.2× the stale
// timeout however many sockets hang.
func BenchmarkSweep200(b *testing.B) {
	const stale = 300 * time.Millisecond
	dir := benchDir(b)
	var first, sweep time.Duration
	for i := 0; i < b.N; i++ {
		d := benchDiscoverer(dir, stale)
		start := time.Now()
		var once sync.Once
		var firstAt time.Duration
		snap, err := d.Sweep(context.Background(), func(t *Target) {
			if t.State() == StateLive {
				once.Do(func() { firstAt = time.Since(start) })
			}
		})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		counts := map[State]int{}
		for _, t := range snap.Targets {
			counts[t.State()]++
		}
		if counts[StateLive] != 100 || counts[StateStale] != 50 || counts[StateDead] != 50 {
			b.Errorf("states %v (a loaded machine starves the in-process fake primals)", counts)
		}
		if took > stale*12/10 {
			b.Errorf("sweep took %s, more than 1.2× the stale timeout %s", took, stale)
		}
		first += firstAt
		sweep += took
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N)/1000, "ms-to-first-live")
	b.ReportMetric(float64(sweep.Microseconds())/float64(b.N)/1000, "ms-per-sweep")
	b.ReportMetric(float64(sweep)/float64(b.N)/float64(stale), "sweep/stale")
}

// BenchmarkRescan200 measures a warm rescan by the same Discoverer: live
// targets get liveness only and dead files come from the cache; the stale
// ones still cost the stale timeout (the watcher's backoff spares them).
func BenchmarkRescan200(b *testing.B) {
	const stale = 300 * time.Millisecond
	dir := benchDir(b)
	d := benchDiscoverer(dir, stale)
	if _, err := d.Sweep(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.Sweep(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRescanBackoff200 is a rescan in watch mode: stale and dead
// targets are skipped until their retry time, so a rescan costs only the
// live targets' liveness round trips.
func BenchmarkRescanBackoff200(b *testing.B) {
	const stale = 300 * time.Millisecond
	dir := benchDir(b)
	d := benchDiscoverer(dir, stale)
	snap, err := d.sweep(context.Background(), true, false, sweepHooks{})
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range snap.Targets {
		d.noteRetry(t, time.Hour, time.Hour)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.sweep(context.Background(), true, false, sweepHooks{}); err != nil {
			b.Fatal(err)
		}
	}
}
