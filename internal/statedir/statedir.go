// Package statedir guards what primalscope keeps in its state folder (the
// history database, its journal, the endpoint memory). That folder is input
// like any other: another local user, or a program of the user's that went
// wrong, may have planted a symlink, a named pipe or a file of their own in
// it. So nothing below the state folder is followed through a symbolic
// link, nothing but a regular file is read as a file, and a file or folder
// that is neither the user's nor root's is refused. The state folder itself
// may be a link the user made (a dotfiles setup); it is only checked, and
// what is wrong with it is said as a warning.
//
// It is the one source of these checks for every state file; like
// internal/readfile it sits below ipc.
package statedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// ErrUnsafe is matched (errors.Is) by every *UnsafeError.
var ErrUnsafe = errors.New("unsafe state file")

// UnsafeError says why a path in the state folder was refused: it is a
// symbolic link, not a regular file (or not a directory where one belongs),
// or owned by another user. Nothing was read from or written to it.
type UnsafeError struct {
	Path string
	Why  string
}

func (e *UnsafeError) Error() string { return e.Path + ": " + e.Why }

// Is makes errors.Is(err, ErrUnsafe) true.
func (e *UnsafeError) Is(target error) bool { return target == ErrUnsafe }

// OwnedBy reports whether uid may own what is in the state folder: the
// user or root. It is the one owner rule, for callers that stat with
// system calls of their own (the endpoint memory's openat walk).
func OwnedBy(uid uint32) bool { return int(uid) == os.Getuid() || uid == 0 }

// owned reports whether info belongs to the user or to root.
func owned(info fs.FileInfo) (uid uint32, ok bool) {
	st, isUnix := info.Sys().(*syscall.Stat_t)
	if !isUnix {
		return 0, true
	}
	return st.Uid, OwnedBy(st.Uid)
}

// check refuses info (the Lstat of path) when it is a link, not of the
// wanted kind, or another user's.
func check(path string, info fs.FileInfo, dir bool) error {
	switch m := info.Mode(); {
	case m&fs.ModeSymlink != 0:
		return &UnsafeError{Path: path, Why: "is a symbolic link (never followed inside the state folder)"}
	case dir && !m.IsDir():
		return &UnsafeError{Path: path, Why: "is not a directory"}
	case !dir && !m.IsRegular():
		return &UnsafeError{Path: path, Why: "is not a regular file (" + kind(m) + ")"}
	}
	if uid, ok := owned(info); !ok {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("belongs to uid %d, not to you", uid)}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// Check returns warnings about the state folder dir, which does not stop
// its use: it is group- or world-writable, or it is neither the user's nor
// root's. dir itself is followed if it is a link. A missing dir, or one
// that cannot be examined, gives no warning (creating or opening what is in
// it says what is wrong).
func Check(dir string) []string {
	info, err := os.Stat(dir)
	if err != nil || !info.IsDir() {
		return nil
	}
	var out []string
	if uid, ok := owned(info); !ok {
		out = append(out, fmt.Sprintf("state folder %s belongs to uid %d, not to you: another user can change what primalscope remembers", dir, uid))
	}
	if info.Mode().Perm()&0o022 != 0 {
		out = append(out, fmt.Sprintf("state folder %s is group- or world-writable (mode %04o): another user can plant files in it; run chmod 700 on it", dir, info.Mode().Perm()))
	}
	return out
}

// Dir makes sure dir, a folder inside the state folder, is a real
// directory of the user's, creating it (mode 0700 whatever the umask) when
// it is missing; its parent must exist. A link, a non-directory or another
// user's directory at dir is an *UnsafeError.
func Dir(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if info, err = os.Lstat(dir); err != nil {
			return err
		}
		if err := check(dir, info, true); err != nil {
			return err
		}
		return os.Chmod(dir, 0o700)
	}
	if err != nil {
		return err
	}
	return check(dir, info, true)
}

// CheckFile refuses path, a file inside the state folder, when it is a
// link, not a regular file, or another user's (an *UnsafeError). A missing
// file is no error: nothing was planted.
func CheckFile(path string) error {
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return check(path, info, false)
}

// Open opens path, a file inside the state folder, with flag (os.O_*; it
// adds O_NOFOLLOW and O_NONBLOCK) and perm for a file it creates. A link
// at path is never followed, and a file that is not regular (a named pipe
// is not opened at all) or is another user's is refused: both are an
// *UnsafeError. A missing file (without O_CREATE) is fs.ErrNotExist as it
// is. info is the file's state when opened. The caller closes f.
func Open(path string, flag int, perm fs.FileMode) (f *os.File, info fs.FileInfo, err error) {
	// Not even opened when it is known not to be a file: opening a FIFO
	// for writing blocks, opening some devices acts on them.
	if err := CheckFile(path); err != nil {
		return nil, nil, err
	}
	f, err = os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, &UnsafeError{Path: path, Why: "is a symbolic link (never followed inside the state folder)"}
	}
	if err != nil {
		return nil, nil, err
	}
	info, err = f.Stat()
	if err == nil {
		err = check(path, info, false)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info, nil
}

