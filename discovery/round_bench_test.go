package discovery

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// roundLive is the crowd of BenchmarkLivenessRound.
const roundLive = 1000

// BenchmarkLivenessRound measures what the TUI's liveness round costs
// (issue 24): a watch-mode sweep of a crowd of roundLive answering
// primals, every one of them known live and asked health.liveness, with
// the endpoint memory kept in a state folder, as the TUI keeps it, and
// flushed (something changed elsewhere) before each round. The op is the
// round; "probe-ns" is its time divided by the targets.
func BenchmarkLivenessRound(b *testing.B) {
	dir, err := ipctest.TempDir()
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := ipctest.StartCrowd(dir, roundLive, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	mem, _ := ipc.OpenEndpointMemory(b.TempDir())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{Security: ipc.Security{Memory: mem}}})
	ctx := context.Background()
	round := func() {
		snap, err := d.sweep(ctx, true, false, sweepHooks{})
		if err != nil {
			b.Fatal(err)
		}
		live := 0
		for _, t := range snap.Targets {
			if t.State() == StateLive {
				live++
			}
		}
		if live != roundLive {
			b.Fatalf("%d live, want %d", live, roundLive)
		}
	}
	round()
	other := ipc.Endpoint{Transport: ipc.Unix, Path: "/nonexistent/other.sock"}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Another endpoint learnt something: the memory flushes.
		mem.Update(other, func(f *ipc.EndpointFacts) { f.Framing = "x" + string(rune('a'+i%26)) })
		if err := mem.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		round()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/roundLive, "probe-ns")
	// CPU time of the process (the crowd's side included; the memory's
	// flushes too, a few records each).
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N)/roundLive, "cpu-ns/probe")
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchCrowd watches a crowd of roundLive answering primals with
// a short round (HealthEvery 2 s) for 12 s after the first sweep, with
// sweeps every second (the pace under churn: below HealthEvery, as the
// TUI's 5 s against 30 s) or every 4 s (the pace at rest: above it, as
// the TUI's 60 s), and reports the process's CPU time a second (the
// crowd's side included) and the most CPU time spent in any 250 ms window:
// a round asked at once shows as a peak, a round asked in slices does
// not. The op is the 12 s.
func BenchmarkWatchCrowd(b *testing.B) {
	dir, err := ipctest.TempDir()
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := ipctest.StartCrowd(dir, roundLive, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const (
		every  = 2 * time.Second
		span   = 12 * time.Second
		window = 250 * time.Millisecond
	)
	for _, pace := range []time.Duration{time.Second, 4 * time.Second} {
		b.Run("sweeps="+pace.String(), func(b *testing.B) {
			var total, peak time.Duration
			for i := 0; i < b.N; i++ {
				d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
					SocketDirs: []string{dir}, NoProc: true})
				ctx, cancel := context.WithCancel(context.Background())
				ch := d.Watch(ctx, WatchOptions{Interval: pace, MaxInterval: pace, HealthEvery: every, PollInterval: time.Hour})
				for e := range ch {
					if e.Kind == Synced {
						break
					}
				}
				done := make(chan struct{})
				go func() {
					defer close(done)
					for range ch {
					}
				}()
				start, cpu0 := time.Now(), cpuTime()
				last := cpu0
				for time.Since(start) < span {
					time.Sleep(window)
					now := cpuTime()
					peak = max(peak, now-last)
					last = now
				}
				total += last - cpu0
				cancel()
				<-done
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N)/span.Seconds(), "cpu-ms/s")
			b.ReportMetric(float64(peak.Milliseconds()), "peak-cpu-ms/250ms")
		})
	}
}
