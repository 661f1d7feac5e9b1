package tui

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestDiscoveryLiveCountHolds watches a directory where answering sockets
// queue behind hung ones (few probe places, so every sweep outlasts a
// stale timeout) through the TUI's DiscoveryWatcher: every sweep's
// heartbeat counts every answering socket live, and no answering target's
// health ever leaves live, so the header's live count cannot swing.
func TestDiscoveryLiveCountHolds(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	const live, silent = 60, 20
	d := crowdDiscoverer(t, live, silent, discovery.ProbeOptions{StaleTimeout: 300 * time.Millisecond, MaxOpen: 8})
	beats := make(chan events.Event, 16)
	w := &DiscoveryWatcher{D: d, Heartbeats: beats, Opts: discovery.WatchOptions{
		Interval: 20 * time.Millisecond, MaxInterval: 20 * time.Millisecond,
		RetryBase: 20 * time.Millisecond, RetryMax: 20 * time.Millisecond, PollInterval: time.Hour}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := make(chan discovery.Event, 64)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, out) }()

	health := map[string]discovery.State{}
	sweeps := 0
	for sweeps < 4 {
		select {
		case te := <-out:
			tg := newTarget(te.Target, nil)
			// Found and not judged yet, it is probing; once judged live
			// it must stay live.
			was, seen := health[tg.ID]
			health[tg.ID] = tg.health()
			if strings.HasPrefix(tg.Name, "live") && tg.health() != discovery.StateLive &&
				(tg.health() != discovery.StateUnknown || seen && was != discovery.StateUnknown) {
				t.Errorf("%s: health %v (%s)", tg.Name, tg.health(), tg.errText())
			}
		case hb := <-beats:
			var s struct {
				Live, Targets int
			}
			if err := json.Unmarshal(hb.Payload, &s); err != nil {
				t.Fatal(err)
			}
			sweeps++
			if s.Live != live || s.Targets != live+silent {
				t.Errorf("sweep %d: %d live of %d, want %d of %d", sweeps, s.Live, s.Targets, live, live+silent)
			}
		case <-ctx.Done():
			t.Fatalf("%d sweeps in a minute", sweeps)
		}
	}
	cancel()
	<-done
	n := 0
	for _, h := range health {
		if h == discovery.StateLive {
			n++
		}
	}
	if n != live {
		t.Errorf("%d targets live in the TUI's picture, want %d", n, live)
	}
}

// crowdDiscoverer starts live answering and silent (accepting, never
// answering) sockets in a directory of their own, and a discoverer that
// looks only there with probe's options; both end with the test.
func crowdDiscoverer(t *testing.T, live, silent int, probe discovery.ProbeOptions) *discovery.Discoverer {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := ipctest.StartCrowd(dir, live, silent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return discovery.New(discovery.Options{
		Getenv:     func(string) string { return "" },
		Environ:    func() []string { return nil },
		SocketDirs: []string{dir},
		NoProc:     true,
		Probe:      probe,
	})
}
