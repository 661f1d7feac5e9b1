package discovery

import (
	"context"
	"os"
	"strings"
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

func TestPermissionWarnings(t *testing.T) {
	dir := tempDir(t)
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	s := serve(t, dir, "open.sock", primal("open", false).Config())
	if err := os.Chmod(s.Path, 0o777); err != nil {
		t.Fatal(err)
	}
	w := PermissionWarnings(s.Path)
	if len(w) != 2 || !strings.Contains(w[0], "socket is world-writable") || !strings.Contains(w[1], "directory") {
		t.Fatalf("warnings: %q", w)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Path, 0o700); err != nil {
		t.Fatal(err)
	}
	if w := PermissionWarnings(s.Path); len(w) != 0 {
		t.Fatalf("a private socket in a sticky directory: %q", w)
	}
	// The audit says so.
	if err := os.Chmod(s.Path, 0o766); err != nil {
		t.Fatal(err)
	}
	found, err := (&SocketDirSource{Dirs: []string{dir}}).Discover(context.Background())
	if err != nil || len(found) != 1 || len(found[0].Warnings) != 1 {
		t.Fatalf("found %+v %v", found, err)
	}
	tg := merge(found)[0]
	r := Audit(tg, AuditOptions{})
	warned := false
	for _, p := range r.Points {
		if p.ID == "security.permissions" && p.Result == Warn {
			warned = true
		}
	}
	if !warned {
		t.Fatalf("no permission warning in the audit: %+v", r.Points)
	}
}
