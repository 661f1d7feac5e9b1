package tui

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestEndToEndMockInTheTUI: a primal's calls are recorded, a mock of it is
// started in the demo's socket directory with a fault, the TUI lists the
// mock as a target, and F in its caps pane turns the fault off and on.
func TestEndToEndMockInTheTUI(t *testing.T) {
	bin := e2eBinary(t)
	s, dir := demoTmux(t, bin, 140, 40, "--tick", "500ms")
	s.waitFor("the demo's targets", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "rhizocrypt") && strings.Contains(scr, "squirrel")
	})
	ecoDirs, _ := filepath.Glob(filepath.Join(dir, "primalscope-demo-*"))
	if len(ecoDirs) != 1 {
		t.Fatalf("the demo's socket directory: %v", ecoDirs)
	}
	eco := ecoDirs[0]
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home+"/state", "XDG_CONFIG_HOME="+home+"/config", "XDG_RUNTIME_DIR="+dir)
	rec := exec.Command(bin, "--socket-dir", eco, "call", "squirrel", "ai.complete", `{"prompt":"hi"}`)
	rec.Env = env
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("recording a call: %v\n%s", err, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	mock := exec.CommandContext(ctx, bin, "--socket-dir", eco, "mock", "squirrel",
		"--listen", filepath.Join(eco, "mockai.sock"), "--fault", "ai.complete=error:-32000:busy")
	mock.Env = env
	mock.Cancel = func() error { return mock.Process.Signal(os.Interrupt) }
	mock.WaitDelay = 5 * time.Second
	out, err := mock.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	mock.Stderr = &stderr
	if err := mock.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); mock.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			ready <- sc.Text()
		}
		close(ready)
	}()
	select {
	case ep := <-ready:
		if !strings.HasSuffix(ep, "mockai.sock") {
			t.Fatalf("the mock serves on %q\n%s", ep, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the mock did not start\n%s", stderr.String())
	}

	// The TUI finds it as a target of its own.
	s.waitText("mockai", 20*time.Second)
	s.pick("mockai")
	s.send("2")                          // its capability list
	s.waitText("▸ mock", 10*time.Second) // its control method, folded under mock
	s.send("F")
	s.waitFor("the fault turned off", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "faults OFF") && strings.Contains(scr, "ai.complete=error:-32000:busy")
	})
	s.send("F")
	s.waitText("faults ON", 10*time.Second)
}
