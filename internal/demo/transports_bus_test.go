package demo

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestMain lets the test binary serve as the demo's stdio Bus daemon and
// workers, as the primalscope binary does.
func TestMain(m *testing.M) {
	peer.WorkerMain()
	os.Exit(m.Run())
}

func TestDemoStdioBus(t *testing.T) {
	eco, err := Start(context.Background(), Options{Tick: time.Hour, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	sock := eco.Path(BusSocket)
	if _, err := peer.LoadBusConfig(eco.Path(BusConfig)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: sock}, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var pids []int
	for _, pool := range []string{"echo", "agent"} {
		resp, err := c.Send(ctx, ipc.Request{Method: "health.liveness", Pool: pool})
		if err != nil {
			t.Fatalf("pool %s: %v", pool, err)
		}
		var a struct {
			Pool   string `json:"pool"`
			Worker int    `json:"worker"`
		}
		if json.Unmarshal(resp.Result, &a) != nil || a.Pool != pool || a.Worker == os.Getpid() {
			t.Fatalf("pool %s answered %s", pool, resp.Result)
		}
		pids = append(pids, a.Worker)
	}
	// A worker's request reaches the session's owner, who answers it.
	go func() {
		m := <-c.Incoming()
		if m != nil && m.Kind == ipc.KindRequest {
			_ = c.Reply(ctx, m.ID, json.RawMessage(`"yes"`), nil)
		}
	}()
	resp, err := c.Send(ctx, ipc.Request{Method: "bus.ask", Pool: "agent", SessionID: "S1"})
	if err != nil || !strings.Contains(string(resp.Result), `"answer":"yes"`) {
		t.Fatalf("bus.ask: %v %v", resp, err)
	}
	// Unanswered: the error says which pool and session.
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err = c.Send(short, ipc.Request{Method: "bus.silent", Pool: "echo", SessionID: "S2"})
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "pool echo, session S2") {
		t.Fatalf("silent: %v", err)
	}

	// Discovery finds the daemon in /proc, with one target per pool.
	found, err := (&discovery.ProcSource{}).Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]bool{}
	for _, f := range found {
		if f.Endpoint.Path == sock {
			pools[f.Pool] = true
		}
	}
	if !pools["echo"] || !pools["agent"] {
		t.Fatalf("discovery found %v in %+v", pools, found)
	}
	names := map[string]bool{}
	for _, en := range eco.Entries() {
		names[en.Name] = true
	}
	if !names["stdiobus/echo"] || !names["stdiobus/agent"] {
		t.Fatalf("overview: %v", names)
	}

	c.Close()
	if err := eco.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("worker %d outlived the demo: %v", pid, err)
		}
	}
}

// TestBusDaemonStartEndsWithCtx: a daemon that never says it listens is
// waited on no longer than the caller's ctx lives, and is stopped.
func TestBusDaemonStartEndsWithCtx(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "silent-daemon")
	// Reads its standard input until it is closed, says nothing.
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nread x\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	stop, err := startBusDaemon(ctx, exe, filepath.Join(dir, "bus.sock"), filepath.Join(dir, "bus.json"))
	if err == nil {
		stop()
		t.Fatal("a daemon that never listened was taken as started")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the ctx's deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("waited %v after ctx ended at 200 ms", d)
	}
}
