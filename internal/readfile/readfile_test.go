package readfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := Regular(p, 5)
	if err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q %v", b, err)
	}
	_, err = Regular(p, 4)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 4 || !strings.Contains(err.Error(), "larger than 4 B") {
		t.Fatalf("over the limit: %v", err)
	}
	if _, err := Regular(filepath.Join(dir, "missing"), 5); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := Regular(dir, 5); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("directory: %v", err)
	}
}

// A named pipe with no writer would block a plain open forever.
func TestNamedPipeDoesNotBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	if _, err := Regular(p, 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("fifo: %v", err)
	}
}

func TestAll(t *testing.T) {
	if b, err := All(strings.NewReader(""), "empty", 0); err != nil || len(b) != 0 {
		t.Fatalf("empty: %q %v", b, err)
	}
	r := strings.NewReader(strings.Repeat("x", 100))
	if _, err := All(r, "stdin", 10); err == nil || !strings.Contains(err.Error(), "stdin: larger than") {
		t.Fatalf("large: %v", err)
	}
	if r.Len() != 100-11 {
		t.Errorf("read %d bytes, want at most limit+1", 100-r.Len())
	}
}
