package discovery

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A named pipe where a manifest or registry file is expected must not hang
// discovery: it is refused at once, and said.
func TestRegistryFileSourceRefusesANamedPipe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "socket-registry.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := (&RegistryFileSource{Paths: []string{p}}).Discover(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a named pipe was not refused: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a named pipe hung")
	}
}

// Two processes with one bus command line (a fork not yet exec'd) are one bus.
func TestProcSourceListsABusOnce(t *testing.T) {
	root := t.TempDir()
	for _, pid := range []string{"100", "101"} {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o700); err != nil {
			t.Fatal(err)
		}
		cmdline := "stdio_bus\x00--unix\x00/run/biomeos/agents.sock\x00"
		if err := os.WriteFile(filepath.Join(root, pid, "cmdline"), []byte(cmdline), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := (&ProcSource{Root: root}).Discover(context.Background())
	if err != nil || len(fs) != 1 {
		t.Fatalf("want one bus, got %+v %v", fs, err)
	}
}
