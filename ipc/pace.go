package ipc

import (
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pacedConn reads a socket at most once per pace while the peer sends
// little: after a read that took less than it offered room for (the
// socket had no more), the next read waits until pace has passed since
// it, so what arrives meanwhile is read, framed and handed on in one go
// rather than one wake-up of the reader (and of whoever it hands to) per
// message. A read that fills the room it was given is followed at once:
// a fast peer is read as fast as before, in bigger reads. The wait
// shrinks as what a read finds grows (paceBudget): what waits in the
// socket stays small, so a peer is never made to wait on a full socket
// (a Unix socket holds a few hundred small writes: 33 ms at 10,000 a
// second blocked bench/flood's flooder). Close ends a wait at once. Only
// the reading goroutine calls Read.
type pacedConn struct {
	net.Conn
	pace  time.Duration
	short time.Time // when the last short read returned (zero: it was not short)
	got   int       // what that read returned
	timer *time.Timer
	stop  chan struct{}
	once  sync.Once
	// fd is the socket when it is a Unix one, held outside the runtime's
	// netpoller (unixfd.go): no wake-up per write of the peer while the
	// reader sleeps its pace. Else raw is the socket, for waitReadable
	// (nil: it cannot wait so); peek is what it peeks into.
	fd   *unixFD
	raw  syscall.RawConn
	peek [1]byte
}

// paceBudget is about what a paced connection lets wait in the socket
// between reads: a read that found more shortens the next wait in
// proportion (8 KiB is about 90 small notifications, a third of what a
// Unix socket holds before its writer blocks).
const paceBudget = 8 << 10

// newPacedConn paces c. A Unix socket is taken out of the runtime's
// netpoller (newUnixFD: c is closed, its socket kept); if that fails, c
// is paced as it is, as any other connection.
func newPacedConn(c net.Conn, pace time.Duration) *pacedConn {
	p := &pacedConn{Conn: c, pace: pace, stop: make(chan struct{})}
	if uc, ok := c.(*net.UnixConn); ok {
		if u, err := newUnixFD(uc); err == nil {
			p.Conn, p.fd = u, u
			return p
		}
	}
	if sc, ok := c.(syscall.Conn); ok {
		p.raw, _ = sc.SyscallConn()
	}
	return p
}

func (p *pacedConn) Read(b []byte) (int, error) {
	if !p.short.IsZero() {
		wait := p.pace
		if p.got > paceBudget {
			wait = time.Duration(float64(p.pace) * paceBudget / float64(p.got))
		}
		d := wait - time.Since(p.short)
		if p.fd != nil {
			// A read deadline sooner than the pace ends the sleep (the
			// read below says it passed); one set during it waits for
			// the sleep's end, at most a pace.
			if until, ok := p.fd.untilDeadline(&p.fd.rdl); ok {
				d = min(d, until)
			}
		}
		if d > 0 {
			if p.timer == nil {
				p.timer = time.NewTimer(d)
			} else {
				p.timer.Reset(d)
			}
			select {
			case <-p.timer.C:
			case <-p.stop:
				p.timer.Stop() // the read below says the connection is closed
			}
		}
	}
	n, err := p.Conn.Read(b)
	if n < len(b) {
		p.short, p.got = time.Now(), n
	} else {
		p.short = time.Time{}
	}
	return n, err
}

func (p *pacedConn) Close() error {
	p.once.Do(func() { close(p.stop) })
	return p.Conn.Close()
}

// canWaitReadable reports whether waitReadable can wait.
func (p *pacedConn) canWaitReadable() bool { return p.fd != nil || p.raw != nil }

// waitReadable waits, holding no buffer, until the socket has something
// to read, has ended or failed (the Read that follows says which), so that
// a framer with nothing unread can let its buffer go meanwhile
// (LineFramer: the TUI's 256 listening connections, mostly silent, held
// 4 KiB each). It peeks at the socket before each wait, so what came
// before it was called is not waited for again. Only the reading
// goroutine calls it, as Read.
func (p *pacedConn) waitReadable() {
	if p.fd != nil {
		p.fd.waitReadable()
		return
	}
	_ = p.raw.Read(func(fd uintptr) bool {
		for {
			_, _, err := unix.Recvfrom(int(fd), p.peek[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			if err != unix.EINTR {
				return err != unix.EAGAIN // data, the end, or an error
			}
		}
	})
}
