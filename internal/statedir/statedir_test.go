package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesSymlinkOutOfStateFolder(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "planted")
	if err := os.WriteFile(target, []byte("outside"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(state, "endpoints.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_CREATE | os.O_TRUNC} {
		f, _, err := Open(link, flag, 0o600)
		if err == nil {
			f.Close()
			t.Fatalf("flag %#x: opened a symlink out of the state folder", flag)
		}
		if !errors.Is(err, ErrUnsafe) {
			t.Fatalf("flag %#x: err = %v, want ErrUnsafe", flag, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "outside" {
		t.Fatalf("the outside file was changed: %q", b)
	}
}

func TestOpenRefusesFIFOWithoutBlocking(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.rec")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY} {
		if _, _, err := Open(p, flag, 0); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("flag %#x: err = %v, want ErrUnsafe naming a named pipe", flag, err)
		}
	}
}

func TestOpenMissingIsNotExist(t *testing.T) {
	if _, _, err := Open(filepath.Join(t.TempDir(), "none"), os.O_RDONLY, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
}

func TestOpenRegularFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, info, err := Open(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !info.Mode().IsRegular() {
		t.Fatalf("mode %v", info.Mode())
	}
}

// asRoot skips tests that plant another user's file: only root can.
func asRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("planting another user's file needs root")
	}
}

func TestOpenRefusesAnotherUsersFile(t *testing.T) {
	asRoot(t)
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(p, os.O_RDONLY, 0); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "uid 12345") {
		t.Fatalf("err = %v, want ErrUnsafe naming uid 12345", err)
	}
}

func TestDirRefusesSymlinkAndCreates(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	link := filepath.Join(state, "history.db.journal.d")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := Dir(link); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("Dir(symlink) = %v, want ErrUnsafe", err)
	}
	fresh := filepath.Join(state, "new.d")
	if err := Dir(fresh); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Lstat(fresh); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("created %v %v", info, err)
	}
}

func TestCheckWarnsWritableOrForeignFolder(t *testing.T) {
	dir := t.TempDir()
	if w := Check(dir); len(w) != 0 {
		t.Fatalf("a private folder warned: %q", w)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if w := Check(dir); len(w) != 1 || !strings.Contains(w[0], "world-writable") {
		t.Fatalf("warnings = %q, want one about a writable folder", w)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(dir, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if w := Check(dir); len(w) != 2 || !strings.Contains(w[0], "uid 12345") {
			t.Fatalf("warnings = %q, want one about the owner too", w)
		}
	}
}
