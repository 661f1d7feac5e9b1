package ipctest

import (
	"slices"
	"testing"
	"time"
)

// BenchStep is one thing a benchmark times: Run does it once.
type BenchStep struct {
	// Name names the step's metric, "<Name>-ns/op".
	Name string
	Run  func() error
}

// Interleaved runs every step once per iteration of b, one after another,
// so that all of them see the same machine load, and reports the median
// time of each as "<Name>-ns/op". It returns the medians in the order of
// steps, for the caller's ratios.
func Interleaved(b *testing.B, steps ...BenchStep) []time.Duration {
	b.Helper()
	times := make([][]time.Duration, len(steps))
	for i := range times {
		times[i] = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	for range b.N {
		for i, s := range steps {
			t0 := time.Now()
			if err := s.Run(); err != nil {
				b.Fatalf("%s: %v", s.Name, err)
			}
			times[i] = append(times[i], time.Since(t0))
		}
	}
	b.StopTimer()
	medians := make([]time.Duration, len(steps))
	for i, t := range times {
		if len(t) > 0 {
			slices.Sort(t)
			medians[i] = t[len(t)/2]
		}
		b.ReportMetric(float64(medians[i].Nanoseconds()), steps[i].Name+"-ns/op")
	}
	return medians
}
