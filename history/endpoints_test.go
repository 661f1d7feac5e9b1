package history

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"
)

// Endpoints lists each endpoint once, only those of calls since the time
// given, and at most the limit.
func TestEndpointsDistinctSinceAndBounded(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := context.Background()
	old := time.Now().Add(-time.Hour)
	now := time.Now()
	if _, err := s.Add(ctx,
		Entry{Time: old, Target: "ai", Endpoint: "/run/x/ai.sock", Method: "a", Outcome: OutcomeOK},
		Entry{Time: now, Target: "squirrel", Endpoint: "/run/x/squirrel.sock", Method: "a", Outcome: OutcomeOK},
		Entry{Time: now, Target: "squirrel", Endpoint: "/run/x/squirrel.sock", Method: "b", Outcome: OutcomeOK},
		Entry{Time: now, Target: "x", Method: "a", Outcome: OutcomeOK},
	); err != nil {
		t.Fatal(err)
	}
	got, err := s.Endpoints(ctx, time.Time{}, 10)
	sort.Strings(got)
	if err != nil || !slices.Equal(got, []string{"/run/x/ai.sock", "/run/x/squirrel.sock"}) {
		t.Fatalf("every endpoint: %q, %v", got, err)
	}
	if got, err := s.Endpoints(ctx, now.Add(-time.Minute), 10); err != nil || !slices.Equal(got, []string{"/run/x/squirrel.sock"}) {
		t.Fatalf("since a minute ago: %q, %v", got, err)
	}
	// Past the limit, the endpoint used longest ago is the one left out
	// (ai.sock was added first, so a scan in table order would keep it).
	if got, err := s.Endpoints(ctx, time.Time{}, 1); err != nil || !slices.Equal(got, []string{"/run/x/squirrel.sock"}) {
		t.Fatalf("limit 1: %q, %v; want the most recently used", got, err)
	}
}
