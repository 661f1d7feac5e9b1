// Package backoff paces retries: an exponential backoff with jitter, the
// one used wherever primalscope reconnects, re-probes or retries (event
// sources, holon sessions, discovery's retries and sweeps, the history's
// busy retries, the TUI's listening).
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the state of one retry sequence: the wait starts at Min and
// doubles after each Next up to Max; Reset starts over. The zero Jitter
// gives exact waits. A Backoff is a value, for one goroutine; it is not
// safe for concurrent use.
type Backoff struct {
	// Min is the first wait (a value <= 0 is taken as 1 ms).
	Min time.Duration
	// Max bounds the wait (a value below Min is taken as Min).
	Max time.Duration
	// Jitter spreads each wait by up to ±Jitter of itself (0.1 is ±10 %),
	// so that many clients do not retry in step. It is clamped to [0, 1].
	Jitter float64
	// Rand returns a number in [0, 1) for the jitter; nil means
	// math/rand/v2's Float64. Tests set it to be deterministic.
	Rand func() float64

	cur time.Duration
}

func (b *Backoff) bounds() (lo, hi time.Duration) {
	lo, hi = b.Min, b.Max
	if lo <= 0 {
		lo = time.Millisecond
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Current is the wait Next will return next, before jitter.
func (b *Backoff) Current() time.Duration {
	lo, hi := b.bounds()
	return min(max(b.cur, lo), hi)
}

// Next returns the wait before the next attempt, jittered, and doubles the
// following one (up to Max).
func (b *Backoff) Next() time.Duration {
	d := b.Current()
	_, hi := b.bounds()
	if d > hi/2 {
		b.cur = hi
	} else {
		b.cur = 2 * d
	}
	return b.jitter(d)
}

// Reset makes the next wait Min again (after a success).
func (b *Backoff) Reset() { b.cur = 0 }

// Raise makes the next wait at least d (bounded by Max): a peer that asks
// for a longer pause (an SSE retry field) gets it.
func (b *Backoff) Raise(d time.Duration) {
	if d > b.Current() {
		_, hi := b.bounds()
		b.cur = min(d, hi)
	}
}

func (b *Backoff) jitter(d time.Duration) time.Duration {
	j := min(max(b.Jitter, 0), 1)
	if j == 0 {
		return d
	}
	r := b.Rand
	if r == nil {
		r = rand.Float64
	}
	return time.Duration(float64(d) * (1 - j + 2*j*r()))
}

// Sleep waits d or until ctx ends; it reports whether the whole wait
// passed (false: ctx ended first).
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
