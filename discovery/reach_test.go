package discovery

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// registryFixture serves reg as songbird.sock in a fresh socket directory
// and returns a discoverer over that directory only.
// The registry gets 10 s to answer (the stale timeout bounds registry
// calls): a 12 MB answer under the race detector on a loaded machine takes
// seconds, and the test is about bounds, not time.
func registryFixture(t *testing.T, reg *ipctest.FloodRegistry, federation bool) (*Discoverer, *ipctest.FloodRegistry) {
	t.Helper()
	dir := tempDir(t)
	r, err := ipctest.ListenFloodRegistry(filepath.Join(dir, "songbird.sock"), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Federation: federation, Probe: ProbeOptions{StaleTimeout: 10 * time.Second}}), r
}

func sourceErrors(s *Snapshot) string {
	var b strings.Builder
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "%s: %s\n", e.Source, e.Err)
	}
	return b.String()
}

// A registry's discovery.peers naming 2,000 loopback ports (one of them
// open) steers nothing without federation: not asked, nothing connected.
func TestRegistryPeersNeedFederation(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	d, reg := registryFixture(t, &ipctest.FloodRegistry{Peers: 2000, PeerPort: port - 1000}, false)
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reg.PeerCalls() != 0 || accepted.Load() != 0 {
		t.Fatalf("without federation: discovery.peers asked %d times, the open port connected %d times", reg.PeerCalls(), accepted.Load())
	}
	for _, tg := range snap.Targets {
		if tg.Kind == KindRemote {
			t.Fatalf("a remote node was listed without federation: %s", tg.Name)
		}
	}

	// Asked for by name, the nodes are listed, and at most
	// MaxRegistryProbes of them are probed.
	d, reg = registryFixture(t, &ipctest.FloodRegistry{Peers: 2000, PeerPort: port - 1000}, true)
	snap, err = d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	remote, probed := 0, 0
	for _, tg := range snap.Targets {
		if tg.Kind == KindRemote {
			remote++
			if !tg.NoProbe {
				probed++
			}
		}
	}
	if reg.PeerCalls() == 0 || remote != 2000 || probed > MaxRegistryProbes {
		t.Fatalf("federation: peers asked %d, %d remote targets, %d probed", reg.PeerCalls(), remote, probed)
	}
	if !strings.Contains(sourceErrors(snap), "only the first 64 were probed") {
		t.Errorf("the cut is not said:\n%s", sourceErrors(snap))
	}
}

