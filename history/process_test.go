package history

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The process tests re-execute the test binary with childEnv set; TestMain
// then runs childMain instead of the tests.
const childEnv = "PRIMALSCOPE_HISTORY_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(childMain(spec))
	}
	os.Exit(m.Run())
}

// childMain records entries into a database as `primalscope call` would:
// Record, then Wait, then print. spec is "PATH COUNT WORKERS" (COUNT 0 means
// until killed). It prints each committed id on its own line.
func childMain(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		fmt.Fprintln(os.Stderr, "bad spec", spec)
		return 2
	}
	count, _ := strconv.Atoi(f[1])
	workers, _ := strconv.Atoi(f[2])
	ctx := context.Background()
	s, err := Open(ctx, f[0], Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	var out sync.Mutex
	var wg sync.WaitGroup
	failed := false
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; count == 0 || i < count; i += workers {
				e := sample(i)
				e.Target = fmt.Sprintf("child-%d", os.Getpid())
				e.Result = json.RawMessage(`{"pad":"` + strings.Repeat("r", 500) + `"}`)
				ids, err := s.Add(ctx, e)
				if err != nil {
					out.Lock()
					fmt.Fprintln(os.Stderr, "record:", err)
					failed = true
					out.Unlock()
					return
				}
				out.Lock()
				fmt.Fprintln(os.Stdout, ids[0]) // os.Stdout is unbuffered
				out.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if failed {
		return 1
	}
	return 0
}

func child(t *testing.T, ctx context.Context, path string, count, workers int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", childEnv, path, count, workers))
	cmd.Stderr = os.Stderr
	return cmd
}

func TestTwoProcessesWriteAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "history.db")
	const each = 1000
	var cmds []*exec.Cmd
	outs := make([]*strings.Builder, 2)
	for i := range outs {
		outs[i] = &strings.Builder{}
		c := child(t, ctx, path, each, 4)
		c.Stdout = outs[i]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var n, distinct int
	s.db.QueryRow("SELECT count(*), count(DISTINCT target) FROM calls").Scan(&n, &distinct)
	if n != 2*each || distinct != 2 {
		t.Errorf("%d entries from %d processes, want %d from 2", n, distinct, 2*each)
	}
	tot, _ := s.Totals(ctx)
	if tot.Rows != 2*each {
		t.Errorf("totals count %d rows", tot.Rows)
	}
	ids := map[string]bool{}
	for _, o := range outs {
		for _, l := range strings.Fields(o.String()) {
			ids[l] = true
		}
	}
	if len(ids) != 2*each {
		t.Errorf("children reported %d distinct ids, want %d", len(ids), 2*each)
	}
}

func TestKilledWriterLosesNothingCommitted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "history.db")
	c := child(t, ctx, path, 0, 3) // writes until killed
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var printed []int64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		id, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
		printed = append(printed, id)
		if len(printed) == 300 {
			// SIGKILL while the other workers are mid-write.
			if err := c.Process.Kill(); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Wait() // killed: an error is expected
	if len(printed) < 300 {
		t.Fatalf("child printed only %d ids", len(printed))
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("open after SIGKILL: %v", err)
	}
	defer s.Close()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("after SIGKILL: %v", err)
	}
	for _, id := range printed {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("id %d was printed after Wait but is gone: %v", id, err)
		}
	}
	// The store still takes writes.
	if _, err := s.Add(ctx, sample(1)); err != nil {
		t.Fatal(err)
	}
}
