package discovery

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestSweepJudgesTheBiomeOSAPI: the biomeOS API socket (riboCipher prefix,
// then HTTP) found in a socket directory is probed like any other target,
// over HTTP, and ends with a state and a reason within the probe timeout.
// (It used to be left unprobed, which the TUI showed as "Probing…" for as
// long as it ran.)
func TestSweepJudgesTheBiomeOSAPI(t *testing.T) {
	dir := tempDir(t)
	b, err := ipctest.ListenBiomeOS(filepath.Join(dir, "biomeos-api-fam1.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A second family's API that accepts and never answers.
	silentListener(t, filepath.Join(dir, "biomeos-api-fam2.sock"))
	stale := 500 * time.Millisecond
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: stale}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*Target{}
	for _, tg := range snap.Targets {
		got[tg.Family] = tg
	}
	live, silent := got["fam1"], got["fam2"]
	if live == nil || silent == nil {
		t.Fatalf("targets: %v", names(snap.Targets))
	}
	if live.State() != StateLive || live.Wire() != WireHTTP || live.Probe.Latency <= 0 {
		t.Errorf("the API that serves its event stream: state %s, wire %q, probe %+v", live.State(), live.Wire(), live.Probe)
	}
	if silent.State() != StateStale || !strings.Contains(silent.Probe.Err, "no HTTP answer") {
		t.Errorf("the silent API: state %s (%q), want stale with a reason", silent.State(), silent.Probe.Err)
	}
	// The compliance audit says what it is, not "not probed".
	if rep := Audit(live, AuditOptions{}); rep.Level != 0 || len(rep.Points) == 0 || !strings.Contains(rep.Points[len(rep.Points)-1].Why, "HTTP API") {
		t.Errorf("audit: %+v", rep)
	}
}

// TestProbeHTTPStates: every way an HTTP probe can end has a state and a
// reason, and none outlives the probe's deadline.
func TestProbeHTTPStates(t *testing.T) {
	dir := tempDir(t)
	// A JSON-RPC primal: it does not speak HTTP.
	serve(t, dir, "jsonrpc.sock", primal("p", false).Config())
	// A server that drops connections without the prefix... and this
	// one drops every connection.
	closer := filepath.Join(dir, "closer.sock")
	ln, err := net.Listen("unix", closer)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	staleFile(t, filepath.Join(dir, "dead.sock"))
	silentListener(t, filepath.Join(dir, "silent.sock"))
	stale := 400 * time.Millisecond
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: stale})
	cases := map[string]State{
		"jsonrpc.sock": StateError, // it answers a JSON-RPC parse error
		"closer.sock":  StateError,
		"dead.sock":    StateDead,
		"missing.sock": StateDead,
		"silent.sock":  StateStale,
	}
	for name, want := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, name)), Wire: WireHTTP, Full: true})
		cancel()
		if r.State != want || r.Err == "" {
			t.Errorf("%s: state %s (%q), want %s with a reason", name, r.State, r.Err, want)
		}
		if r.Incomplete {
			t.Errorf("%s: cut short by the caller's context: %+v", name, r)
		}
	}
	// The caller's context ending first says nothing about the target.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Minute}).
		Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "silent.sock")), Wire: WireHTTP})
	if r.State != StateUnknown || !r.Incomplete {
		t.Errorf("cut short: %+v", r)
	}
}

// silentListener accepts connections at path and never answers (closed
// when the test ends).
func silentListener(t *testing.T, path string) {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	go func() {
		for c := range accepted {
			conns = append(conns, c)
		}
		close(done)
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
}
