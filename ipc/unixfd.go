package ipc

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// unixFD is a connected Unix stream socket held OUTSIDE the Go runtime's
// netpoller, for a paced connection (pacedConn). A net.UnixConn stays
// registered in the runtime's epoll (edge-triggered) for its whole life,
// so every write of the peer wakes the thread blocked in epoll_pwait,
// even while the reader sleeps its pace and will not read for 10 ms: a
// flood of 10,000 small writes a second cost 16,000 epoll_pwait and
// 20,900 context switches in 8 s in a toy, against 1,523 and 7,248 for
// the same reads on a descriptor the runtime does not poll, and about a
// fifth of the TUI's samples under bench/flood.
//
// unixFD reads and writes its descriptor without blocking. Only when a
// read finds nothing (or a write finds the socket full) does it wait, and
// then on a temporary duplicate of the descriptor made a pollable
// os.File for that one wait and closed after it: the socket is in the
// runtime's epoll only while its reader has nothing to read, so a busy
// paced connection costs no wake-up per write of its peer.
//
// Deadlines are those of a net.Conn (a deadline in the past aborts a
// read or write at once, one set during a wait cuts it); Close from any
// goroutine ends every wait and every later call returns net.ErrClosed.
type unixFD struct {
	// fdmu is read-held around every syscall on fd and write-held by
	// Close to close it: a closed descriptor's number may be reused by
	// another open at once, so it is never used after Close.
	fdmu sync.RWMutex
	fd   int // -1 once closed

	rmu, wmu sync.Mutex // one Read, one Write at a time, as a net.Conn

	laddr, raddr net.Addr

	// mu guards the waits' registrations and the deadlines' changes:
	// Close closes the files being waited on, a new deadline is given
	// to the wait under way.
	mu           sync.Mutex
	closed       atomic.Bool
	rwait, wwait *os.File
	rdl, wdl     atomic.Int64 // deadline in ns after base (0: none)
	// base is when u was made, with its monotonic reading: a deadline is
	// kept as its distance from base (time.Sub, which saturates), so one
	// too far ahead for UnixNano is not taken for one long past, and a
	// step of the wall clock moves no deadline, as on a net.Conn.
	base time.Time

	peek [1]byte
}

// newUnixFD takes c's socket out of the runtime's netpoller: it keeps a
// duplicate of c's descriptor (taken through Control, which, unlike
// File or Fd, leaves the socket non-blocking) and closes c, which removes
// c's descriptor from the runtime's epoll; the socket lives on through
// the duplicate. Whatever was checked on c (its peer's credentials) holds
// for the duplicate: it is the same socket. On an error c is untouched.
func newUnixFD(c *net.UnixConn) (*unixFD, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) {
		fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	// The file description is shared and the runtime made it
	// non-blocking; said again in case someone made it blocking (a
	// blocking read could not be ended by Close).
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	u := &unixFD{fd: fd, laddr: c.LocalAddr(), raddr: c.RemoteAddr(), base: time.Now()}
	_ = c.Close()
	return u, nil
}

func (u *unixFD) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "unix", Source: u.laddr, Addr: u.raddr, Err: err}
}

// pastDeadline reports whether the deadline dl holds has passed.
func (u *unixFD) pastDeadline(dl *atomic.Int64) bool {
	d := dl.Load()
	return d != 0 && time.Since(u.base) >= time.Duration(d)
}

// untilDeadline is how long until the deadline dl holds, ok false when
// there is none.
func (u *unixFD) untilDeadline(dl *atomic.Int64) (time.Duration, bool) {
	d := dl.Load()
	if d == 0 {
		return 0, false
	}
	return time.Duration(d) - time.Since(u.base), true
}

// errFDClosed is what the syscall helpers return once Close has run.
var errFDClosed = errors.New("closed")

func (u *unixFD) read(b []byte) (int, error) {
	u.fdmu.RLock()
	defer u.fdmu.RUnlock()
	if u.fd < 0 {
		return 0, errFDClosed
	}
	n, err := unix.Read(u.fd, b)
	if err != nil {
		n = 0
	}
	return n, err
}

func (u *unixFD) write(b []byte) (int, error) {
	u.fdmu.RLock()
	defer u.fdmu.RUnlock()
	if u.fd < 0 {
		return 0, errFDClosed
	}
	n, err := unix.Write(u.fd, b)
	if err != nil {
		n = 0
	}
	return n, err
}

// peeked reports whether the socket has something for a read to return
// (data, its end, or an error) without taking it, or errFDClosed.
func (u *unixFD) peeked() (bool, error) {
	u.fdmu.RLock()
	defer u.fdmu.RUnlock()
	if u.fd < 0 {
		return false, errFDClosed
	}
	return readablePeek(u.fd, u.peek[:]), nil
}

// readablePeek reports whether a read of fd would not block.
func readablePeek(fd int, b []byte) bool {
	for {
		_, _, err := unix.Recvfrom(fd, b, unix.MSG_PEEK|unix.MSG_DONTWAIT)
		if err != unix.EINTR {
			return err != unix.EAGAIN
		}
	}
}

// writablePoll reports whether a write to fd would not block.
func writablePoll(fd int) bool {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(pfd[:], 0)
		if err != unix.EINTR {
			return err != nil || n > 0 // an error: the write says which
		}
	}
}

func (u *unixFD) Read(b []byte) (int, error) {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	for {
		if u.closed.Load() {
			return 0, u.opErr("read", net.ErrClosed)
		}
		if u.pastDeadline(&u.rdl) {
			return 0, u.opErr("read", os.ErrDeadlineExceeded)
		}
		if len(b) == 0 {
			return 0, nil
		}
		n, err := u.read(b)
		switch {
		case err == nil && n > 0:
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := u.wait(false); err != nil {
				return 0, err
			}
		case err == errFDClosed:
			return 0, u.opErr("read", net.ErrClosed)
		default:
			return 0, u.opErr("read", os.NewSyscallError("read", err))
		}
	}
}

