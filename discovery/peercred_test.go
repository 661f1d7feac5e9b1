package discovery

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// A primal another local user serves in a shared socket directory is
// probed (health, capabilities) and listed marked with its owner; the
// user's own primal beside it is not marked.
func TestSweepMarksForeignOwner(t *testing.T) {
	fp, dir := ipctest.ServeForeign(t, "beardog.sock")
	own, err := ipctest.StartPrimal(filepath.Join(dir, "toadstool.sock"), primal("toadstool", false))
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()

	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, NoRegistries: true})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	bd := byName(snap.Targets, "beardog")
	if bd == nil || bd.State() != StateLive {
		t.Fatalf("the foreign primal was not probed: %+v", bd)
	}
	if o := bd.ForeignOwner(); o == nil || o.UID != ipctest.NobodyUID || !o.Foreign {
		t.Fatalf("beardog not marked with its owner: %+v", o)
	}
	if bd.Probe.Capabilities == nil {
		t.Error("the foreign primal's capabilities were not asked")
	}
	if ts := byName(snap.Targets, "toadstool"); ts == nil || ts.ForeignOwner() != nil {
		t.Fatalf("the user's own primal is marked: %+v", ts)
	}
	for _, b := range fp.Received() {
		for _, line := range bytes.Split(b, []byte("\n")) {
			if len(line) > 0 && !bytes.Contains(line, []byte("health.")) && !bytes.Contains(line, []byte("identity")) && !bytes.Contains(line, []byte("capabilit")) {
				t.Errorf("a probe sent the foreign primal %q", line)
			}
		}
	}
}

// A registry another local user serves is probed and marked, but not asked
// what it knows: its answer would steer discovery.
func TestForeignRegistryNotAsked(t *testing.T) {
	fp, dir := ipctest.ServeForeign(t, "songbird.sock")
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sb := byName(snap.Targets, "songbird")
	if sb == nil || sb.ForeignOwner() == nil {
		t.Fatalf("the foreign registry is not listed marked: %+v", sb)
	}
	for _, b := range fp.Received() {
		if bytes.Contains(b, []byte("ipc.list")) || bytes.Contains(b, []byte("discovery.peers")) {
			t.Fatalf("the foreign registry was asked: %q", b)
		}
	}
	found := false
	for _, e := range snap.Errors {
		found = found || strings.Contains(e.Err, "refusing to call")
	}
	if !found {
		t.Errorf("the refusal is not said: %+v", snap.Errors)
	}
}

// The HTTP probe (the biomeOS API) dials through the owner check too: an
// API socket another local user serves is probed and marked with its owner,
// as a JSON-RPC one is.
func TestProbeHTTPMarksForeignOwner(t *testing.T) {
	fp, _ := ipctest.ServeForeign(t, "biomeos-api.sock")
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 300 * time.Millisecond})
	r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(fp.Path), Wire: WireHTTP, Full: true})
	if r.Owner == nil || r.Owner.UID != ipctest.NobodyUID || !r.Owner.Foreign {
		t.Fatalf("the foreign API socket is not marked with its owner: %+v", r)
	}
	if r.State == StateDead || r.State == StateUnknown {
		t.Fatalf("the foreign API socket was not reached: %+v", r)
	}
	if !strings.Contains(OwnerWarning(r.Owner), "nobody") {
		t.Fatalf("owner warning: %q", OwnerWarning(r.Owner))
	}
}