// ReadFile reads the file name (slash-separated, relative to root, the
// state folder or a folder in it) whole, at most limit bytes (more is a
// *readfile.TooLargeError). It is the rule of Open for a path of several
// steps: below root no symbolic link is followed at any step (each folder
// is opened from the one above with O_NOFOLLOW, so a folder swapped for a
// link in a race is not followed either), and each folder must be the
// user's or root's (in another user's folder the files could be swapped
// for older ones of the user's). The file must be a regular file of the
// user's or root's, checked before it is opened (opening some devices acts
// on them) and again once open, and it is opened O_NONBLOCK (a named pipe
// put there in a race is not waited on). A refusal is an *UnsafeError; a
// missing file or folder matches fs.ErrNotExist. root itself is followed:
// a user's own link to the state folder is fine. A name with a "..", "."
// or empty step is refused (*UnsafeError) before anything is opened.
func ReadFile(root, name string, limit int64) ([]byte, error) {
	b, _, err := ReadFileStat(root, name, limit)
	return b, err
}

// ReadFileStat is ReadFile that also returns the state of the file read
// (fstat of the open file, checked as ReadFile checks it): a caller that
// keeps what it read may compare it with the file's state later (device,
// inode, size, change time) and read again only when it differs.
func ReadFileStat(root, name string, limit int64) ([]byte, unix.Stat_t, error) {
	var st unix.Stat_t
	b, err := readFile(root, name, limit, &st)
	return b, st, err
}

func readFile(root, name string, limit int64, st *unix.Stat_t) ([]byte, error) {
	parts := strings.Split(name, "/")
	for _, p := range parts {
		// openat(dfd, "..") leaves the folder whatever O_NOFOLLOW says; an
		// empty step (a leading, doubled or trailing slash) or "." names no
		// file of the state folder either.
		if p == "" || p == "." || p == ".." {
			return nil, &UnsafeError{Path: filepath.Join(root, filepath.FromSlash(name)),
				Why: fmt.Sprintf("the name %q has a step %q (only plain names below the state folder are read)", name, p)}
		}
	}
	dfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	for i, p := range parts[:len(parts)-1] {
		fd, err := unix.Openat(dfd, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(dfd)
		at := filepath.Join(root, filepath.Join(parts[:i+1]...))
		switch {
		case err == unix.ELOOP || err == unix.ENOTDIR:
			// O_NOFOLLOW|O_DIRECTORY on a link: ELOOP, or ENOTDIR on
			// some kernels; a file where a folder belongs: ENOTDIR.
			var st unix.Stat_t
			if unix.Lstat(at, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return nil, &UnsafeError{Path: at, Why: "is a symbolic link (never followed inside the state folder)"}
			}
			return nil, &UnsafeError{Path: at, Why: "is not a directory"}
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: at, Err: err}
		}
		dfd = fd
		var st unix.Stat_t
		if err := unix.Fstat(dfd, &st); err != nil {
			unix.Close(dfd)
			return nil, &fs.PathError{Op: "fstat", Path: at, Err: err}
		}
		if !OwnedBy(st.Uid) {
			unix.Close(dfd)
			return nil, &UnsafeError{Path: at, Why: fmt.Sprintf("belongs to uid %d, not to you", st.Uid)}
		}
	}
	path := filepath.Join(root, name)
	last := parts[len(parts)-1]
	if err := unix.Fstatat(dfd, last, st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		unix.Close(dfd)
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	if err := OwnRegular(path, st); err != nil {
		unix.Close(dfd)
		return nil, err
	}
	fd, err := unix.Openat(dfd, last, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	unix.Close(dfd)
	if err == unix.ELOOP {
		return nil, &UnsafeError{Path: path, Why: "is a symbolic link (never followed inside the state folder)"}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if err := unix.Fstat(fd, st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if err := OwnRegular(path, st); err != nil {
		return nil, err
	}
	return readfile.All(f, path, limit)
}

// OwnRegular refuses, with an *UnsafeError, st (the state of path, not
// followed) unless it is a regular file of the user's or root's.
func OwnRegular(path string, st *unix.Stat_t) error {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return &UnsafeError{Path: path, Why: "is a symbolic link (never followed inside the state folder)"}
	default:
		return &UnsafeError{Path: path, Why: "is not a regular file (" + kind(unixKind(st.Mode)) + ")"}
	}
	if !OwnedBy(st.Uid) {
		return &UnsafeError{Path: path, Why: fmt.Sprintf("belongs to uid %d, not to you", st.Uid)}
	}
	return nil
}

// unixKind is the fs.FileMode type bits of a stat mode.
func unixKind(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
