package ipctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// NobodyUID is the uid a ForeignPeer serves as by default: another local
// user than the one running the tests (root).
const NobodyUID = 65534

// ErrNotRoot says a ForeignPeer cannot be made: only root can listen as
// another user.
var ErrNotRoot = errors.New("serving a socket as another user needs root")

// SharedDir makes a socket directory any local user may write, sticky
// (mode 1777), as /tmp/biomeos is on many machines; the caller removes it.
func SharedDir() (string, error) {
	dir, err := os.MkdirTemp("", "ps-shared")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o1777); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// ForeignPeer is a primal run by another local user: a Unix socket whose
// listener the kernel credits to UID (SO_PEERCRED) and whose file that
// user owns. It answers health.liveness, identity.get and capabilities.list
// as a level-1 primal of the Capability Wire Standard would, and any other
// method with its own params echoed back, and it records every byte it is
// sent, so a test can prove what reached it.
type ForeignPeer struct {
	Path string
	UID  uint32
	acc  *peer.Acceptor
	rec  recording
}

// ListenForeign starts a ForeignPeer at path, serving as uid (and gid uid).
// The directory of path must be writable by that user (see SharedDir).
// It needs root (ErrNotRoot otherwise).
func ListenForeign(path string, uid uint32) (*ForeignPeer, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	_ = os.Remove(path)
	ln, err := listenAs(path, uid)
	if err != nil {
		return nil, err
	}
	p := &ForeignPeer{Path: path, UID: uid}
	p.acc = peer.Serve(ln, p.serve)
	return p, nil
}

// listenAs binds and listens on path with the effective uid and gid set to
// uid on one locked thread only (credentials are per thread in Linux; the
// raw system call leaves the process's other threads alone), then takes
// root back. The kernel keeps the listener's credentials for SO_PEERCRED,
// and the file is created by uid.
func listenAs(path string, uid uint32) (ln net.Listener, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		// The thread is only unlocked once root is back: a thread that
		// could not take it back ends with this goroutine.
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			err = fmt.Errorf("setresgid: %w", e)
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), uintptr(uid), ^uintptr(0)); e != 0 {
			err = fmt.Errorf("setresuid: %w", e)
			return
		}
		ln, err = net.Listen("unix", path)
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
			err = errors.Join(err, fmt.Errorf("take root back: %w", e))
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, ^uintptr(0), 0, ^uintptr(0)); e != 0 {
			err = errors.Join(err, fmt.Errorf("take root's group back: %w", e))
			return
		}
		runtime.UnlockOSThread()
	}()
	<-done
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, fmt.Errorf("listen %s as uid %d: %w", path, uid, err)
	}
	return ln, nil
}

// Received returns what each connection sent, in order of connection.
func (p *ForeignPeer) Received() [][]byte { return p.rec.received() }

// Connections is how many connections it accepted.
func (p *ForeignPeer) Connections() int { return int(p.acc.Accepted()) }

// Close stops it and removes its socket.
func (p *ForeignPeer) Close() error {
	err := p.acc.Close()
	_ = os.Remove(p.Path)
	return err
}

func (p *ForeignPeer) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	_, r := p.rec.tee(c)
	br := bufio.NewReader(r)
	for ctx.Err() == nil {
		line, err := peer.ReadLine(br, 1<<20)
		if err != nil {
			return
		}
		line = bytes.TrimPrefix(line, []byte{0xEC, 0x01}) // the riboCipher signal
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue
		}
		var res any
		switch req.Method {
		case "health.liveness":
			res = map[string]any{"status": "alive"}
		case "identity.get":
			res = map[string]any{"primal": "impostor", "version": "1.0.0"}
		case "capabilities.list":
			res = map[string]any{"primal": "impostor", "version": "1.0.0",
				"methods": []string{"health.liveness", "identity.get", "capabilities.list", "secrets.store"}}
		default:
			res = map[string]any{"echo": req.Params}
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": res})
		if _, err := c.Write(append(out, '\n')); err != nil {
			return
		}
	}
}

// ServeForeign starts a primal served by another local user (nobody) as
// name in a fresh shared sticky directory (as /tmp/biomeos is on many
// machines), and returns it and the directory; both go when t ends. It
// skips t when the tests are not root: only root can serve as another user.
func ServeForeign(t testing.TB, name string) (fp *ForeignPeer, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("serving a socket as another user needs root")
	}
	dir, err := SharedDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fp, err = ListenForeign(filepath.Join(dir, name), NobodyUID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fp.Close() })
	return fp, dir
}
