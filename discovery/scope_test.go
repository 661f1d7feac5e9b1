package discovery

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const scopeSeed = "family-seed-for-discovery-tests-0123456789"

func TestFamilyScopedDecision(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"beardog-westgate-tower-155f.sock", "myprimal-westgate-tower-155f.sock", "other-thing.sock",
		"beardog.sock", "beardog.tarpc.sock", "neural-api-default.sock", "mine-east.sock"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("beardog-westgate-tower-155f.sock", filepath.Join(dir, "crypto.sock")); err != nil {
		t.Fatal(err)
	}
	ep := func(n string) ipc.Endpoint { return ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(dir, n)} }
	var scope FamilyScope
	for _, tc := range []struct {
		name     string
		families []string
		want     bool
	}{
		{"beardog-westgate-tower-155f.sock", nil, true},  // a known primal's name and a family
		{"myprimal-westgate-tower-155f.sock", nil, true}, // the family id seen on a known primal's socket here
		{"crypto.sock", nil, true},                       // a symlink to a family-scoped socket
		{"mine-east.sock", []string{"east"}, true},       // the family discovery split, or FAMILY_ID
		{"mine-east.sock", nil, false},
		{"other-thing.sock", nil, false},
		{"beardog.sock", []string{"west"}, false},
		{"beardog.tarpc.sock", nil, false},
		{"neural-api-default.sock", nil, false}, // the default family scopes nothing
		{"mine-east.sock", []string{"default"}, false},
	} {
		if got := FamilyScoped(ep(tc.name), tc.families...); got != tc.want {
			t.Errorf("FamilyScoped(%s, %q) = %v, want %v", tc.name, tc.families, got, tc.want)
		}
		if got := scope.Scoped(ep(tc.name), tc.families...); got != tc.want {
			t.Errorf("FamilyScope.Scoped(%s, %q) = %v, want %v", tc.name, tc.families, got, tc.want)
		}
	}
	if FamilyScoped(ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9200"}, "west") {
		t.Error("a TCP endpoint is never family-scoped by name")
	}
	// A directory read earlier is read again once it changes: a known
	// primal's socket carrying "east" appears.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	if scope.Scoped(ep("mine-east.sock")) {
		t.Fatal("mine-east.sock is family-scoped before any known primal carries east")
	}
	if err := os.WriteFile(filepath.Join(dir, "songbird-east.sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !scope.Scoped(ep("mine-east.sock")) {
		t.Fatal("mine-east.sock is not family-scoped after songbird-east.sock appeared beside it")
	}
}

// familyPeers listens with recording BTSP servers on family-scoped names
// of a Songbird registry, the Neural API and a primal.
func familyPeers(t *testing.T, seed []byte) (string, map[string]*ipctest.HostileBTSP) {
	t.Helper()
	dir := tempDir(t)
	peers := map[string]*ipctest.HostileBTSP{}
	for _, n := range []string{"songbird-westgate.sock", "neural-api-westgate.sock", "beardog-westgate.sock"} {
		h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, n), &ipctest.HostileBTSP{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.Close)
		peers[n] = h
	}
	return dir, peers
}

// checkWire fails when a connection to a family-scoped peer carried
// JSON-RPC in cleartext, or (with a seed) did not start with a BTSP hello.
func checkWire(t *testing.T, peers map[string]*ipctest.HostileBTSP, seeded bool, method string) {
	t.Helper()
	for n, h := range peers {
		for i, b := range h.Received() {
			if !seeded && len(b) > 0 {
				t.Errorf("%s: connection %d without a seed carried %q", n, i+1, b)
			}
			if len(b) > 0 && !ipctest.IsBTSPHello(b) {
				t.Errorf("%s: connection %d did not start with a BTSP hello: %q", n, i+1, b)
			}
			if method != "" && bytes.Contains(b, []byte(method)) {
				t.Errorf("%s: connection %d carried %s readable", n, i+1, method)
			}
		}
	}
}

