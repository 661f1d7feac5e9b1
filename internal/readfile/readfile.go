// Package readfile reads the small files primalscope is given or keeps (the
// config file, themes, the family seed, manifests and registries, the
// endpoint memory, the completion cache): whole, bounded in size, and
// without blocking on a named pipe or a device left where a file should be,
// which would otherwise hang the command past every timeout. It is the one
// source of that; like internal/human it sits below ipc.
package readfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/human"
)

// ErrNotRegular is returned (wrapped with the path) for a path that names
// something other than a regular file: a named pipe, a socket, a device or
// a directory. Nothing was read from it.
var ErrNotRegular = errors.New("not a regular file")

// TooLargeError says a file holds more than Limit bytes.
type TooLargeError struct {
	Name  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s", e.Name, human.Bytes(e.Limit))
}

// Open opens path for reading without blocking and refuses anything but a
// regular file (ErrNotRegular). The error of the open itself is returned as
// it is, so errors.Is(err, fs.ErrNotExist) tells a missing file. The caller
// closes the file; info is its state when opened (mode, size).
func Open(path string) (f *os.File, info fs.FileInfo, err error) {
	// Not even opened when it is known not to be a file: opening some
	// devices acts on them.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	info, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return f, info, nil
}

// Regular reads the regular file at path whole: at most limit bytes, or a
// *TooLargeError. It fails as Open does for a missing file or one that is
// not regular.
func Regular(path string, limit int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return All(f, path, limit)
}

// All reads r to its end: at most limit bytes, or a *TooLargeError naming
// name. It reads at most limit+1 bytes from r.
func All(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return b, nil
}
