package tui

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestSessionFailureIsRefused: a call whose BTSP session breaks after its
// first frame (a forged answer) is "refused" in the response viewer and in
// the history entry the TUI records, as the CLI exits 5 for it; not
// "failed" and "closed".
func TestSessionFailureIsRefused(t *testing.T) {
	const seed = "family-seed-for-tui-tests-0123456789"
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	h, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-westgate.sock"), &ipctest.HostileSession{Seed: []byte(seed), Fault: ipctest.FaultForged})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(seed), RequireBTSP: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := ipc.Request{Method: "health.liveness"}
	start := time.Now()
	_, err = c.Send(ctx, req)
	if err == nil {
		t.Fatal("a forged answer was accepted")
	}
	tg := &discovery.Target{Name: "beardog-westgate", Endpoint: ep, Address: ep.String()}
	if a := answerOf(1, tg, req, start, nil, err); a.outcome != "refused" {
		t.Errorf("response viewer outcome %q, want refused (%v)", a.outcome, err)
	}
	if e := recordFor(tg, req, start, nil, err); e.Outcome != history.OutcomeRefused {
		t.Errorf("history outcome %q, want refused (%v)", e.Outcome, err)
	}
}