// A registry naming 200 live sockets gets at most MaxRegistryProbes of
// them connected to; the rest are listed unprobed, and the sweep says so.
func TestRegistryProbesBounded(t *testing.T) {
	crowdDir := tempDir(t)
	crowd, err := ipctest.StartCrowd(crowdDir, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer crowd.Close()
	d, _ := registryFixture(t, &ipctest.FloodRegistry{Entries: 200, Endpoint: func(i int) string { return "unix://" + crowd.Live[i] }}, false)
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	reached := 0
	for _, p := range crowd.Live {
		if crowd.Accepted(p) > 0 {
			reached++
		}
	}
	if reached == 0 || reached > MaxRegistryProbes {
		t.Fatalf("%d of 200 registry-named sockets were connected to; want 1..%d", reached, MaxRegistryProbes)
	}
	listed := 0
	for _, tg := range snap.Targets {
		if strings.HasPrefix(tg.Name, "flood") {
			listed++
		}
	}
	if listed != 200 || !strings.Contains(sourceErrors(snap), "registries named 200 endpoints") {
		t.Fatalf("%d listed; errors:\n%s", listed, sourceErrors(snap))
	}
}

// Remote addresses an ipc.list names are not probed without federation.
func TestRegistryRemoteAddressNeedsFederation(t *testing.T) {
	d, _ := registryFixture(t, &ipctest.FloodRegistry{Entries: 1, Endpoint: func(int) string { return "tcp://192.0.2.7:9200" }}, false)
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tg := byName(snap.Targets, "flood000000")
	if tg == nil || !tg.NoProbe || !strings.Contains(strings.Join(tg.Notes, ";"), "--federation") {
		t.Fatalf("remote registration: %+v", tg)
	}
}

// A registry answering ipc.list with 100,000 entries (12 MB) is read up to
// MaxRegistryEntries, the cut said; names "." and ".." are refused.
func TestRegistryHugeListCut(t *testing.T) {
	if testing.Short() {
		t.Skip("12 MB answer: not in -short")
	}
	names := func(i int) string {
		switch i {
		case 0:
			return "."
		case 1:
			return ".."
		}
		return fmt.Sprintf("flood%06d", i)
	}
	d, _ := registryFixture(t, &ipctest.FloodRegistry{Entries: 100_000, Name: names}, false)
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, tg := range snap.Targets {
		for _, n := range tg.Names() {
			if n == "." || n == ".." {
				t.Errorf("a target is named %q", n)
			}
		}
		if tg.Kind != KindRegistry {
			listed++
		}
	}
	if listed > MaxRegistryEntries || listed < MaxRegistryEntries-2 {
		t.Errorf("%d targets listed from the registry; want at most %d", listed, MaxRegistryEntries)
	}
	if errs := sourceErrors(snap); !strings.Contains(errs, fmt.Sprintf("more than %d entries", MaxRegistryEntries)) {
		t.Errorf("the cut is not said:\n%s", errs)
	}
}

func TestCleanNameRefusesDots(t *testing.T) {
	for _, s := range []string{".", "..", " .. "} {
		if got := cleanName(s); got != "" {
			t.Errorf("cleanName(%q) = %q", s, got)
		}
	}
	if _, err := endpointFrom(".."); err == nil {
		t.Error(`endpointFrom("..") accepted`)
	}
	if _, err := endpointFrom("./x.sock"); err == nil {
		t.Error("a relative socket path from a registry accepted")
	}
}

// The Neural API's lists are cut like a registry's, and the cut said.
func TestNeuralListCut(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"primals":[`)
	for i := 0; i < MaxRegistryEntries+5; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"name":"p%d","state":"running","socket_path":"/run/x/p%d.sock"}`, i, i)
	}
	b.WriteString(`],"count":10005}`)
	ps, err := ParseNeuralPrimals([]byte(b.String()))
	var cut *CutError
	if len(ps) != MaxRegistryEntries || !errors.As(err, &cut) {
		t.Fatalf("%d primals, err %v", len(ps), err)
	}
	// The shapes that are no list still read.
	ps, err = ParseNeuralPrimals([]byte(`{"primals":{"beardog":{"socket_path":"/run/x/b.sock"}}}`))
	if err != nil || len(ps) != 1 || ps[0].Name != "beardog" {
		t.Fatalf("map shape: %+v %v", ps, err)
	}
	ps, err = ParseNeuralPrimals([]byte(`{"name":"songbird","socket_path":"/run/x/s.sock","pid":7}`))
	if err != nil || len(ps) != 1 || ps[0].PID != 7 {
		t.Fatalf("lifecycle.get shape: %+v %v", ps, err)
	}
}

// A socket of another family that only a registry named is not probed
// without federation (listed, saying why); one of the user's own family is
// (locked here: no seed).
func TestRegistryOtherFamilyNeedsFederation(t *testing.T) {
	crowdDir := tempDir(t)
	own, err := ipctest.Listen(filepath.Join(crowdDir, "beardog-myfam.sock"), ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	other, err := ipctest.Listen(filepath.Join(crowdDir, "beardog-otherfam.sock"), ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	paths := []string{own.Path, other.Path}
	d, _ := registryFixture(t, &ipctest.FloodRegistry{Entries: 2, Endpoint: func(i int) string { return "unix://" + paths[i] }}, false)
	d.opts.Family = "myfam"
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range snap.Targets {
		if tg.Endpoint.Path == other.Path && (!tg.NoProbe || !strings.Contains(strings.Join(tg.Notes, ";"), "another family (otherfam)")) {
			t.Errorf("other family: %+v", tg)
		}
		if tg.Endpoint.Path == own.Path && tg.NoProbe {
			t.Errorf("own family not probed: %+v", tg)
		}
	}
}
