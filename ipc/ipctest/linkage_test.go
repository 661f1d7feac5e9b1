package ipctest_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBinaryLinksNoFakes holds the line between the simulated ecosystem
// (internal/peer, which the demo serves) and the test fakes: the
// primalscope binary must not link this package, nor the standard library's
// testing package that test code brings along.
func TestBinaryLinksNoFakes(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const binary = "github.com/ecoPrimals/primalscope/cmd/primalscope"
	cmd := exec.CommandContext(ctx, gotool, "list", "-deps", binary)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Fatalf("go list -deps %s did not finish in time", binary)
		}
		t.Fatalf("go list -deps %s: %v\n%s", binary, err, stderr.Bytes())
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	if !deps[binary] || !deps["github.com/ecoPrimals/primalscope/internal/peer"] {
		t.Fatalf("go list -deps %s did not list the binary and the simulated peers it serves:\n%s", binary, out)
	}
	for _, p := range []string{"github.com/ecoPrimals/primalscope/ipc/ipctest", "testing"} {
		if deps[p] {
			t.Errorf("the primalscope binary links %s (test code); the demo's peers belong in internal/peer", p)
		}
	}
}
