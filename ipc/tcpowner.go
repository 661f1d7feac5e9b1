package ipc

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// Who serves a loopback TCP port. A Unix socket says who serves it
// (SO_PEERCRED); a TCP connection does not, but on Linux the kernel's
// socket tables (/proc/net/tcp and /proc/net/tcp6) give the uid that owns
// each listening socket. A connection to 127.0.0.0/8 or ::1 is judged by
// the owner of the socket listening on its address and port, as a Unix
// socket is by its server (PeerPolicy). Where that cannot be read (no
// /proc, no such listener in this network namespace) a call is refused
// (*UnknownOwnerError, exit 5) unless the user asked by name
// (--trust-unknown-owner: then made and said to be unchecked, loudly); a
// probe connects and says so. A connection to any other address has no
// owner to check (the host may be another machine).

// procNetDir is where the kernel's socket tables are.
const procNetDir = "/proc/net"

// Bounds on reading a socket table: the kernel writes lines of about 150
// bytes (tcp) and 180 (tcp6), one per socket; a longer line, or a table
// larger than the limit, is no table of the kernel's, and says nothing.
const (
	maxProcNetLine  = 512
	maxProcNetTable = 64 << 20
)

// procListener is one listening socket (state 0A) of a socket table.
type procListener struct {
	addr netip.Addr
	port uint16
	uid  uint32
}

// errProcNetLine says a line of a socket table is longer than the kernel
// writes them.
var errProcNetLine = errors.New("a line longer than the kernel writes")

