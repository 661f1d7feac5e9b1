package discovery

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// ecosystem lays out a small ecosystem: a socket dir with a primal, a
// symlink, a stale socket and a Songbird that knows a TCP primal and the
// primal of the symlink; an env var and a manifest naming the same socket.
type ecosystem struct {
	dir, rt string
	sb      *ipctest.Songbird
	tcp     *ipctest.Server
	env     map[string]string
}

func newEcosystem(t *testing.T) *ecosystem {
	e := &ecosystem{dir: tempDir(t), rt: tempDir(t), sb: ipctest.NewSongbird()}
	serve(t, e.dir, "squirrel.sock", primal("squirrel", true).Config())
	serve(t, e.dir, "beardog-west-1.sock", primal("beardog", false).Config())
	os.Symlink("squirrel.sock", filepath.Join(e.dir, "ai.sock"))
	staleFile(t, filepath.Join(e.dir, "lostprimal.sock"))
	serve(t, e.dir, "songbird.sock", e.sb.Config())
	tcp, err := ipctest.ListenTCP("127.0.0.1:0", primal("towerd", false).Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	e.tcp = tcp
	e.sb.Register(ipctest.Service{PrimalID: "towerd", Capabilities: []string{"compute"}, Endpoint: "tcp://" + tcp.Addr})
	e.sb.Register(ipctest.Service{PrimalID: "squirrel", Capabilities: []string{"ai"}, Endpoint: "unix://" + filepath.Join(e.dir, "squirrel.sock")})
	man := filepath.Join(e.rt, "ecoPrimals", "manifests")
	os.MkdirAll(man, 0o700)
	// A second registry where Songbird also lives, knowing nothing.
	serve(t, filepath.Join(e.rt, "ecoPrimals"), "discovery-west-1.sock", ipctest.NewSongbird().Config())
	os.WriteFile(filepath.Join(man, "squirrel.json"), []byte(`{"socket_path":"`+filepath.Join(e.dir, "ai.sock")+`"}`), 0o600)
	e.env = map[string]string{
		"XDG_RUNTIME_DIR": e.rt,
		"SQUIRREL_SOCKET": filepath.Join(e.dir, "squirrel.sock"),
		"FAMILY_ID":       "west-1",
	}
	return e
}

func (e *ecosystem) discoverer(stale time.Duration) *Discoverer {
	getenv, environ := envOf(e.env)
	return New(Options{Getenv: getenv, Environ: environ, SocketDirs: []string{e.dir}, NoProc: true,
		Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: stale}})
}

