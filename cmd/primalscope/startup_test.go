package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The completion command is skipped only where it cannot be reached: it is
// still listed by the root's help, runs by name, and is offered by shell
// completion, while a subcommand's own help is unchanged.
func TestCompletionCommandStillReachable(t *testing.T) {
	if r := runCLI(t, nil, "", "--help"); r.code != 0 || !strings.Contains(r.stdout, "completion") {
		t.Errorf("--help: exit %d, completion not listed:\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "", "help"); r.code != 0 || !strings.Contains(r.stdout, "completion") {
		t.Errorf("help: exit %d, completion not listed:\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "", "completion", "bash"); r.code != 0 || !strings.Contains(r.stdout, "bash completion") {
		t.Errorf("completion bash: exit %d\n%.300s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "", "__complete", "comp"); r.code != 0 || !strings.Contains(r.stdout, "completion") {
		t.Errorf("__complete comp: exit %d, completion not offered:\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "", "call", "--help"); r.code != 0 || !strings.Contains(r.stdout, "Call one method") {
		t.Errorf("call --help: exit %d:\n%s", r.code, r.stdout)
	}
}

func TestSkipCompletionCmd(t *testing.T) {
	for args, skip := range map[string]bool{"call x y": true, "ls": true, "": false, "help": false, "completion bash": false,
		"__complete call": false, "--timeout 1s call x y": false, "nosuch": false} {
		root := (&app{io: &stdio{}}).rootCmd()
		skipCompletionCmd(root, strings.Fields(args))
		if root.CompletionOptions.DisableDefaultCmd != skip {
			t.Errorf("%q: skipped %v, want %v", args, root.CompletionOptions.DisableDefaultCmd, skip)
		}
	}
}

// TestOwnPackagesInitLittle: every process, a one-shot call included, runs
// the package initialisation of everything linked into the binary. Our own
// packages keep theirs small: what only some commands need (regular
// expressions above all, about 60 allocations each to compile) is built on
// first use. Measured on this test binary (it links what main links) with
// the runtime's own trace of each package's init.
func TestOwnPackagesInitLittle(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	const budget = 32 // allocations in one package's init
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PKG @T ms, C ms clock, B bytes, N allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		// This package is left out: here its test files' variables are
		// initialised with it.
		if !strings.HasPrefix(f[1], "github.com/ecoPrimals/primalscope/") || f[1] == "github.com/ecoPrimals/primalscope/cmd/primalscope" {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if n > budget {
			t.Errorf("%s: %d allocations at init, budget %d (build what only some commands need on first use)", f[1], n, budget)
		}
	}
	if seen < 5 {
		t.Fatalf("the init trace named %d of our packages:\n%s", seen, out)
	}
}
