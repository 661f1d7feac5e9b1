package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestBiomeOSAPINotProbingForever: the biomeOS API socket, found by a real
// sweep, is judged within the probe timeout, and the capabilities pane says
// what it is instead of "Probing…" (which it used to say for as long as the
// TUI ran). A target never probed by design says why.
func TestBiomeOSAPINotProbingForever(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := ipctest.ListenBiomeOS(filepath.Join(dir, "biomeos-api-fam1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	staleTarpc := filepath.Join(dir, "beardog.tarpc.sock")
	if err := os.WriteFile(staleTarpc, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	d := discovery.New(discovery.Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: discovery.ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap, err := d.Sweep(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := testModel(t, goldenConfig("dark"))
	var items []any
	for _, tg := range snap.Targets {
		items = append(items, added(tg)...)
	}
	m.update(feedMsg{items: items})
	for _, tc := range []struct{ name, want string }{
		{"biomeos-api", "An HTTP API, not JSON-RPC"},
		{"beardog.tarpc", "tarpc sidecar"},
	} {
		var key string
		for _, tg := range snap.Targets {
			if tg.Name == tc.name {
				key = tg.ID
			}
		}
		if key == "" {
			t.Fatalf("no %s among %d targets", tc.name, len(snap.Targets))
		}
		m.update(selectMsg{key: key})
		screen := ansi.Strip(m.render())
		if strings.Contains(screen, "Probing…") || !strings.Contains(screen, tc.want) {
			t.Errorf("%s: the capabilities pane does not say %q (or still says Probing…):\n%s", tc.name, tc.want, screen)
		}
	}
	// A target left unprobed by a source says the source's reason.
	relay := &discovery.Target{ID: "relay", Name: "faraway", NoProbe: true, Notes: []string{"relay-only registration"}}
	m.update(feedMsg{items: added(relay)})
	m.update(selectMsg{key: "relay"})
	if screen := ansi.Strip(m.render()); strings.Contains(screen, "Probing…") || !strings.Contains(screen, "Not probed: relay-only registration") {
		t.Errorf("an unprobed target:\n%s", screen)
	}
}
