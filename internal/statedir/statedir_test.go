package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestOwnRegularIsUnsafe: a file that is no regular file, or another
// user's, is refused with an error that matches ErrUnsafe (the endpoint
// memory's records returned plain errors once).
func TestOwnRegularIsUnsafe(t *testing.T) {
	me := uint32(os.Getuid())
	other := uint32(65534)
	if me == other {
		other = 65533
	}
	for _, tc := range []struct {
		what string
		st   unix.Stat_t
	}{
		{"a named pipe", unix.Stat_t{Mode: unix.S_IFIFO | 0o600, Uid: me}},
		{"a directory", unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: me}},
		{"a symbolic link", unix.Stat_t{Mode: unix.S_IFLNK | 0o777, Uid: me}},
		{"another user's file", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: other}},
	} {
		err := OwnRegular("endpoints.d/ab/rec.json", &tc.st)
		if !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: %v, want an error matching ErrUnsafe", tc.what, err)
		}
	}
	if err := OwnRegular("endpoints.d/ab/rec.json", &unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me}); err != nil {
		t.Errorf("the user's regular file: %v", err)
	}
}

// TestReadFileFollowsNoLinkBelowTheRoot: ReadFile reads a file some
// folders below the root, and refuses (ErrUnsafe) a link at any step
// below it, a named pipe (without waiting on it) and a file larger than
// the limit; the root itself may be a link of the user's.
func TestReadFileFollowsNoLinkBelowTheRoot(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(state, "d", "ab"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "d", "ab", "r.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(state, "d/ab/r.json", 64); err != nil || string(b) != "{}" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	rootLink := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(state, rootLink); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(rootLink, "d/ab/r.json", 64); err != nil || string(b) != "{}" {
		t.Fatalf("through the user's link to the root: %q, %v", b, err)
	}
	if _, err := ReadFile(state, "d/ab/r.json", 1); err == nil {
		t.Fatal("a file over the limit was read")
	}
	if _, err := ReadFile(state, "d/ab/none.json", 64); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v, want fs.ErrNotExist", err)
	}

	// Planted: a folder that is a link, a file that is a link, a FIFO.
	if err := os.MkdirAll(filepath.Join(outside, "ab"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "ab", "r.json"), []byte(`{"planted":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(state, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "ab"), filepath.Join(state, "d", "cd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "ab", "r.json"), filepath.Join(state, "d", "ab", "l.json")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"linked/ab/r.json", "d/cd/r.json", "d/ab/l.json"} {
		b, err := ReadFile(state, name, 64)
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "symbolic link") {
			t.Errorf("%s: %q, %v; want ErrUnsafe naming a symbolic link", name, b, err)
		}
	}
	fifo := filepath.Join(state, "d", "ab", "p.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(state, "d/ab/p.json", 64); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("a named pipe: %v, want ErrUnsafe naming a named pipe", err)
		}
	case <-time.After(5 * time.Second):
		w, _ := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0) // let the reader go
		if w != nil {
			w.Close()
		}
		t.Fatal("ReadFile waited on a named pipe")
	}
}

// TestReadFileRefusesDotSteps: a name with a "..", "." or empty step is
// refused (ErrUnsafe) before anything is opened: openat(dfd, "..") leaves
// the state folder, whatever O_NOFOLLOW says. "../outside/r.json" read a
// file beside the state folder.
func TestReadFileRefusesDotSteps(t *testing.T) {
	parent := t.TempDir()
	state := filepath.Join(parent, "state")
	for _, d := range []string{filepath.Join(state, "d"), filepath.Join(parent, "outside")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(parent, "outside", "r.json"), filepath.Join(state, "d", "r.json")} {
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"../outside/r.json", "d/../../outside/r.json", "./d/r.json", "d/./r.json",
		"d//r.json", "/d/r.json", "d/r.json/", "", ".", ".."} {
		if b, err := ReadFile(state, name, 64); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%q: %q, %v; want ErrUnsafe", name, b, err)
		}
	}
	if b, err := ReadFile(state, "d/r.json", 64); err != nil || string(b) != "{}" {
		t.Fatalf("d/r.json: %q, %v", b, err)
	}
}