func (u *unixFD) Write(b []byte) (int, error) {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	done := 0
	for {
		if u.closed.Load() {
			return done, u.opErr("write", net.ErrClosed)
		}
		if u.pastDeadline(&u.wdl) {
			return done, u.opErr("write", os.ErrDeadlineExceeded)
		}
		if done == len(b) {
			return done, nil
		}
		n, err := u.write(b[done:])
		done += n
		switch {
		case err == nil, err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := u.wait(true); err != nil {
				return done, err
			}
		case err == errFDClosed:
			return done, u.opErr("write", net.ErrClosed)
		default:
			return done, u.opErr("write", os.NewSyscallError("write", err))
		}
	}
}

// waitReadable waits until a read would not block (data, the end, an
// error), the read deadline passes or the connection is closed; the Read
// that follows says which. Only the reading goroutine calls it.
func (u *unixFD) waitReadable() {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	for {
		ok, err := u.peeked()
		if ok || err != nil || u.wait(false) != nil {
			return
		}
	}
}

// wait waits until the socket is readable (write false) or writable, on
// a duplicate of its descriptor registered with the runtime's poller for
// this wait only. It returns nil when the socket is ready (or may be: the
// syscall that follows tells), a *net.OpError of net.ErrClosed after
// Close, of os.ErrDeadlineExceeded once the deadline passes.
func (u *unixFD) wait(write bool) error {
	op, slot, dl := "read", &u.rwait, &u.rdl
	if write {
		op, slot, dl = "write", &u.wwait, &u.wdl
	}
	u.fdmu.RLock()
	if u.fd < 0 {
		u.fdmu.RUnlock()
		return u.opErr(op, net.ErrClosed)
	}
	nfd, err := unix.FcntlInt(uintptr(u.fd), unix.F_DUPFD_CLOEXEC, 0)
	u.fdmu.RUnlock()
	if err != nil {
		return u.opErr(op, os.NewSyscallError("fcntl", err))
	}
	// Non-blocking (the description is shared): NewFile registers it
	// with the poller, Close below takes it out again.
	f := os.NewFile(uintptr(nfd), "unix")
	u.mu.Lock()
	if u.closed.Load() {
		u.mu.Unlock()
		f.Close()
		return u.opErr(op, net.ErrClosed)
	}
	*slot = f
	if d := dl.Load(); d != 0 {
		setFileDeadline(f, write, u.base.Add(time.Duration(d)))
	}
	u.mu.Unlock()

	rc, err := f.SyscallConn()
	if err == nil {
		if write {
			err = rc.Write(func(fd uintptr) bool { return writablePoll(int(fd)) })
		} else {
			// u.peek: only the reading goroutine waits to read (rmu).
			err = rc.Read(func(fd uintptr) bool { return readablePeek(int(fd), u.peek[:]) })
		}
	}
	u.mu.Lock()
	*slot = nil
	u.mu.Unlock()
	f.Close()
	switch {
	case err == nil:
		return nil
	case u.closed.Load():
		return u.opErr(op, net.ErrClosed)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return u.opErr(op, os.ErrDeadlineExceeded)
	}
	return u.opErr(op, err)
}

func setFileDeadline(f *os.File, write bool, t time.Time) {
	if write {
		_ = f.SetWriteDeadline(t)
	} else {
		_ = f.SetReadDeadline(t)
	}
}

// setDeadline sets a deadline and gives it to the wait under way.
func (u *unixFD) setDeadline(write bool, t time.Time) {
	d := int64(0)
	if !t.IsZero() {
		// Before u was made is as past as just after it.
		d = max(int64(t.Sub(u.base)), 1)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if write {
		u.wdl.Store(d)
		if u.wwait != nil {
			setFileDeadline(u.wwait, true, t)
		}
	} else {
		u.rdl.Store(d)
		if u.rwait != nil {
			setFileDeadline(u.rwait, false, t)
		}
	}
}

func (u *unixFD) SetDeadline(t time.Time) error {
	if u.closed.Load() {
		return u.opErr("set", net.ErrClosed)
	}
	u.setDeadline(false, t)
	u.setDeadline(true, t)
	return nil
}

func (u *unixFD) SetReadDeadline(t time.Time) error {
	if u.closed.Load() {
		return u.opErr("set", net.ErrClosed)
	}
	u.setDeadline(false, t)
	return nil
}

func (u *unixFD) SetWriteDeadline(t time.Time) error {
	if u.closed.Load() {
		return u.opErr("set", net.ErrClosed)
	}
	u.setDeadline(true, t)
	return nil
}

func (u *unixFD) LocalAddr() net.Addr  { return u.laddr }
func (u *unixFD) RemoteAddr() net.Addr { return u.raddr }

// Close ends every wait at once (it closes the files waited on) and
// closes the socket once no syscall uses its descriptor. A second Close
// returns net.ErrClosed, as a net.Conn's does.
func (u *unixFD) Close() error {
	u.mu.Lock()
	if u.closed.Load() {
		u.mu.Unlock()
		return u.opErr("close", net.ErrClosed)
	}
	u.closed.Store(true)
	for _, f := range [...]*os.File{u.rwait, u.wwait} {
		if f != nil {
			f.Close()
		}
	}
	u.mu.Unlock()
	u.fdmu.Lock()
	defer u.fdmu.Unlock()
	err := unix.Close(u.fd)
	u.fd = -1
	if err != nil {
		return u.opErr("close", os.NewSyscallError("close", err))
	}
	return nil
}
