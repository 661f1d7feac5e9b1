package discovery

import (
	"context"
	"os"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestNewFamilyMatcherBuildsNoList: the prober builds a matcher for
// every probe; the known names are sorted once, not each time (a map, a
// copy and a sort: 10 allocations and a sixth of a liveness probe's CPU).
func TestNewFamilyMatcherBuildsNoList(t *testing.T) {
	n := testing.AllocsPerRun(100, func() { NewFamilyMatcher(nil, "westgate", "default") })
	if n > 2 {
		t.Errorf("NewFamilyMatcher: %v allocations, want at most 2 (the matcher and its families)", n)
	}
	m := NewFamilyMatcher(nil, "westgate")
	if name, fam := m.Split("neural-api-westgate"); name != "neural-api" || fam != "westgate" {
		t.Errorf("Split: %q %q", name, fam)
	}
	if name, fam := NewFamilyMatcher([]string{"Zed-Prime"}).Split("zed-prime-x1"); name != "zed-prime" || fam != "x1" {
		t.Errorf("Split with an extra name: %q %q", name, fam)
	}
}

// startOne starts one crowd primal and returns its endpoint.
func startOne(t *testing.T) ipc.Endpoint {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipctest.StartCrowd(dir, 1, 0)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); os.RemoveAll(dir) })
	return ipc.Endpoint{Transport: ipc.Unix, Path: c.Live[0]}
}

// TestLivenessProbeAllocs bounds what a liveness-only probe of a live
// primal allocates (what the liveness round pays 2,000 times): the
// family decision is made once a probe, not twice.
// maxLivenessAllocs: 152 measured (183 before the matcher was shared and
// the family decided once).
const maxLivenessAllocs = 160

func TestLivenessProbeAllocs(t *testing.T) {
	ep := startOne(t)
	p := NewProber(ProbeOptions{})
	ctx := context.Background()
	spec := ProbeSpec{Endpoint: ep}
	if r := p.Probe(ctx, spec); r.State != StateLive {
		t.Fatalf("probe: %s %s", r.State, r.Err)
	}
	n := testing.AllocsPerRun(50, func() {
		if r := p.Probe(ctx, spec); r.State != StateLive {
			t.Fatalf("probe: %s %s", r.State, r.Err)
		}
	})
	t.Logf("%v allocations a liveness probe", n)
	if n > maxLivenessAllocs {
		t.Errorf("a liveness probe allocates %v times, want at most %d", n, maxLivenessAllocs)
	}
}
