package ipc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sockInode is the inode of c's socket (what its descriptors and their
// duplicates link to in /proc/self/fd).
func sockInode(t *testing.T, c net.Conn) uint64 {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var link string
	raw.Control(func(fd uintptr) { link, err = os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)) })
	if err != nil {
		t.Fatal(err)
	}
	var ino uint64
	if _, err := fmt.Sscanf(link, "socket:[%d]", &ino); err != nil {
		t.Fatalf("%s: %v", link, err)
	}
	return ino
}

// polled reports whether the socket of inode ino is registered in an
// epoll instance of this process (the runtime's netpoller): every
// eventpoll descriptor's fdinfo lists what it watches with its inode.
func polled(t *testing.T, ino uint64) bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, e := range ents {
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || link != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		seen = true
		for _, line := range strings.Split(string(info), "\n") {
			if !strings.HasPrefix(line, "tfd:") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if h, ok := strings.CutPrefix(f, "ino:"); ok {
					if v, err := strconv.ParseUint(h, 16, 64); err == nil && v == ino {
						return true
					}
				}
			}
		}
	}
	if !seen {
		t.Fatal("no epoll instance in /proc/self/fd: the probe cannot tell")
	}
	return false
}

// TestPacedUnixConnLeavesThePoller: a paced Unix connection's socket is
// not in the runtime's epoll while its reader has something to read, so
// a peer flooding it with small writes wakes no thread per write (the
// TUI under bench/flood spent about a fifth of its samples on those
// wake-ups); it is registered only while a read waits on a quiet peer,
// and every byte still arrives in order. Before unixFD a paced
// connection's socket was registered for its whole life.
func TestPacedUnixConnLeavesThePoller(t *testing.T) {
	client, server := unixPair(t)
	ino := sockInode(t, client)
	if !polled(t, ino) {
		t.Fatal("a net.UnixConn's socket is not seen in the runtime's epoll: the probe does not work")
	}
	p := paced(client, 5*time.Millisecond)
	defer p.Close()
	if polled(t, ino) {
		t.Fatal("a paced Unix connection's socket is in the runtime's epoll before any read")
	}

	// A flood of 100-byte writes, each numbered.
	const n = 20000
	go func() {
		line := make([]byte, 100)
		for i := range n {
			copy(line, fmt.Sprintf("%08d", i))
			for j := 8; j < 99; j++ {
				line[j] = 'x'
			}
			line[99] = '\n'
			if _, err := server.Write(line); err != nil {
				return
			}
		}
	}()
	br := bufio.NewReaderSize(&checkEach{p: p, t: t, ino: ino}, 64<<10)
	for i := range n {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if want := fmt.Sprintf("%08d", i); !strings.HasPrefix(l, want) || len(l) != 100 {
			t.Fatalf("line %d is %q", i, l)
		}
	}

	// A read waiting on a quiet peer registers the socket (the probe sees
	// it), and lets it go once it has read.
	done := make(chan error, 1)
	go func() {
		b := make([]byte, 16)
		_, err := p.Read(b)
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for !polled(t, ino) {
		if time.Now().After(deadline) {
			t.Fatal("a read waiting on a quiet peer is not in the runtime's epoll")
		}
		time.Sleep(time.Millisecond)
	}
	server.Write([]byte("end\n"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if polled(t, ino) {
		t.Fatal("the socket stays in the runtime's epoll after the wait")
	}
}

// checkEach reads p and checks, after each read that returned data, that
// the socket is not in the runtime's epoll (the reading goroutine is the
// only one that waits, and it is here, not waiting).
type checkEach struct {
	p     net.Conn
	t     *testing.T
	ino   uint64
	reads int
}

func (c *checkEach) Read(b []byte) (int, error) {
	n, err := c.p.Read(b)
	c.reads++
	if n > 0 && c.reads%16 == 1 && polled(c.t, c.ino) {
		c.t.Fatalf("read %d: the paced socket is in the runtime's epoll while its peer floods it", c.reads)
	}
	return n, err
}

// TestPacedUnixCloseEndsEveryWait: Close from another goroutine ends at
// once a read in its pacing sleep, one waiting on a quiet peer and a
// write blocked on a peer that does not read, each with net.ErrClosed;
// later calls say net.ErrClosed too, and a second Close does not close a
// descriptor again.
func TestPacedUnixCloseEndsEveryWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(p net.Conn, server net.Conn) error
	}{
		{"pacing sleep", func(p, server net.Conn) error {
			server.Write([]byte("a\n"))
			b := make([]byte, 64)
			if _, err := p.Read(b); err != nil { // short: the next read sleeps an hour
				return fmt.Errorf("first read: %w", err)
			}
			_, err := p.Read(b)
			return err
		}},
		{"quiet peer", func(p, _ net.Conn) error {
			_, err := p.Read(make([]byte, 64))
			return err
		}},
		{"peer not reading", func(p, _ net.Conn) error {
			b := make([]byte, 64<<10)
			for {
				if _, err := p.Write(b); err != nil {
					return err
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := unixPair(t)
			p := paced(client, time.Hour)
			errc := make(chan error, 1)
			go func() { errc <- tc.run(p, server) }()
			time.Sleep(50 * time.Millisecond)
			select {
			case err := <-errc:
				t.Fatalf("returned before Close: %v", err)
			default:
			}
			start := time.Now()
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-errc:
				if !errors.Is(err, net.ErrClosed) {
					t.Fatalf("after Close: %v, want net.ErrClosed", err)
				}
				if d := time.Since(start); d > time.Second {
					t.Fatalf("Close took %v to end the wait", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not end the wait")
			}
			if _, err := p.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read after Close: %v, want net.ErrClosed", err)
			}
			if _, err := p.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("write after Close: %v, want net.ErrClosed", err)
			}
			if err := p.Close(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("second Close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// TestPacedUnixDeadlines: a write to a peer that never reads blocks
// until the write deadline and then says os.ErrDeadlineExceeded (a
// timeout); a deadline set in the past while a write or a read waits
// ends it at once (how ipc and btsp abort I/O); a read deadline ends a
// read of a quiet peer; cleared deadlines let I/O go on.
func TestPacedUnixDeadlines(t *testing.T) {
	client, server := unixPair(t)
	p := paced(client, 5*time.Millisecond)
	defer p.Close()
	isTimeout := func(err error) bool {
		var ne net.Error
		return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
	}

	big := make([]byte, 8<<20)
	start := time.Now()
	p.SetWriteDeadline(start.Add(100 * time.Millisecond))
	n, err := p.Write(big)
	if !isTimeout(err) || n == len(big) {
		t.Fatalf("write to a peer that never reads: %d bytes, %v; want a timeout", n, err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 3*time.Second {
		t.Fatalf("the write deadline 100 ms ahead ended the write after %v", d)
	}
	p.SetWriteDeadline(time.Time{})

	errc := make(chan error, 1)
	go func() {
		_, err := p.Write(big)
		errc <- err
	}()
	time.Sleep(30 * time.Millisecond)
	p.SetWriteDeadline(time.Unix(1, 0))
	select {
	case err := <-errc:
		if !isTimeout(err) {
			t.Fatalf("blocked write after a deadline in the past: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline in the past did not abort a blocked write")
	}
	if _, err := p.Write([]byte("x")); !isTimeout(err) {
		t.Fatalf("write with a deadline in the past: %v", err)
	}

	start = time.Now()
	p.SetReadDeadline(start.Add(50 * time.Millisecond))
	if _, err := p.Read(make([]byte, 8)); !isTimeout(err) {
		t.Fatalf("read of a quiet peer past its deadline: %v", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 3*time.Second {
		t.Fatalf("the read deadline 50 ms ahead ended the read after %v", d)
	}
	p.SetReadDeadline(time.Time{})
	go func() {
		_, err := p.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(30 * time.Millisecond)
	p.SetDeadline(time.Unix(1, 0))
	select {
	case err := <-errc:
		if !isTimeout(err) {
			t.Fatalf("waiting read after a deadline in the past: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline in the past did not abort a waiting read")
	}

	// Cleared, both ways work again: what the peer sends is read whole.
	p.SetDeadline(time.Time{})
	go io.Copy(io.Discard, server)
	if _, err := p.Write([]byte("after\n")); err != nil {
		t.Fatal(err)
	}
	c2, s2 := unixPair(t)
	p2 := paced(c2, 5*time.Millisecond)
	defer p2.Close()
	s2.Write([]byte("hello"))
	s2.Close()
	got, err := io.ReadAll(p2)
	if err != nil || string(got) != "hello" {
		t.Fatalf("read to the peer's end: %q, %v; want hello then io.EOF", got, err)
	}
	if _, err := p2.Read(make([]byte, 8)); err != io.EOF {
		t.Fatalf("read after the end: %v, want io.EOF", err)
	}
	// Writing to the peer that left says so (EPIPE, not a signal that
	// ends the process).
	var werr error
	for range 100 {
		if _, werr = p2.Write([]byte("x")); werr != nil {
			break
		}
	}
	if !errors.Is(werr, syscall.EPIPE) && !errors.Is(werr, syscall.ECONNRESET) {
		t.Fatalf("write to a peer that closed: %v, want EPIPE or ECONNRESET", werr)
	}

	// A read deadline sooner than the pace ends the pacing sleep.
	c3, s3 := unixPair(t)
	p3 := paced(c3, time.Hour)
	defer p3.Close()
	s3.Write([]byte("a"))
	if _, err := p3.Read(make([]byte, 8)); err != nil { // short: the next sleeps an hour
		t.Fatal(err)
	}
	start = time.Now()
	p3.SetReadDeadline(start.Add(50 * time.Millisecond))
	if _, err := p3.Read(make([]byte, 8)); !isTimeout(err) || time.Since(start) > 3*time.Second {
		t.Fatalf("read in an hour's pacing sleep with a deadline 50 ms ahead: %v after %v", err, time.Since(start))
	}
}

// TestPacedUnixLeaksNoDescriptor: dialling, reading (with waits on a
// quiet peer), writing and closing many paced Unix connections leaves as
// many descriptors open as before.
func TestPacedUnixLeaksNoDescriptor(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "l.sock"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer func() {
		ln.Close()
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				b := make([]byte, 64)
				n, _ := c.Read(b) // wait: the other end reads a quiet peer first
				c.Write(b[:n])
			}()
		}
	}()
	count := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	one := func() {
		c, err := net.Dial("unix", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		p := paced(c, time.Millisecond)
		rd := make(chan error, 1)
		got := make([]byte, 8)
		go func() {
			_, err := io.ReadFull(p, got)
			rd <- err
		}()
		time.Sleep(time.Millisecond)
		if _, err := p.Write([]byte("12345678")); err != nil {
			t.Fatal(err)
		}
		if err := <-rd; err != nil || !bytes.Equal(got, []byte("12345678")) {
			t.Fatalf("echo %q, %v", got, err)
		}
		p.Close()
	}
	one() // the first dial opens what the runtime keeps (its epoll)
	before := count()
	for range 300 {
		one()
	}
	if after := count(); after > before {
		t.Fatalf("%d descriptors open after 300 paced connections, %d before", after, before)
	}
}

// TestPacedUnixFarDeadline: a deadline too far ahead for UnixNano (after
// 2262: time.Now().Add(math.MaxInt64), the "no deadline" of some callers)
// is no deadline, as on a net.Conn, not one long past: the read waits for
// what the peer sends and the write goes through. Stored as UnixNano, it
// wrapped to a negative number and every read and write timed out at once.
func TestPacedUnixFarDeadline(t *testing.T) {
	client, server := unixPair(t)
	p := paced(client, time.Millisecond)
	defer p.Close()
	far := time.Now().Add(math.MaxInt64)
	if err := p.SetDeadline(far); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond) // the read waits first
		server.Write([]byte("late"))
	}()
	b := make([]byte, 8)
	n, err := p.Read(b)
	if err != nil || string(b[:n]) != "late" {
		t.Fatalf("read with a deadline in year %d: %q, %v; want late", far.Year(), b[:n], err)
	}
	if _, err := p.Write([]byte("x")); err != nil {
		t.Fatalf("write with a deadline in year %d: %v", far.Year(), err)
	}
}
