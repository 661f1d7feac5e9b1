package capability

import "testing"

func TestCostSummary(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	yes := true
	for _, c := range []struct {
		cost *Cost
		want string
	}{
		{nil, ""},
		{&Cost{}, ""},
		{&Cost{CPU: "low", LatencyMS: f(5), MemoryBytes: f(4 << 20), GPUEligible: &yes}, "cpu low ~5 ms mem 4 MiB gpu"},
		{&Cost{MemoryBytes: f(1536)}, "mem 1.5 KiB"},
		{&Cost{MemoryBytes: f(-1)}, "mem -1 B"},
		{&Cost{MemoryBytes: f(1e300)}, "mem 1e+300 B"},
		// Peer text is escaped: a terminal sequence in cpu does not reach
		// the screen.
		{&Cost{CPU: "\x1b]52;c;AAAA\x07hi"}, `cpu \x1b]52;c;AAAA\x07hi`},
	} {
		if got := c.cost.Summary(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.cost, got, c.want)
		}
	}
}
