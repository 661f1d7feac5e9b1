package tui

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// memoryFloor is the soft memory limit the TUI runs under while it holds
// little (2,000 targets, the rings full): the garbage collector works to
// keep the process near it rather than let its heap double first, and
// gives back to the system what a sweep's burst of probes took.
//
// It must leave the collector room over the live heap and the goroutine
// stacks (TestCrowdLiveHeap checks twice theirs fits): at 36 MiB, with
// 2,000 targets holding about 28 MiB of both, it ran without end under a
// flood (42 % CPU), hence 96 MiB. With them at about 23 MiB, 64 MiB keeps
// the flood's CPU where 96 MiB had it (28.6 against 29.0 %, five runs
// each, alternated) and the idle process 10–15 MB smaller (BENCHMARKS.md,
// "TUI memory with 2,000 targets").
const memoryFloor = 64 << 20

// memoryLimitFor is the soft limit for a live heap of live bytes: the
// floor, or what GOGC=100 lets the heap grow to (twice the live heap)
// once that is more, so a large answer never has the collector run
// without end.
func memoryLimitFor(live uint64) int64 {
	return max(memoryFloor, 2*int64(live))
}

// gcPercent is the TUI's GOGC: the heap may grow 60 % over what the last
// collection left live before the next, not 100 %. With 2,000 targets
// under bench/flood's 10,000 notifications a second the heap's headroom
// (freed, not yet given back) was most of what the process held over its
// live data: 64–65 MB resident at GOGC 100, 56–57 MB at 60, with the
// same CPU (10.4 / 10.4 % against 10.7 / 10.0 %, alternated, load
// 0.5–1.0: the collector is not where a flood's CPU goes), and a 10 MB
// answer formats as fast (BenchmarkLargeAnswerWhole 134–138 against
// 128–129 ms). BENCHMARKS.md, "Issue 24 on main, the session's last".
const gcPercent = 60

// keepMemory sets the TUI's collector: GOGC gcPercent, unless GOGC is
// set (the user's stands), and a soft memory limit moved after each
// collection (memoryLimitFor the heap then live), unless GOMEMLIMIT is
// set, until ctx ends or stop is called, which puts both back.
func keepMemory(ctx context.Context, getenv func(string) string) (stop func()) {
	restoreGC := func() {}
	if getenv("GOGC") == "" {
		oldPercent := debug.SetGCPercent(gcPercent)
		restoreGC = func() { debug.SetGCPercent(oldPercent) }
	}
	if getenv("GOMEMLIMIT") != "" {
		return restoreGC
	}
	old := debug.SetMemoryLimit(-1)
	ctx, cancel := context.WithCancel(ctx)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	adjust := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			debug.SetMemoryLimit(memoryLimitFor(sample[0].Value.Uint64()))
		}
	}
	// A sentinel no one holds is finalized after a collection: it moves
	// the limit and arms the next one, while ctx lives.
	type sentinel struct{ _ *int }
	arm = func() {
		s := &sentinel{}
		runtime.SetFinalizer(s, func(*sentinel) {
			if ctx.Err() != nil {
				return
			}
			adjust()
			arm()
		})
	}
	adjust()
	arm()
	return func() {
		cancel()
		debug.SetMemoryLimit(old)
		restoreGC()
	}
}
