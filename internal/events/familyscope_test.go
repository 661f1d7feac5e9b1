package events_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestDefaultDialFamilyScoped: a Config without Dial (no seed at hand)
// never sends a liveness poll in cleartext to a family-scoped socket: it
// does not connect at all.
func TestDefaultDialFamilyScoped(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	src := events.Config{Interval: 50 * time.Millisecond}.Source(events.Spec{Name: "beardog",
		Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_ = src.Run(ctx, func(events.Event) {})
	if conns := h.Received(); len(conns) != 0 {
		t.Fatalf("%d connection(s) to a family-scoped socket without a seed, the first carrying %q", len(conns), conns[0])
	}
}
