package backoff

import (
	"context"
	"testing"
	"time"
)

func TestDoublesToMaxAndResets(t *testing.T) {
	b := Backoff{Min: time.Second, Max: 5 * time.Second}
	var got []time.Duration
	for range 5 {
		got = append(got, b.Next())
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	b.Reset()
	if d := b.Next(); d != time.Second {
		t.Errorf("after Reset: %v", d)
	}
}

func TestJitterDeterministic(t *testing.T) {
	for _, c := range []struct {
		r    float64
		want time.Duration
	}{{0, 900 * time.Millisecond}, {0.5, time.Second}, {0.75, 1050 * time.Millisecond}} {
		b := Backoff{Min: time.Second, Max: time.Minute, Jitter: 0.1, Rand: func() float64 { return c.r }}
		if d := b.Next(); d != c.want {
			t.Errorf("rand %v: %v, want %v", c.r, d, c.want)
		}
		// The jitter does not compound: the next wait is 2 s jittered.
		if d := b.Next(); d < 1800*time.Millisecond || d > 2200*time.Millisecond {
			t.Errorf("second wait %v", d)
		}
	}
	// With the default source, every wait stays within ±Jitter, and the
	// waits do spread.
	b := Backoff{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond, Jitter: 0.2}
	lo, hi := time.Hour, time.Duration(0)
	for range 2000 {
		d := b.Next()
		if d < 80*time.Millisecond || d > 120*time.Millisecond {
			t.Fatalf("wait %v outside ±20 %%", d)
		}
		lo, hi = min(lo, d), max(hi, d)
	}
	if hi-lo < 20*time.Millisecond {
		t.Errorf("no spread: %v..%v", lo, hi)
	}
}

func TestBoundsAndRaise(t *testing.T) {
	var z Backoff
	if d := z.Next(); d != time.Millisecond {
		t.Errorf("zero Backoff: %v", d)
	}
	b := Backoff{Min: time.Second, Max: 10 * time.Millisecond} // Max below Min
	if d := b.Next(); d != time.Second {
		t.Errorf("Max<Min: %v", d)
	}
	b = Backoff{Min: time.Second, Max: 30 * time.Second}
	b.Raise(7 * time.Second)
	if d := b.Next(); d != 7*time.Second {
		t.Errorf("raised: %v", d)
	}
	b.Raise(time.Hour)
	if d := b.Current(); d != 30*time.Second {
		t.Errorf("raise beyond Max: %v", d)
	}
	b.Raise(time.Millisecond) // lower: no effect
	if d := b.Current(); d != 30*time.Second {
		t.Errorf("raise lower: %v", d)
	}
	// Huge bounds do not overflow.
	b = Backoff{Min: 1 << 61, Max: 1<<63 - 1}
	b.Next()
	if d := b.Next(); d <= 0 {
		t.Errorf("overflow: %v", d)
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if !Sleep(ctx, time.Millisecond) {
		t.Error("short sleep cut")
	}
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("sleep outlived its context")
	}
	if Sleep(ctx, 0) {
		t.Error("zero sleep on an ended context")
	}
}
