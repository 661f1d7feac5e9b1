package discovery

import (
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// knock reports whether a sweep may keep carry, the last probe of a live
// target, without asking it anything: the target is a Unix socket, its
// last probe was a full one that found it live, it last answered
// health.liveness (asked) less than within ago, the socket file is the
// one that probe reached (same device, inode and mtime: a primal that
// restarts binds a new one), and a connection to it is accepted at once. The connection is
// closed unused: nothing is sent, so no peer is asked to work and no
// family's traffic goes out in cleartext.
//
// What it finds: a primal that exits removes its socket (the watcher's
// fsnotify sweep lists it gone); one that dies without removing it leaves
// a file nobody listens on, and the connect is refused at once, so the
// target gets a probe of its own this very sweep (as every sweep did
// before). What it cannot find is a peer that hangs while its listener
// still accepts: the liveness round does (a watcher's slices, each target
// once every 2 × HealthEvery; past within, the sweep asks it itself). Everything else (a refusal, a full backlog, a changed or
// missing file, a target judged anything but live) is probed as before.
func knock(spec ProbeSpec, carry *Probe, asked time.Time, within time.Duration) bool {
	ep := spec.Endpoint
	if within <= 0 || spec.Full || carry.State != StateLive || !carry.Full || carry.Incomplete ||
		ep.Transport != ipc.Unix || ep.Path == "" || !carry.stamp.ok || time.Since(asked) >= within {
		return false
	}
	if stampOf(ep) != carry.stamp {
		return false
	}
	return connectOnly(ep.Path) == nil
}

// connectOnly connects to the Unix socket at path and hangs up. The socket
// does not block: a full backlog fails (EAGAIN) rather than wait.
func connectOnly(path string) error {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	return syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
}
