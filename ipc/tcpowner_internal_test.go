package ipc

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// procLine is one line of a socket table as the kernel writes it (each
// 32-bit word of the address in the host's byte order, the port in hex).
func procLine(sl int, ap netip.AddrPort, state string, uid uint32) string {
	var hex strings.Builder
	b := ap.Addr().AsSlice()
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&hex, "%08X", binary.NativeEndian.Uint32(b[i:i+4]))
	}
	zero := strings.Repeat("0", hex.Len())
	return fmt.Sprintf("%4d: %s:%04X %s:0000 %s 00000000:00000000 00:00000000 00000000 %5d        0 %d 1 0000000000000000 100 0 0 10 0\n",
		sl, hex.String(), ap.Port(), zero, state, uid, 1000+sl)
}

const procHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

func writeTables(t *testing.T, tcp, tcp6 string) string {
	t.Helper()
	dir := t.TempDir()
	if tcp != "" {
		if err := os.WriteFile(filepath.Join(dir, "tcp"), []byte(tcp), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if tcp6 != "" {
		if err := os.WriteFile(filepath.Join(dir, "tcp6"), []byte(tcp6), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func ap(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

// TestParseProcNetListeners: the listening sockets of a table are read
// with their address, port and owner; other states and lines are not.
func TestParseProcNetListeners(t *testing.T) {
	table := procHeader +
		procLine(0, ap("127.0.0.1:8080"), "0A", 1000) +
		procLine(1, ap("0.0.0.0:9200"), "0A", 0) +
		"garbage that is no socket line\n" +
		procLine(3, ap("127.0.0.2:53"), "0A", 65534) +
		// The kernel lists every listening socket first: the table is
		// not read past the first other one (the established hash).
		procLine(2, ap("127.0.0.1:8080"), "01", 4242) +
		procLine(4, ap("127.0.0.1:9999"), "0A", 4243) +
		strings.Repeat("x", 4096) + "\n"
	var got []procListener
	if err := parseProcNetListeners(strings.NewReader(table), 1<<20, func(l procListener) { got = append(got, l) }); err != nil {
		t.Fatal(err)
	}
	want := []procListener{{ap("127.0.0.1:8080").Addr(), 8080, 1000}, {ap("0.0.0.0:9200").Addr(), 9200, 0}, {ap("127.0.0.2:53").Addr(), 53, 65534}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	table6 := procHeader + procLine(0, ap("[::1]:7000"), "0A", 1001) + procLine(1, ap("[::]:7001"), "0A", 1002) +
		procLine(2, ap("[::ffff:127.0.0.1]:7002"), "0A", 1003)
	got = nil
	if err := parseProcNetListeners(strings.NewReader(table6), 1<<20, func(l procListener) { got = append(got, l) }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].addr != netip.IPv6Loopback() || got[1].addr != netip.IPv6Unspecified() || got[2].addr.Unmap() != ap("127.0.0.1:1").Addr() || got[2].uid != 1003 {
		t.Errorf("tcp6: %v", got)
	}
}

// TestParseProcNetHostile: a table that is not the kernel's says nothing:
// a line longer than the kernel writes, or a table over the limit, is an
// error (not a partial answer); malformed fields are skipped.
func TestParseProcNetHostile(t *testing.T) {
	count := func(s string, limit int64) (int, error) {
		n := 0
		err := parseProcNetListeners(strings.NewReader(s), limit, func(procListener) { n++ })
		return n, err
	}
	long := procLine(0, ap("127.0.0.1:1"), "0A", 1) + strings.Repeat("A", 10<<20) + "\n" + procLine(1, ap("127.0.0.1:2"), "0A", 2)
	if _, err := count(long, 64<<20); !errors.Is(err, errProcNetLine) {
		t.Errorf("a 10 MB line: %v, want errProcNetLine", err)
	}
	big := strings.Repeat(procLine(0, ap("127.0.0.1:1"), "0A", 1), 1000)
	if _, err := count(big, int64(len(big)-1)); err == nil {
		t.Error("a table over the limit was read")
	}
	if n, err := count(big, int64(len(big))); err != nil || n != 1000 {
		t.Errorf("a table at the limit: %d, %v", n, err)
	}
	for _, bad := range []string{
		"   0: 0100007F:1F90 00000000:0000 0A 0 0 0 99999999999\n",             // uid over 32 bits
		"   0: 0100007G:1F90 00000000:0000 0A 0 0 0 1000\n",                    // not hex
		"   0: 0100007F:1F9 00000000:0000 0A 0 0 0 1000\n",                     // short port
		"   0: 0100007F1F90 00000000:0000 0A 0 0 0 1000\n",                     // no colon
		"   0: 0100007F00:1F90 00000000:0000 0A 0 0 0 1000\n",                  // 10 hex digits
		"   0: 0100007F:1F90 00000000:0000 0A 0 0 0 -1\n",                      // negative
		"   0: 0100007F:1F90\n",                                                // cut
		"\x00\xff\xfe 0A 0A 0A 0A 0A 0A 0A\n",                                  // binary
		"   0: 0100007F:1F90 00000000:0000 0a 00000000:00000000 00:0 0 1000\n", // state in lower case: not the kernel's
	} {
		if n, err := count(bad, 1<<20); n != 0 || err != nil {
			t.Errorf("%q: %d listener(s), %v", bad, n, err)
		}
	}
}

// TestListensFor: a connection to a loopback address arrives at a socket
// listening on that address and port, or on its family's wildcard, or (for
// IPv4) on the IPv6 wildcard or the mapped address.
func TestListensFor(t *testing.T) {
	for _, tc := range []struct {
		l    string
		dst  string
		want bool
	}{
		{"127.0.0.1:80", "127.0.0.1:80", true},
		{"127.0.0.1:81", "127.0.0.1:80", false},
		{"127.0.0.2:80", "127.0.0.1:80", false},
		{"0.0.0.0:80", "127.0.0.1:80", true},
		{"[::]:80", "127.0.0.1:80", true},
		{"[::ffff:127.0.0.1]:80", "127.0.0.1:80", true},
		{"[::1]:80", "127.0.0.1:80", false},
		{"[::1]:80", "[::1]:80", true},
		{"[::]:80", "[::1]:80", true},
		{"0.0.0.0:80", "[::1]:80", false},
		{"127.0.0.1:80", "[::1]:80", false},
	} {
		l := procListener{addr: ap(tc.l).Addr(), port: ap(tc.l).Port()}
		if got := listensFor(l, ap(tc.dst)); got != tc.want {
			t.Errorf("%s for %s: %v, want %v", tc.l, tc.dst, got, tc.want)
		}
	}
}

// TestLoopbackOwners: the owners of the listeners a connection may reach,
// from both tables; and what cannot be told is an error, never an answer.
func TestLoopbackOwners(t *testing.T) {
	dir := writeTables(t, procHeader+procLine(0, ap("127.0.0.1:8080"), "0A", 1000)+procLine(1, ap("127.0.0.1:9090"), "0A", 1000),
		procHeader+procLine(0, ap("[::]:9090"), "0A", 4242)+procLine(1, ap("[::1]:7000"), "0A", 1001))
	for _, tc := range []struct {
		dst  string
		want string
	}{
		{"127.0.0.1:8080", "[1000]"},
		{"127.0.0.1:9090", "[1000 4242]"},
		{"[::1]:7000", "[1001]"},
		{"[::1]:9090", "[4242]"},
	} {
		uids, err := loopbackOwners(dir, ap(tc.dst))
		if err != nil || fmt.Sprint(uids) != tc.want {
			t.Errorf("%s: %v %v, want %s", tc.dst, uids, err, tc.want)
		}
	}
	if _, err := loopbackOwners(dir, ap("127.0.0.1:1")); err == nil || !strings.Contains(err.Error(), "no socket listens") {
		t.Errorf("no listener: %v", err)
	}
	if _, err := loopbackOwners(t.TempDir(), ap("127.0.0.1:8080")); err == nil {
		t.Error("no tables: no error")
	}
	// IPv4 without an IPv6 table (IPv6 disabled) is still told.
	if uids, err := loopbackOwners(writeTables(t, procHeader+procLine(0, ap("127.0.0.1:8080"), "0A", 7), ""), ap("127.0.0.1:8080")); err != nil || fmt.Sprint(uids) != "[7]" {
		t.Errorf("tcp only: %v %v", uids, err)
	}
	hostile := writeTables(t, procHeader+procLine(0, ap("127.0.0.1:8080"), "0A", 1000)+strings.Repeat("x", 4096)+"\n", "")
	if _, err := loopbackOwners(hostile, ap("127.0.0.1:8080")); err == nil {
		t.Error("a table with a line the kernel does not write was used")
	}
}

// loopbackServer listens on 127.0.0.1 and answers each line with a line.
func loopbackServer(t *testing.T) (netip.AddrPort, *int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got int64
	var wg sync.WaitGroup
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
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 4096)
				for {
					n, err := c.Read(b)
					mu.Lock()
					got += int64(n)
					mu.Unlock()
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).AddrPort(), &got
}

// TestLoopbackTCPOwnerRefused: a loopback TCP port whose listening socket
// belongs to another user (a fake socket table says uid 4242 owns it) is
// refused for calls with *ForeignPeerError before a byte is sent, is
// reached by a probe (Observe), which is told the owner, and is called
// once the user trusts that uid. With no table to read, a call
// is refused (exit 5) unless the user asked for it by name
// (--trust-unknown-owner), and then the user is told, loudly, that the
// owner was not checked; a probe connects and says so.
func TestLoopbackTCPOwnerRefused(t *testing.T) {
	dst, _ := loopbackServer(t)
	ep, err := ParseEndpoint("tcp://" + dst.String())
	if err != nil {
		t.Fatal(err)
	}
	foreign := writeTables(t, procHeader+procLine(0, dst, "0A", 4242), "")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, err = dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: foreign}})
	var fp *ForeignPeerError
	if !errors.As(err, &fp) || fp.Peer.UID != 4242 || !SecurityFailure(err) {
		t.Fatalf("a port served by uid 4242: %T %v, want *ForeignPeerError (exit 5)", err, err)
	}
	if !strings.Contains(err.Error(), "uid 4242") && !strings.Contains(err.Error(), "4242") {
		t.Errorf("the refusal does not name the owner: %v", err)
	}

	var seen []PeerIdentity
	c, err := dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: foreign, Observe: true, Seen: func(id PeerIdentity) { seen = append(seen, id) }}})
	if err != nil {
		t.Fatalf("a probe: %v", err)
	}
	c.Close()
	if len(seen) != 1 || !seen[0].Foreign || seen[0].UID != 4242 {
		t.Errorf("the probe was told %+v", seen)
	}

	c, err = dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: foreign}, Security: Security{TrustUIDs: []uint32{4242}}})
	if err != nil {
		t.Fatalf("trusted uid 4242: %v", err)
	}
	c.Close()

	// No table to read: the owner cannot be told. A call is refused
	// before a byte is sent (a skipped check is exit 5 unless asked for
	// by name); a probe connects and is told; a call with
	// TrustUnknownOwner (--trust-unknown-owner) is made, loudly.
	none := t.TempDir()
	var warned, traced []string
	_, err = dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: none},
		Security: Security{Warn: func(s string) { warned = append(warned, s) }},
		Trace:    func(ev TraceEvent) { traced = append(traced, ev.Warning) }})
	var uo *UnknownOwnerError
	if !errors.As(err, &uo) || !SecurityFailure(err) || uo.Port != dst {
		t.Fatalf("a call to a port whose owner cannot be told: %T %v, want *UnknownOwnerError (exit 5)", err, err)
	}
	if !strings.Contains(err.Error(), "--trust-unknown-owner") || !strings.Contains(err.Error(), "nothing was sent") {
		t.Errorf("the refusal does not say how to go on: %v", err)
	}
	if len(warned) != 0 {
		t.Errorf("a refused call also warned %q", warned)
	}
	c, err = dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: none, Observe: true},
		Trace: func(ev TraceEvent) { traced = append(traced, ev.Warning) }})
	if err != nil {
		t.Fatalf("a probe of a port whose owner cannot be told: %v", err)
	}
	c.Close()
	if len(traced) != 1 || !strings.Contains(traced[0], "NOT checked") {
		t.Errorf("the probe's trace: %q", traced)
	}
	traced = nil
	c, err = dialPeer(ctx, ep, Options{Peer: PeerPolicy{procNet: none},
		Security: Security{TrustUnknownOwner: true, Warn: func(s string) { warned = append(warned, s) }},
		Trace:    func(ev TraceEvent) { traced = append(traced, ev.Warning) }})
	if err != nil {
		t.Fatalf("--trust-unknown-owner: %v", err)
	}
	c.Close()
	if len(warned) != 1 || !strings.Contains(warned[0], "NOT checked") || len(traced) != 1 || !strings.Contains(traced[0], "NOT checked") {
		t.Errorf("--trust-unknown-owner: warned %q, traced %q", warned, traced)
	}
}

