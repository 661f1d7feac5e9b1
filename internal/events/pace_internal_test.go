package events

import (
	"testing"
	"time"
)

// TestRestFor: a paced reader rests out the pace since it woke, not after
// a quiet spell, and not after taking a quarter of its queue or more (a
// burst: resting would let the connection fill the queue and drop, which
// BenchmarkNotificationToScreen once showed: 57 of 50,000 lost).
func TestRestFor(t *testing.T) {
	const pace = 10 * time.Millisecond
	for _, c := range []struct {
		since       time.Duration
		taken, cap_ int
		want        time.Duration
	}{
		{3 * time.Millisecond, 100, 1024, 7 * time.Millisecond},
		{pace, 100, 1024, 0},
		{time.Hour, 1, 1024, 0}, // after a quiet spell
		{3 * time.Millisecond, 255, 1024, 7 * time.Millisecond},
		{3 * time.Millisecond, 256, 1024, 0}, // a quarter of the queue
		{3 * time.Millisecond, 900, 1024, 0},
		{3 * time.Millisecond, 1, 0, 0}, // no queue to rest on
	} {
		if got := restFor(pace, c.since, c.taken, c.cap_); got != c.want {
			t.Errorf("restFor(%v, %v, %d, %d) = %v, want %v", pace, c.since, c.taken, c.cap_, got, c.want)
		}
	}
}
