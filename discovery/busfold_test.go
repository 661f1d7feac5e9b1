package discovery

import (
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// A bus socket listed by the socket directory and by its pools is one
// target per pool, never a pool-less target that can only look stale.
func TestMergeFoldsBusSocketIntoItsPools(t *testing.T) {
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/biomeos/stdiobus.sock"}
	other := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/biomeos/beardog.sock"}
	got := merge([]Found{
		{Endpoint: ep, Name: "stdiobus", Source: SrcSocketDir},
		{Endpoint: ep, Name: "stdiobus/echo", Pool: "echo", Kind: KindBus, Source: SrcProc},
		{Endpoint: ep, Name: "stdiobus/agent", Pool: "agent", Kind: KindBus, Source: SrcProc},
		{Endpoint: other, Name: "beardog", Source: SrcSocketDir},
	})
	if len(got) != 3 {
		t.Fatalf("want beardog and two pools, got %d targets: %+v", len(got), got)
	}
	for _, tg := range got {
		if tg.Endpoint.Path == ep.Path {
			if tg.Pool == "" {
				t.Fatalf("a pool-less bus target survived: %+v", tg)
			}
			seen := false
			for _, s := range tg.Sources {
				if s.Source == SrcSocketDir && s.Name == "stdiobus" && s.Alias {
					seen = true
				}
			}
			if !seen {
				t.Fatalf("pool %s lost the socket directory's sighting: %+v", tg.Pool, tg.Sources)
			}
		}
	}
}
