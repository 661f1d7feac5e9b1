package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// readMemoryFile returns the endpoints the CLI's memory file holds (nil
// while there is none).
func readMemoryFile(t *testing.T, state string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "primalscope", "endpoints.json"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Endpoints map[string]json.RawMessage `json:"endpoints"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("endpoints.json: %v", err)
	}
	return doc.Endpoints
}

// TestEndpointMemoryLongRunning: a command not bounded by --timeout (ls
// --watch) writes what it learns while it runs, not only at its end, and
// its end writes too; a one-shot command writes once it is done.
func TestEndpointMemoryLongRunning(t *testing.T) {
	t.Parallel()
	eco := ecosystem(t)
	state := t.TempDir()
	env := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": state}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan result, 1)
	go func() {
		r, _ := runCLICtx(ctx, env, "", "ls", "--watch", "--json", "--every", "200ms", "--socket-dir", eco.Dir, "--no-proc")
		done <- r
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(readMemoryFile(t, state)) == 0 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("ls --watch wrote no endpoint memory while running: %+v", <-done)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if r := <-done; r.code != 0 && r.code != 130 {
		t.Fatalf("ls --watch: %+v", r)
	}
	if len(readMemoryFile(t, state)) == 0 {
		t.Fatal("the memory file is empty after ls --watch")
	}

	state2 := t.TempDir()
	env["XDG_STATE_HOME"] = state2
	r := runCLI(t, env, "", "ls", "--json", "--socket-dir", eco.Dir, "--no-proc")
	if r.code != 0 {
		t.Fatalf("ls: %+v", r)
	}
	if len(readMemoryFile(t, state2)) == 0 {
		t.Fatal("one-shot ls wrote no endpoint memory")
	}
}
