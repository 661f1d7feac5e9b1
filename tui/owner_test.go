package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestForeignOwnerMarked: a primal another local user serves is probed and
// shown with the error-styled ⚠ in its row and its owner in the caps
// header; the user's own primal has neither.
func TestForeignOwnerMarked(t *testing.T) {
	fp, dir := ipctest.ServeForeign(t, "beardog.sock")
	own, err := ipctest.StartPrimal(filepath.Join(dir, "toadstool.sock"), &ipctest.Primal{Name: "toadstool", Version: "1.0.0", Format: ipctest.FormatStandard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })

	m, _ := testModel(t, goldenConfig("dark"))
	st := m.pc.st
	for _, tc := range []struct {
		path    string
		foreign bool
	}{{fp.Path, true}, {own.Path, false}} {
		ep := ipc.Endpoint{Transport: ipc.Unix, Path: tc.path}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := discovery.NewProber(discovery.ProbeOptions{ConnectTimeout: 2 * time.Second, StaleTimeout: 2 * time.Second}).
			Probe(ctx, discovery.ProbeSpec{Endpoint: ep})
		cancel()
		tg := newTarget(&discovery.Target{ID: ep.String(), Name: filepath.Base(tc.path), Endpoint: ep, Address: ep.String(), Kind: discovery.KindPrimal, Probe: &r}, nil)
		if tg.health() != discovery.StateLive {
			t.Fatalf("%s: not probed live: %v %q", tc.path, tg.health(), tg.errText())
		}
		row := m.tp().row(st, tg, 60, false, false)
		title, _ := capsTitle(st, tg)
		mark := st.Err.Render("⚠ ")
		if got := strings.Contains(row, mark); got != tc.foreign {
			t.Errorf("%s: row %q marked %v, want %v", tc.path, row, got, tc.foreign)
		}
		if got := strings.Contains(title, "served by nobody (uid 65534)"); got != tc.foreign {
			t.Errorf("%s: caps header %q names the owner %v, want %v", tc.path, title, got, tc.foreign)
		}
	}
}

// TestRefusedCallRecordsNoParams: a call refused because another user
// serves the socket is recorded refused, without the params it never sent.
func TestRefusedCallRecordsNoParams(t *testing.T) {
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: "/tmp/shared/beardog.sock"}
	tg := &discovery.Target{ID: ep.String(), Name: "beardog", Endpoint: ep, Address: ep.String(), Kind: discovery.KindPrimal}
	err := &ipc.ForeignPeerError{Endpoint: "beardog", Peer: ipc.PeerIdentity{UID: ipctest.NobodyUID, User: "nobody", Foreign: true, Why: "it is served by nobody (uid 65534), not by you or root"}}
	e := recordFor(tg, ipc.Request{Method: "secrets.store", Params: []byte(`{"password":"hunter2"}`)}, time.Now(), nil, err)
	if e.Outcome != "refused" || e.Params != nil {
		t.Fatalf("outcome %q, params %s", e.Outcome, e.Params)
	}
}

// TestSweepHeartbeatSaysCuts: a registry naming more endpoints than one
// sweep probes and more entries than one answer keeps: the sweep's
// heartbeat, which the TUI's events show, says both cuts.
func TestSweepHeartbeatSaysCuts(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	reg, err := ipctest.ListenFloodRegistry(filepath.Join(dir, "songbird.sock"), &ipctest.FloodRegistry{Entries: discovery.MaxRegistryEntries + 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	d := discovery.New(discovery.Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true})
	beats := make(chan events.Event, 4)
	w := &DiscoveryWatcher{D: d, Heartbeats: beats, Opts: discovery.WatchOptions{Interval: time.Minute, MaxInterval: time.Minute, PollInterval: time.Hour}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := make(chan discovery.Event, 64)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, out) }()
	defer func() { cancel(); <-done }()
	for {
		select {
		case <-out:
		case hb := <-beats:
			p := string(hb.Payload)
			for _, want := range []string{"only the first 64 were probed", fmt.Sprintf("more than %d entries", discovery.MaxRegistryEntries)} {
				if !strings.Contains(p, want) {
					t.Errorf("the heartbeat does not say %q: %s", want, p)
				}
			}
			return
		case <-ctx.Done():
			t.Fatal("no sweep in 30 s")
		}
	}
}
