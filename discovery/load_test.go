package discovery_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestLoadTenThousandRegisteredTargets has a Songbird registry hold 10,000
// registrations (half with a Unix socket that is not there, half reached
// through a mesh relay) and sweeps: every one is listed, each once, and
// the sweep ends. The hang guard is generous; no timing is asserted.
func TestLoadTenThousandRegisteredTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	sweepRegistry(t, 10_000)
}

// TestLoadRegistryAtItsBound sweeps a registry holding as many
// registrations as one answer may carry (MaxRegistryEntries): every one is
// listed. It is long, so it runs with PRIMALSCOPE_LOAD=1.
func TestLoadRegistryAtItsBound(t *testing.T) {
	if testing.Short() || os.Getenv("PRIMALSCOPE_LOAD") == "" {
		t.Skip("load: set PRIMALSCOPE_LOAD=1")
	}
	sweepRegistry(t, discovery.MaxRegistryEntries)
}

func sweepRegistry(t *testing.T, n int) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sb := ipctest.NewSongbird()
	for _, svc := range ipctest.LoadServices(n, filepath.Join(dir, "gone")) {
		sb.Register(svc)
	}
	srv, err := ipctest.Listen(filepath.Join(dir, "songbird.sock"), sb.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	d := discovery.New(discovery.Options{
		Getenv:     func(string) string { return "" },
		Environ:    func() []string { return nil },
		SocketDirs: []string{dir},
		NoProc:     true,
		Probe:      discovery.ProbeOptions{StaleTimeout: 5 * time.Second},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type swept struct {
		snap *discovery.Snapshot
		err  error
	}
	done := make(chan swept, 1)
	start := time.Now()
	go func() {
		s, err := d.Sweep(ctx, nil)
		done <- swept{s, err}
	}()
	var r swept
	select {
	case r = <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("a sweep of %d registered targets did not end (hang guard: 90 s)", n)
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, e := range r.snap.Errors {
		if e.Source == discovery.SrcReach {
			continue // only MaxRegistryProbes of the registered sockets are probed: said, not an error
		}
		t.Errorf("source error: %s: %s", e.Source, e.Err)
	}
	seen := map[string]int{}
	for _, tg := range r.snap.Targets {
		for _, name := range tg.Names() {
			seen[name]++
		}
	}
	missing := 0
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("load%05d", i)
		switch seen[name] {
		case 1:
		case 0:
			missing++
			if missing <= 5 {
				t.Errorf("%s was registered but not listed", name)
			}
		default:
			t.Errorf("%s listed %d times", name, seen[name])
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d registered targets not listed", missing, n)
	}
	if len(r.snap.Targets) < n {
		t.Errorf("%d targets, want at least %d", len(r.snap.Targets), n)
	}
	t.Logf("%d targets listed in %v", len(r.snap.Targets), time.Since(start).Round(time.Millisecond))
}