// TestLoopbackTCPOwnOwnerAccepted: over the real socket tables, a port the
// test's own user listens on is judged to be served by that user, and a
// call is made (Linux only: elsewhere there are no tables to read).
func TestLoopbackTCPOwnOwnerAccepted(t *testing.T) {
	if _, err := os.Stat(filepath.Join(procNetDir, "tcp")); err != nil {
		t.Skip("no /proc/net/tcp:", err)
	}
	dst, _ := loopbackServer(t)
	uids, err := loopbackOwners(procNetDir, dst)
	if err != nil || len(uids) != 1 || uids[0] != uint32(os.Getuid()) {
		t.Fatalf("the owner of our own port %s: %v %v, want [%d]", dst, uids, err, os.Getuid())
	}
	ep, err := ParseEndpoint("tcp://" + dst.String())
	if err != nil {
		t.Fatal(err)
	}
	var seen []PeerIdentity
	var warned []string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialPeer(ctx, ep, Options{Peer: PeerPolicy{Observe: true, Seen: func(id PeerIdentity) { seen = append(seen, id) }},
		Security: Security{Warn: func(s string) { warned = append(warned, s) }}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if len(seen) != 1 || seen[0].Foreign || seen[0].UID != uint32(os.Getuid()) || len(warned) != 0 {
		t.Errorf("seen %+v, warned %q", seen, warned)
	}
}

// FuzzParseProcNet: whatever a socket table holds, reading it ends without
// a panic, within its bounds, and every listener it reports is one a line
// of the kernel's would report the same way (its address, port and uid
// survive writing it back as such a line).
func FuzzParseProcNet(f *testing.F) {
	f.Add([]byte(procHeader + procLine(0, ap("127.0.0.1:8080"), "0A", 1000)))
	f.Add([]byte(procHeader + procLine(0, ap("[::1]:7000"), "0A", 1001) + procLine(1, ap("[::]:1"), "01", 0)))
	f.Add([]byte("   0: 0100007F:1F90 00000000:0000 0A 0 0 0 4294967295\n"))
	f.Add([]byte(strings.Repeat("0A ", 300) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.Count(string(data), "\n") + 1
		n := 0
		err := parseProcNetListeners(strings.NewReader(string(data)), 1<<16, func(l procListener) {
			n++
			var back []procListener
			line := procLine(0, netip.AddrPortFrom(l.addr, l.port), "0A", l.uid)
			if err := parseProcNetListeners(strings.NewReader(line), 1<<16, func(b procListener) { back = append(back, b) }); err != nil || len(back) != 1 || back[0] != l {
				t.Fatalf("%+v written back as %q reads as %+v (%v)", l, line, back, err)
			}
		})
		if n > lines {
			t.Fatalf("%d listeners from %d lines", n, lines)
		}
		if err != nil && !errors.Is(err, errProcNetLine) && !strings.HasPrefix(err.Error(), "larger than") {
			t.Fatalf("an error that says nothing of the table: %v", err)
		}
	})
}

// BenchmarkLoopbackOwners is what the owner check adds to each loopback
// TCP dial: reading this host's socket tables (their size varies with the
// sockets open; wc -l /proc/net/tcp /proc/net/tcp6 says it).
func BenchmarkLoopbackOwners(b *testing.B) {
	if _, err := os.Stat(filepath.Join(procNetDir, "tcp")); err != nil {
		b.Skip("no /proc/net/tcp:", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	dst := ln.Addr().(*net.TCPAddr).AddrPort()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := loopbackOwners(procNetDir, dst); err != nil {
			b.Fatal(err)
		}
	}
}
