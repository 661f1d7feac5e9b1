package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestDiagFindsTheListenerAsTheTablesDo listens on loopback and checks
// that the kernel's socket diagnostics name it, with this process's uid,
// as the socket tables do; and that loopbackOwners (which asks the
// diagnostics first) says the same.
func TestDiagFindsTheListenerAsTheTablesDo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("socket diagnostics are Linux's")
	}
	for _, network := range []string{"tcp4", "tcp6"} {
		host := "127.0.0.1"
		family := uint8(syscall.AF_INET)
		if network == "tcp6" {
			host, family = "[::1]", syscall.AF_INET6
		}
		ln, err := net.Listen(network, host+":0")
		if err != nil {
			if network == "tcp6" {
				t.Logf("no IPv6 loopback here: %v", err)
				continue
			}
			t.Fatal(err)
		}
		defer ln.Close()
		dst := ln.Addr().(*net.TCPAddr).AddrPort()
		dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
		var fromDiag []procListener
		if err := diagListeners(family, func(l procListener) {
			if l.port == dst.Port() {
				fromDiag = append(fromDiag, l)
			}
		}); err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if len(fromDiag) != 1 || fromDiag[0].addr != dst.Addr() || fromDiag[0].uid != uint32(os.Getuid()) {
			t.Fatalf("%s: the diagnostics list %+v for %s (uid %d)", network, fromDiag, dst, os.Getuid())
		}
		fromTables, err := tableOwners(procNetDir, dst)
		if err != nil {
			t.Fatalf("%s: the tables: %v", network, err)
		}
		got, err := loopbackOwners(procNetDir, dst)
		if err != nil || len(got) != 1 || got[0] != fromTables[0] {
			t.Fatalf("%s: loopbackOwners %v, %v; the tables say %v", network, got, err, fromTables)
		}
	}
	// A port nobody listens on (the listener closed): said so, not guessed.
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dst := ln.Addr().(*net.TCPAddr).AddrPort()
	ln.Close()
	if _, err := loopbackOwners(procNetDir, dst); !errors.Is(err, errNoListener) {
		t.Fatalf("a closed port: %v", err)
	}
}

// diagMsg builds one netlink message of type typ holding body.
func diagMsg(typ uint16, body []byte) []byte {
	n := nlmsgHdrLen + len(body)
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	binary.NativeEndian.PutUint16(b[4:], typ)
	copy(b[nlmsgHdrLen:], body)
	return b
}

// diagSocket is an inet_diag_msg for a socket of family at addr:port in
// state, owned by uid.
func diagSocket(family uint8, addr netip.Addr, port uint16, state uint8, uid uint32) []byte {
	m := make([]byte, inetDiagMsgLen)
	m[0], m[1] = family, state
	binary.BigEndian.PutUint16(m[4:], port)
	a := addr.As16()
	if family == syscall.AF_INET {
		a4 := addr.As4()
		copy(m[8:], a4[:])
	} else {
		copy(m[8:], a[:])
	}
	binary.NativeEndian.PutUint32(m[64:], uid)
	return m
}

func TestParseDiagReplies(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	six := netip.MustParseAddr("::1")
	var got []procListener
	keep := func(l procListener) { got = append(got, l) }
	good := bytes.Join([][]byte{
		diagMsg(sockDiagByFam, diagSocket(syscall.AF_INET, lo, 9300, tcpListenState, 1000)),
		diagMsg(sockDiagByFam, diagSocket(syscall.AF_INET6, six, 9301, tcpListenState, 0)),
		diagMsg(sockDiagByFam, diagSocket(syscall.AF_INET, lo, 9302, 1, 7)), // established: not a listener
		diagMsg(syscall.NLMSG_DONE, make([]byte, 4)),
	}, nil)
	if err := parseDiagReplies(good, keep); !errors.Is(err, errDiagDone) {
		t.Fatalf("the dump's end: %v", err)
	}
	want := []procListener{{lo, 9300, 1000}, {six, 9301, 0}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("listeners %+v, want %+v", got, want)
	}
	errno := make([]byte, 4)
	neg := -int32(syscall.ENOENT)
	binary.NativeEndian.PutUint32(errno, uint32(neg))
	for name, b := range map[string][]byte{
		"a short header":     good[:10],
		"a length past":      func() []byte { b := bytes.Clone(good); binary.NativeEndian.PutUint32(b, 1<<20); return b }(),
		"a length under":     func() []byte { b := bytes.Clone(good); binary.NativeEndian.PutUint32(b, 3); return b }(),
		"a short socket":     diagMsg(sockDiagByFam, make([]byte, 20)),
		"an unknown family":  diagMsg(sockDiagByFam, diagSocket(99, lo, 1, tcpListenState, 0)),
		"the kernel refuses": diagMsg(syscall.NLMSG_ERROR, errno),
	} {
		got = nil
		err := parseDiagReplies(b, keep)
		if err == nil || errors.Is(err, errDiagDone) {
			t.Fatalf("%s: %v (listeners %+v)", name, err, got)
		}
		if name == "the kernel refuses" && !strings.Contains(err.Error(), syscall.ENOENT.Error()) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func FuzzParseDiagReplies(f *testing.F) {
	lo := netip.MustParseAddr("127.0.0.1")
	f.Add(diagMsg(sockDiagByFam, diagSocket(syscall.AF_INET, lo, 9300, tcpListenState, 1000)))
	f.Add(append(diagMsg(sockDiagByFam, diagSocket(syscall.AF_INET6, netip.IPv6Loopback(), 1, tcpListenState, 0)), diagMsg(syscall.NLMSG_DONE, nil)...))
	f.Add(diagMsg(syscall.NLMSG_ERROR, []byte{0xfe, 0xff, 0xff, 0xff}))
	f.Fuzz(func(t *testing.T, b []byte) {
		n := 0
		err := parseDiagReplies(b, func(l procListener) {
			n++
			if !l.addr.IsValid() {
				t.Fatalf("a listener without an address: %+v", l)
			}
		})
		if n > len(b)/(nlmsgHdrLen+inetDiagMsgLen) {
			t.Fatalf("%d listeners from %d bytes", n, len(b))
		}
		_ = err
	})
}
