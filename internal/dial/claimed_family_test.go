package dial_test

import (
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
)

// listener accepts connections on ep's loopback port or socket path and
// counts the bytes each sends; it answers nothing.
type listener struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
	bytes int
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.conns++
			l.mu.Unlock()
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				n, _ := io.Copy(io.Discard, c)
				l.mu.Lock()
				l.bytes += int(n)
				l.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); l.wg.Wait() })
	return l
}

func (l *listener) seen() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, l.bytes
}

// A family the peer only claims (identity.get, a manifest, a registry's
// answer: what FromDiscovery carries as Target.Family) never picks the
// user's seed: a TCP peer, or a socket whose name does not carry the
// family, that says it is of the user's own family and demands BTSP is
// refused before connecting (exit 5: *ipc.BTSPRequiredError naming the
// claim), not given a handshake keyed by the seed. A socket whose NAME
// carries the family gets the seed as before.
func TestClaimedFamilyPicksNoSeed(t *testing.T) {
	const fam = "fam1"
	sec := ipc.Security{Family: fam, Seed: ipc.NewSeed("a-family-seed-of-32-bytes-length"), Prefix: ipc.PrefixAuto}
	dir := t.TempDir()
	d := newDialer(t, dial.Settings{SocketDirs: []string{dir}, Security: sec})

	tcp := listen(t, "tcp", "127.0.0.1:0")
	unix := listen(t, "unix", filepath.Join(dir, "impostor.sock"))
	for _, tg := range []dial.Target{
		{Name: "beardog", Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: tcp.ln.Addr().String()}, Family: fam, BTSPRequired: true},
		{Name: "beardog", Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: tcp.ln.Addr().String()}, Family: fam},
		{Name: "impostor", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: unix.ln.Addr().String()}, Family: fam, BTSPRequired: true},
	} {
		s := d.Security(tg)
		if seed, _, ok := s.SeedFor(tg.Endpoint); ok || !seed.IsZero() {
			t.Errorf("%s: a claimed family picks a seed (security %+v)", tg.Endpoint, s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c, err := d.Dial(ctx, tg, dial.Options{})
		cancel()
		if err == nil {
			c.Close()
			t.Fatalf("%s: dialled a peer that only claims the user's family", tg.Endpoint)
		}
		var be *ipc.BTSPRequiredError
		if !errors.As(err, &be) || !be.Claimed || be.Family != fam || !ipc.SecurityFailure(err) {
			t.Fatalf("%s: want *ipc.BTSPRequiredError for the claimed family, got %T %v", tg.Endpoint, err, err)
		}
		if !strings.Contains(err.Error(), "does not carry") {
			t.Errorf("error does not say why: %v", err)
		}
	}
	for _, l := range []*listener{tcp, unix} {
		if n, b := l.seen(); n != 0 || b != 0 {
			t.Fatalf("%s: %d connections, %d bytes reached a peer that only claims the family", l.ln.Addr(), n, b)
		}
	}

	// The name carries the family: the seed is the user's, as before.
	named := dial.Target{Name: "beardog", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(dir, "beardog-"+fam+".sock")}, Family: fam}
	s := d.Security(named)
	if seed, f, ok := s.SeedFor(named.Endpoint); !ok || seed.IsZero() || f != fam || s.TargetFamily != fam || s.ClaimedFamily != "" {
		t.Fatalf("a socket named for the family: seed ok=%v family %q, security %+v", ok, f, s)
	}
	// No family at all (the user named the address): standalone, the
	// user's seed as before.
	bare := dial.Target{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: tcp.ln.Addr().String()}}
	s = d.Security(bare)
	if seed, _, ok := s.SeedFor(bare.Endpoint); !ok || seed.IsZero() {
		t.Fatalf("a target of no family lost the user's seed: %+v", s)
	}
}
