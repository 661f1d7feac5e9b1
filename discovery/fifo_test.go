package discovery

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe where a manifest or registry file is expected must not hang
// discovery: it is refused at once.
func TestReadSmallFileRefusesANamedPipe(t *testing.T) {
	p := filepath.Join(t.TempDir(), "socket-registry.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := readSmallFile(p); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a named pipe was read as a file")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a named pipe hung")
	}
}
