package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/demo"
)

// TestREADMEDemoComposition runs the lines of README's "The demo's
// composition" block against a demo whose composition moves fast: the
// Neural API's metrics and deploy graph answer, and the event stream
// carries the graph's events.
func TestREADMEDemoComposition(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo: not in -short")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, string(b), "### The demo's composition")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("block lines %q", lines)
	}
	eco, err := demo.Start(context.Background(), demo.Options{Tick: 100 * time.Millisecond, Churn: time.Hour, GraphEvery: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	prelude := "primalscope() { PRIMALSCOPE_TEST_AS_MAIN=1 " + shellQuote(exe) + ` "$@"; }` + "\nDIR=" + shellQuote(eco.Dir) + "\n"
	want := []string{`"outbound"`, `"tower-composition"`, "graph_started"}
	for k, line := range lines {
		streams := strings.Contains(line, "primalscope tail")
		budget := 30 * time.Second
		if streams {
			budget = 3 * time.Second
		}
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		cmd := exec.CommandContext(ctx, sh, "-c", prelude+line)
		cmd.Dir = t.TempDir()
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
			"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "NO_COLOR=1")
		cmd.WaitDelay = 2 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if (err != nil && !streams) || !strings.Contains(stdout.String(), want[k]) {
			t.Errorf("%s: %v, want %s in\nstdout=%.600q\nstderr=%.600q", line, err, want[k], stdout.String(), stderr.String())
		}
	}
}