// TestRegistriesFamilyScopedNoCleartext: a sweep, a lookup, AskProviders
// and CallAll send nothing in cleartext to family-scoped registries, Neural
// API and primals; with a seed every connection starts with a BTSP hello.
func TestRegistriesFamilyScopedNoCleartext(t *testing.T) {
	for _, seeded := range []bool{false, true} {
		name := "no-seed"
		var seed []byte
		sec := ipc.Security{Prefix: ipc.PrefixAuto}
		if seeded {
			// The seed is given for its family (a seed of no family is
			// offered to no family's socket).
			name, seed, sec.Seed, sec.Family = "seed", []byte(scopeSeed), ipc.NewSeed(scopeSeed), "westgate"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, peers := familyPeers(t, seed)
			d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
				SocketDirs: []string{dir}, NoProc: true,
				Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 2 * time.Second, Security: sec}})
			snap, err := d.Sweep(ctxT(t), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Targets) != 3 {
				t.Fatalf("targets %q", names(snap.Targets))
			}
			checkWire(t, peers, seeded, "")
			if _, err := d.Lookup(ctxT(t), "squirrel"); err == nil {
				t.Error("lookup of an absent name succeeded")
			}
			checkWire(t, peers, seeded, "")
			// The registry among the targets, asked who provides a capability.
			AskProviders(ctxT(t), snap.Targets, "crypto.sign", time.Second, sec)
			checkWire(t, peers, seeded, "crypto.sign")
			// check --call-all on a target whose probe said nothing of BTSP.
			bd := &Target{ID: "bd", Name: "beardog", Endpoint: unixEP(filepath.Join(dir, "beardog-westgate.sock")),
				Probe: &Probe{State: StateLive, Capabilities: &capability.Capabilities{Methods: []string{"transfer.funds"}}}}
			bd.Address = bd.Endpoint.String()
			_, _ = CallAll(ctxT(t), bd, time.Second, sec)
			checkWire(t, peers, seeded, "transfer.funds")
			if seeded {
				for n, h := range peers {
					if len(h.Received()) == 0 {
						t.Errorf("%s: never reached with a seed", n)
					}
				}
			}
		})
	}
}

// TestRegistryByNameNoCleartext: a Registry or NeuralSource built without
// any Security still sends nothing in cleartext to a family-scoped name; as
// sources of a sweep they add nothing and say nothing (the registry's own
// probe lists it locked, with what to set).
func TestRegistryByNameNoCleartext(t *testing.T) {
	dir, peers := familyPeers(t, nil)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r := Registry{Endpoint: unixEP(filepath.Join(dir, "songbird-westgate.sock")), Timeout: time.Second}
		if _, err := r.List(ctxT(t)); err == nil {
			t.Error("a family-scoped registry answered without a seed")
		}
	}()
	go func() {
		defer wg.Done()
		s := NeuralSource{Endpoint: unixEP(filepath.Join(dir, "neural-api-westgate.sock")), Timeout: time.Second}
		if fs, err := s.Discover(ctxT(t)); len(fs) != 0 || err != nil {
			t.Errorf("a family-scoped Neural API without a seed: %v, %v", fs, err)
		}
		sb := SongbirdSource{Registry: Registry{Endpoint: unixEP(filepath.Join(dir, "songbird-westgate.sock")), Timeout: time.Second}}
		if fs, err := sb.Discover(ctxT(t)); len(fs) != 0 || err != nil {
			t.Errorf("a family-scoped Songbird without a seed: %v, %v", fs, err)
		}
	}()
	wg.Wait()
	checkWire(t, peers, false, "")
}

// TestProbeFamilyFromSpec: the family a source split from a name (here by
// a known primal of the user's config, which the name alone does not show)
// makes the probe send nothing in cleartext.
func TestProbeFamilyFromSpec(t *testing.T) {
	dir := tempDir(t)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "myprimal-east.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second, Security: ipc.Security{Prefix: ipc.PrefixAuto}})
	r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(h.Path()), Full: true, Family: "east"})
	if r.State != StateLocked || !r.BTSPRequired {
		t.Errorf("probe: %+v", r)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) reached a family-scoped socket without a seed", n)
	}
}

// BenchmarkFamilyScope2000 decides for each socket of a 2,000-socket
// directory whose names all carry a dash (the directory is read once).
func BenchmarkFamilyScope2000(b *testing.B) {
	dir := b.TempDir()
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(dir, "svc-"+strconv.Itoa(i)+".sock"), nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dir, old, old); err != nil {
		b.Fatal(err)
	}
	var scope FamilyScope
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if scope.Scoped(ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(dir, "svc-"+strconv.Itoa(i%2000)+".sock")}) {
			b.Fatal("scoped")
		}
	}
}
