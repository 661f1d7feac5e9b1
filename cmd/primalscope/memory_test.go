package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// readMemoryFile returns the records the CLI's endpoint memory holds, by
// endpoint (nil while there is none). Every record must be mode 0600.
func readMemoryFile(t *testing.T, state string) map[string]json.RawMessage {
	t.Helper()
	var out map[string]json.RawMessage
	dir := filepath.Join(state, "primalscope", ipc.RecordsDir)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return err
		}
		if info, err := d.Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", p, info.Mode(), err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var rec struct {
			Endpoint string `json:"endpoint"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[rec.Endpoint] = b
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
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
