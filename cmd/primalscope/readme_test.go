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
)

// TestREADMETryIt runs README's "Try it" block as a newcomer would: terminal
// 1 serves the demo, and every line of terminal 2 runs in a shell where
// `primalscope` is this binary (README defines it as `go run` of the clone),
// with DIR the directory the demo printed. Each line must succeed; `tail`,
// which runs until stopped, must print a heartbeat before it is stopped.
func TestREADMETryIt(t *testing.T) {
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
	lines := tryItLines(t, string(b))

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := serveDemo(t).Dir

	home := t.TempDir()
	prelude := "primalscope() { PRIMALSCOPE_TEST_AS_MAIN=1 " + shellQuote(exe) + ` "$@"; }` + "\nDIR=" + shellQuote(dir) + "\n"
	for _, line := range lines {
		t.Run(line, func(t *testing.T) {
			streams := strings.Contains(line, "primalscope tail")
			budget := 30 * time.Second
			if streams {
				budget = 3 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			defer cancel()
			cmd := exec.CommandContext(ctx, sh, "-c", prelude+line)
			cmd.Dir = t.TempDir() // not the clone: the line must not depend on where it runs
			cmd.Env = append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"),
				"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "NO_COLOR=1")
			cmd.WaitDelay = 2 * time.Second
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if streams {
				if !strings.Contains(stdout.String(), "beardog") {
					t.Fatalf("tail printed nothing from the demo in %v\nstdout=%.400q\nstderr=%.400q", budget, stdout.String(), stderr.String())
				}
				return
			}
			// check --level N exits 1 when a target is below N, as README
			// says; the demo has such targets on purpose.
			gate := strings.Contains(line, "check") && strings.Contains(line, "--level") &&
				cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 1 && strings.Contains(stdout.String(), "(below ")
			if err != nil && !gate {
				t.Fatalf("%v\nstdout=%.600q\nstderr=%.600q", err, stdout.String(), stderr.String())
			}
			if strings.TrimSpace(stdout.String()) == "" {
				t.Fatalf("printed nothing\nstderr=%.600q", stderr.String())
			}
		})
	}
}

// tryItLines is terminal 2 of README's "Try it" block: the commands after
// the line defining primalscope and DIR (which the test defines itself).
// readmeBlock returns the first sh block after heading in README's text.
func readmeBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, heading)
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	sec := readme[i:]
	start := strings.Index(sec, "```sh\n")
	if start < 0 {
		t.Fatalf("%q has no sh block", heading)
	}
	block := sec[start+len("```sh\n"):]
	return block[:strings.Index(block, "```")]
}

func tryItLines(t *testing.T, readme string) []string {
	t.Helper()
	block := readmeBlock(t, readme, "## Try it")
	var lines []string
	inTerm2 := false
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "# terminal 2"):
			inTerm2 = true
			continue
		case !inTerm2, l == "", strings.HasPrefix(l, "#"),
			strings.HasPrefix(l, "primalscope()"), strings.HasPrefix(l, "DIR="):
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) < 5 {
		t.Fatalf("terminal 2 of Try it has %d commands: %q", len(lines), lines)
	}
	if !strings.Contains(block, `primalscope() { go run ./cmd/primalscope "$@"; }`) {
		t.Error("Try it should run the clone with go run (nothing installed)")
	}
	return lines
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