// parseProcNetListeners calls fn with each listening socket of r, a
// /proc/net/tcp or /proc/net/tcp6 table, and stops at the first socket
// that is not listening: the kernel lists every listening socket first
// (its listening hash, then the established one), and reading on would
// have it walk its whole established hash table, a few milliseconds of
// CPU on a large one, for nothing. At most limit bytes are read, and a
// line over maxProcNetLine bytes ends it with an error (the table is then
// not used). Lines that are no socket's (the header) are skipped.
func parseProcNetListeners(r io.Reader, limit int64, fn func(procListener)) error {
	lr := &io.LimitedReader{R: r, N: limit + 1}
	// Small reads: the kernel makes each read's lines as it is asked, so
	// the established sockets after the listening ones are not walked.
	br := bufio.NewReaderSize(lr, maxProcNetLine+1)
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return errProcNetLine
		}
		if lr.N <= 0 {
			return fmt.Errorf("larger than %d bytes", limit)
		}
		if len(line) > 0 {
			l, state, ok := parseProcNetLine(line)
			switch {
			case ok && state == "0A":
				fn(l)
			case ok:
				return nil // the listening sockets are all listed
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// parseProcNetLine reads one line of a socket table: "sl local_address
// rem_address st tx:rx tr:when retrnsmt uid ...", the addresses in hex as
// the kernel holds them (each 32-bit word in the host's byte order), the
// port in hex, the state in two upper-case hex digits (0A: listening).
// ok is false for a line that is no socket's.
func parseProcNetLine(line []byte) (l procListener, state string, ok bool) {
	var f [8][]byte
	n := 0
	for _, w := range bytes.Fields(line) {
		if n == len(f) {
			break
		}
		f[n] = w
		n++
	}
	if n < len(f) || len(f[3]) != 2 || !upperHex(f[3]) {
		return procListener{}, "", false
	}
	host, port, found := bytes.Cut(f[1], []byte{':'})
	if !found || len(port) != 4 {
		return procListener{}, "", false
	}
	p, err := strconv.ParseUint(string(port), 16, 16)
	if err != nil {
		return procListener{}, "", false
	}
	addr, valid := procNetAddr(host)
	if !valid {
		return procListener{}, "", false
	}
	uid, err := strconv.ParseUint(string(f[7]), 10, 32)
	if err != nil {
		return procListener{}, "", false
	}
	return procListener{addr: addr, port: uint16(p), uid: uint32(uid)}, string(f[3]), true
}

// upperHex reports whether b is hex digits in upper case, as the kernel
// writes a socket's state.
func upperHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

// procNetAddr decodes a socket table's address: 8 hex digits (IPv4) or 32
// (IPv6), each group of 8 a 32-bit word in the host's byte order.
func procNetAddr(h []byte) (netip.Addr, bool) {
	if len(h) != 8 && len(h) != 32 {
		return netip.Addr{}, false
	}
	var b [16]byte
	for i := 0; i < len(h)/8; i++ {
		w, err := strconv.ParseUint(string(h[i*8:i*8+8]), 16, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		binary.NativeEndian.PutUint32(b[i*4:], uint32(w))
	}
	if len(h) == 8 {
		return netip.AddrFrom4([4]byte(b[:4])), true
	}
	return netip.AddrFrom16(b), true
}

// listensFor reports whether a connection to dst may arrive at l: the same
// port, and dst's own address or the wildcard of its family; for IPv4,
// also an IPv4-mapped address or the IPv6 wildcard (a dual-stack socket
// takes IPv4 connections unless it is IPV6_V6ONLY, which the table does
// not say: such a listener is counted, never left out).
func listensFor(l procListener, dst netip.AddrPort) bool {
	if l.port != dst.Port() {
		return false
	}
	a, d := l.addr, dst.Addr()
	if a == netip.IPv6Unspecified() {
		return true
	}
	if d.Is4() {
		a = a.Unmap()
		return a == d || a == netip.IPv4Unspecified()
	}
	return a == d
}

// loopbackOwners returns the uids owning the sockets listening where a
// connection to dst (a loopback address) arrives, from the socket tables
// in dir (procNetDir), sorted and distinct. An error says why that cannot
// be told: no table to read (no /proc), a table that is not the kernel's,
// or no such listener in them (another network namespace).
func loopbackOwners(dir string, dst netip.AddrPort) ([]uint32, error) {
	if dir == procNetDir {
		if uids, err := diagOwners(dst); err == nil {
			return uids, nil
		} else if errors.Is(err, errNoListener) {
			return nil, err
		}
		// No socket diagnostics (an old kernel, a sandbox): the tables.
	}
	return tableOwners(dir, dst)
}

// tableOwners is loopbackOwners from the socket tables in dir alone.
func tableOwners(dir string, dst netip.AddrPort) ([]uint32, error) {
	files := []string{"tcp6"}
	if dst.Addr().Is4() {
		files = []string{"tcp", "tcp6"} // tcp6: dual-stack listeners
	}
	var uids []uint32
	read := 0
	for _, name := range files {
		path := filepath.Join(dir, name)
		f, _, err := readfile.Open(path)
		if err != nil {
			if name == "tcp6" && dst.Addr().Is4() {
				continue // no IPv6: no dual-stack listener either
			}
			return nil, fmt.Errorf("cannot read the kernel's socket table: %w", err)
		}
		err = parseProcNetListeners(f, maxProcNetTable, func(l procListener) {
			if listensFor(l, dst) && !slices.Contains(uids, l.uid) {
				uids = append(uids, l.uid)
			}
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("cannot read the kernel's socket table %s: %w", path, err)
		}
		read++
	}
	if read == 0 {
		return nil, errors.New("no socket table to read")
	}
	if len(uids) == 0 {
		return nil, fmt.Errorf("%w on %s in %s (another network namespace?)", errNoListener, dst, dir)
	}
	slices.Sort(uids)
	return uids, nil
}

// errNoListener says no listening socket was found where a connection
// arrived.
var errNoListener = errors.New("no socket listens")

// diagOwners is loopbackOwners from the kernel's socket diagnostics
// (diagListeners): the IPv6 listeners, and the IPv4 ones for an IPv4 dst.
func diagOwners(dst netip.AddrPort) ([]uint32, error) {
	families := []uint8{syscall.AF_INET6}
	if dst.Addr().Is4() {
		families = append(families, syscall.AF_INET)
	}
	var uids []uint32
	for _, f := range families {
		err := diagListeners(f, func(l procListener) {
			if listensFor(l, dst) && !slices.Contains(uids, l.uid) {
				uids = append(uids, l.uid)
			}
		})
		if err != nil && f == syscall.AF_INET6 && dst.Addr().Is4() {
			continue // no IPv6 here: no dual-stack listener either
		}
		if err != nil {
			return nil, err
		}
	}
	if len(uids) == 0 {
		return nil, fmt.Errorf("%w on %s (the kernel's socket diagnostics; another network namespace?)", errNoListener, dst)
	}
	slices.Sort(uids)
	return uids, nil
}

// tcpLoopback returns the loopback address and port c is connected to;
// ok is false when c is not a TCP connection to a loopback address.
func tcpLoopback(c net.Conn) (netip.AddrPort, bool) {
	ta, isTCP := c.RemoteAddr().(*net.TCPAddr)
	if !isTCP {
		return netip.AddrPort{}, false
	}
	ap := ta.AddrPort()
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	return ap, ap.Addr().IsLoopback()
}

// tcpPeerIdentity judges who serves the loopback TCP port dst, as
// PeerPolicy judges a Unix socket's server: the owner of the listening
// socket, or, when several users listen where the connection may have
// arrived, the first of them pol does not trust. err says why it cannot
// be told.
func tcpPeerIdentity(dir string, dst netip.AddrPort, pol *PeerPolicy) (PeerIdentity, error) {
	uids, err := loopbackOwners(dir, dst)
	if err != nil {
		return PeerIdentity{}, err
	}
	id := PeerIdentity{UID: uids[0]}
	for _, u := range uids {
		if !pol.trusted(u) {
			id.UID = u
			break
		}
	}
	pol.judge(&id)
	if id.Foreign && len(uids) > 1 {
		var us []string
		for _, u := range uids {
			us = append(us, strconv.FormatUint(uint64(u), 10))
		}
		id.Why += " (port " + strconv.Itoa(int(dst.Port())) + " is listened on by several users: uids " + strings.Join(us, ", ") + ")"
	}
	return id, nil
}