func TestSweepOneTargetPerThing(t *testing.T) {
	e := newEcosystem(t)
	d := e.discoverer(3 * time.Second)
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	probed := 0
	snap, err := d.Sweep(ctxT(t), func(*Target) { <-mu; probed++; mu <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Errors) != 0 {
		t.Errorf("errors: %+v", snap.Errors)
	}
	got := names(snap.Targets)
	want := []string{"beardog", "discovery", "lostprimal", "songbird", "squirrel", "towerd"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %q, want %q", got, want)
	}
	sq := byName(snap.Targets, "squirrel")
	if !reflect.DeepEqual(sq.Aliases, []string{"ai"}) {
		t.Errorf("aliases %q", sq.Aliases)
	}
	var srcs []string
	for _, s := range sq.Sources {
		srcs = append(srcs, s.Source)
	}
	sort.Strings(srcs)
	if !reflect.DeepEqual(srcs, []string{SrcEnv, SrcManifest, SrcSocketDir, SrcSongbird, SrcSymlink}) {
		t.Errorf("squirrel sources %q", srcs)
	}
	if sq.State() != StateLive || sq.Level != 3 || !reflect.DeepEqual(sq.Capabilities, []string{"ai"}) {
		t.Errorf("squirrel: %s L%d %v", sq.State(), sq.Level, sq.Capabilities)
	}
	if len(sq.Paths) != 2 || filepath.Base(sq.Endpoint.Path) != "squirrel.sock" {
		t.Errorf("paths %q endpoint %s", sq.Paths, sq.Address)
	}
	bd := byName(snap.Targets, "beardog")
	// Family-scoped by name and no seed: locked, never probed in cleartext.
	if bd.Family != "west-1" || bd.State() != StateLocked {
		t.Errorf("beardog: %+v L%d", bd, bd.Level)
	}
	tw := byName(snap.Targets, "towerd")
	if tw.State() != StateLive || tw.Endpoint.Address != e.tcp.Addr {
		t.Errorf("towerd: %+v", tw)
	}
	if lp := byName(snap.Targets, "lostprimal"); lp.State() != StateDead {
		t.Errorf("lostprimal: %s", lp.State())
	}
	if sb := byName(snap.Targets, "songbird"); sb.Kind != KindRegistry {
		t.Errorf("songbird kind %s", sb.Kind)
	}
	if probed != 6 {
		t.Errorf("onProbe called %d times", probed)
	}
	if ts := snap.Resolve("discovery"); len(ts) != 1 || ts[0].Kind != KindRegistry || ts[0].Family != "west-1" {
		t.Errorf("ecoPrimals/discovery-west-1.sock: %v", ts)
	}
	if ts := snap.Resolve("ai"); len(ts) != 1 || ts[0] != sq {
		t.Errorf("resolve ai: %v", ts)
	}
	if ts := snap.Resolve("unix://" + filepath.Join(e.dir, "ai.sock")); len(ts) != 1 || ts[0] != sq {
		t.Errorf("resolve by path: %v", ts)
	}

	// A second sweep re-probes live targets with liveness only and keeps
	// what the first learned.
	snap2, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	sq2 := byName(snap2.Targets, "squirrel")
	if sq2.Probe.Capabilities == nil || sq2.Level != 3 || len(Diff(sq, sq2)) != 0 {
		t.Errorf("second sweep lost data: %v", Diff(sq, sq2))
	}
	if _, ok := sq2.Probe.Calls["health.liveness"]; !ok {
		t.Error("liveness not re-probed")
	}
}

func TestSweepWithinStaleTimeout(t *testing.T) {
	dir := tempDir(t)
	for i := 0; i < 20; i++ {
		serve(t, dir, "hung"+string(rune('a'+i))+".sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	}
	serve(t, dir, "live.sock", primal("live", false).Config())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second, DialConcurrency: 2}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := 0
	for _, tg := range snap.Targets {
		if tg.State() == StateStale {
			stale++
		}
	}
	if stale != 20 || byName(snap.Targets, "live").State() != StateLive {
		t.Errorf("stale %d, live %s", stale, byName(snap.Targets, "live").State())
	}
}

func TestSweepPanickingSource(t *testing.T) {
	d := New(Options{Sources: []Source{panicSource{}}, NoProc: true, Getenv: func(string) string { return "" }})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil || len(snap.Errors) != 1 {
		t.Errorf("%v %+v", err, snap.Errors)
	}
}

type panicSource struct{}

func (panicSource) Name() string { return "panic" }
func (panicSource) Discover(context.Context) ([]Found, error) {
	panic("boom")
}

func TestLookup(t *testing.T) {
	e := newEcosystem(t)
	d := e.discoverer(time.Second)
	tg, err := d.Lookup(ctxT(t), "towerd")
	if err != nil || tg.Endpoint.Address != e.tcp.Addr {
		t.Fatalf("towerd: %+v %v", tg, err)
	}
	if tg, err := d.Lookup(ctxT(t), "ai"); err != nil || tg.Name != "squirrel" {
		t.Fatalf("ai: %+v %v", tg, err)
	}
	// A capability only the registry knows: ipc.discover.
	if tg, err := d.Lookup(ctxT(t), "compute"); err != nil || tg.Name != "towerd" || tg.Endpoint.Address != e.tcp.Addr {
		t.Fatalf("compute: %+v %v", tg, err)
	}
	if _, err := d.Lookup(ctxT(t), "nobody"); err == nil {
		t.Fatal("found nobody")
	} else if _, ok := err.(*NotFoundError); !ok {
		t.Fatalf("%T %v", err, err)
	}
}

func TestSweepConfigTargetMerges(t *testing.T) {
	e := newEcosystem(t)
	getenv, environ := envOf(e.env)
	cfg, err := config.Parse([]byte("[[target]]\nname = \"tower\"\nendpoint = \"tcp://localhost:" + e.tcp.Addr[strings.LastIndex(e.tcp.Addr, ":")+1:] + "\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := New(Options{Getenv: getenv, Environ: environ, SocketDirs: []string{e.dir}, NoProc: true, Config: cfg,
		Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 3 * time.Second}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	tw := byName(snap.Targets, "tower")
	if tw == nil || !reflect.DeepEqual(tw.Aliases, []string{"towerd"}) || tw.State() != StateLive || len(tw.Sources) != 2 {
		t.Fatalf("config and Songbird did not merge: %+v (targets %q)", tw, names(snap.Targets))
	}
}

func TestSweepRegistryFailureKeepsTargets(t *testing.T) {
	e := newEcosystem(t)
	d := e.discoverer(time.Second)
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil || byName(snap.Targets, "towerd") == nil {
		t.Fatalf("%v %q", err, names(snap.Targets))
	}
	// The registry answers garbage for a while: its targets stay, for a
	// few sweeps, then go.
	e.sb.SetGarbage(true)
	for i := 0; i < maxRegistryMisses; i++ {
		snap, _ = d.Sweep(ctxT(t), nil)
		if byName(snap.Targets, "towerd") == nil {
			t.Fatalf("sweep %d: towerd dropped at the first failed answer", i)
		}
	}
	snap, _ = d.Sweep(ctxT(t), nil)
	if byName(snap.Targets, "towerd") != nil {
		t.Fatal("towerd kept forever")
	}
}

func TestMergeLooseSightings(t *testing.T) {
	ep := unixEP("/run/x/beardog.sock")
	ts := merge([]Found{
		{Name: "faraway", Source: SrcSongbird, NoProbe: true, Note: "relay"},
		{Name: "faraway", Source: SrcNeural, NoProbe: true},
		{Name: "beardog", Source: SrcNeural, NoProbe: true, Note: "neural api says failed"},
		{Endpoint: ep, Name: "beardog", Source: SrcSocketDir},
		{Endpoint: ep, Name: "crypto", Alias: true, Source: SrcEnv, Detail: "CRYPTO_SOCKET"},
	})
	if len(ts) != 2 {
		t.Fatalf("%d targets: %q", len(ts), names(ts))
	}
	bd := byName(ts, "beardog")
	if bd == nil || bd.NoProbe || len(bd.Sources) != 3 || !reflect.DeepEqual(bd.Aliases, []string{"crypto"}) || len(bd.Notes) != 0 {
		t.Errorf("beardog: %+v", bd)
	}
	fa := byName(ts, "faraway")
	if fa == nil || !fa.NoProbe || len(fa.Sources) != 2 || fa.State() != StateUnprobed {
		t.Errorf("faraway: %+v", fa)
	}
}
