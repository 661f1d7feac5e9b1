package main

import (
	"strings"
	"testing"
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
