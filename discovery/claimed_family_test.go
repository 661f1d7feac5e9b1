package discovery

import (
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// countingListener accepts at path and counts connections and the bytes
// they send; it answers nothing.
func countingListener(t *testing.T, path string) func() (conns, bytes int) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	n, b := 0, 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				k, _ := io.Copy(io.Discard, c)
				mu.Lock()
				b += int(k)
				mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return n, b
	}
}

// A probe of a target whose family is only claimed (identity.get, a
// manifest, a registry's answer: ProbeSpec.Family from Target.Family) and
// that its socket name does not carry never uses the user's seed: the
// target is locked before anything is sent, even when the claim is the
// user's own family.
func TestProbeClaimedFamilyGetsNoHandshake(t *testing.T) {
	dir := tempDir(t)
	seen := countingListener(t, filepath.Join(dir, "impostor.sock"))
	sec := ipc.Security{Family: "fam1", Seed: ipc.NewSeed("a-family-seed-of-32-bytes-length"), Prefix: ipc.PrefixAuto}
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 300 * time.Millisecond, Security: sec})
	r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "impostor.sock")), Family: "fam1", Full: true})
	if n, b := seen(); n != 0 || b != 0 {
		t.Fatalf("a peer that only claims the user's family got %d connections, %d bytes (probe %+v)", n, b, r)
	}
	if r.State != StateLocked || !r.BTSPRequired {
		t.Fatalf("probe: %+v", r)
	}
}

// A family-scoped socket another local user serves is marked with its
// owner but gets no BTSP handshake from a probe: nothing keyed by the seed
// goes to it.
func TestProbeForeignBTSPSocketGetsNoHandshake(t *testing.T) {
	fp, _ := ipctest.ServeForeign(t, "beardog-fam1.sock")
	sec := ipc.Security{Family: "fam1", Seed: ipc.NewSeed("a-family-seed-of-32-bytes-length"), Prefix: ipc.PrefixAuto}
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 300 * time.Millisecond, Security: sec})
	r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(fp.Path), Family: "fam1", Full: true})
	for _, b := range fp.Received() {
		if len(b) > 0 {
			t.Fatalf("the foreign server was sent %q (probe %+v)", b, r)
		}
	}
	if r.Owner == nil || r.Owner.UID != ipctest.NobodyUID {
		t.Fatalf("not marked with its owner: %+v", r)
	}
	if r.State != StateLocked {
		t.Fatalf("probe state %s (%s), want locked", r.State, r.Err)
	}
}
