package composition

// Tests against the project's simulated peers (internal/peer through
// ipc/ipctest): real sockets, real discovery sweeps, real Gather calls.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func tempDir(t *testing.T) string {
	t.Helper()
	d, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func serve(t *testing.T, dir, name string, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// level3 is a simulated level-3 primal providing the groups' methods and
// consuming consumed.
func level3(name string, groups map[string][]string, consumed []string, opdeps map[string][]string) *ipctest.Primal {
	p := &ipctest.Primal{Name: name, Version: "1.0.0", Format: ipctest.FormatStandard, Level3: true,
		Consumed: consumed, OpDeps: opdeps, Costs: map[string]map[string]any{}}
	for typ, ms := range groups {
		p.Groups = append(p.Groups, ipctest.Group{Type: typ, Methods: ms})
		p.Domain = typ
	}
	return p
}

// sweep discovers what dir holds, as the CLI would with --socket-dir.
func sweep(t *testing.T, dir string) []*discovery.Target {
	t.Helper()
	d := discovery.New(discovery.Options{SocketDirs: []string{dir}, Getenv: func(string) string { return "" },
		Environ: func() []string { return nil }, NoProc: true, Confine: true,
		Probe: discovery.ProbeOptions{StaleTimeout: 400 * time.Millisecond}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Logf("sweep: %v", err)
	}
	return snap.Targets
}

func dialer(t *testing.T) *dial.Dialer {
	d, err := dial.New(dial.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func idOf(t *testing.T, g *Graph, name string) string {
	t.Helper()
	for _, n := range g.Nodes {
		if n.Name == name && n.Node == "" {
			return n.ID
		}
	}
	t.Fatalf("no node %q in %+v", name, g.Nodes)
	return ""
}

func TestPeersDeclaredGapDegradedCycles(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "beardog.sock", level3("beardog", map[string][]string{"crypto": {"sign", "hash"}}, []string{"ai.query"}, nil).Config())
	serve(t, dir, "squirrel.sock", level3("squirrel", map[string][]string{"ai": {"query", "plan"}},
		[]string{"crypto.sign", "vault.get", "ledger.append"},
		map[string][]string{"ai.query": {"ai.plan"}, "ai.plan": {"ai.query"}}).Config())
	// vault: a registry says it provides "vault"; its socket accepts and
	// never answers (stale).
	serve(t, dir, "vault.sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	sb := ipctest.NewSongbird()
	sb.Register(ipctest.Service{PrimalID: "vault", Capabilities: []string{"vault"}, Endpoint: filepath.Join(dir, "vault.sock")})
	serve(t, dir, "songbird.sock", sb.Config())

	ts := sweep(t, dir)
	gath := Gather(ctxT(t), dialer(t), ts, GatherOptions{Timeout: time.Second})
	g := Build(Inputs{Targets: ts, Registered: gath.Registered})
	sq, bd, vault := idOf(t, g, "squirrel"), idOf(t, g, "beardog"), idOf(t, g, "vault")

	if e := edgeOf(g, sq, bd, "crypto.sign"); e == nil || e.State != StateOK || !e.Has(SrcDeclared) {
		t.Errorf("squirrel → crypto.sign → beardog = %+v", e)
	}
	if e := edgeOf(g, sq, vault, "vault.get"); e == nil || e.State != StateDegraded {
		t.Errorf("squirrel → vault.get → a stale vault = %+v, want degraded", e)
	} else if e.Why != "provider vault is stale (no answer in time)" {
		t.Errorf("why = %q", e.Why)
	}
	if e := edgeOf(g, sq, MissingID("ledger.append"), "ledger.append"); e == nil || e.State != StateGap {
		t.Errorf("ledger.append = %+v, want a gap", e)
	}
	wantCycles := [][]string{{bd, sq, bd}, {sq, sq}}
	if !reflect.DeepEqual(g.Cycles, wantCycles) {
		t.Errorf("cycles = %v, want %v (consumption, then operation_dependencies)", g.Cycles, wantCycles)
	}
	if want := [][]string{{"ai.plan", "ai.query", "ai.plan"}}; !reflect.DeepEqual(g.MethodCycles, want) {
		t.Errorf("method cycles = %v", g.MethodCycles)
	}
}

// neuralAPI is a simulated biomeOS Neural API that reports dependencies,
// metrics, topology and a deploy graph, in the shapes Gather documents.
func neuralAPI() ipctest.Config {
	get := map[string]any{
		"squirrel": map[string]any{"name": "squirrel", "state": "running", "depends_on": []string{"beardog", "toadstool"},
			"metrics": map[string]any{"routes": []any{map[string]any{"to": "beardog", "capability": "crypto.sign", "calls_per_s": 2.5, "error_rate": 0.1, "p95_ms": 12.0}}}},
		"beardog": map[string]any{"name": "beardog", "state": "running", "depends_on": []string{},
			"metrics": map[string]any{"routes": []any{map[string]any{"to": "toadstool", "method": "compute.run", "calls_per_s": 1.0, "error_rate": 0.0, "p95_ms": 3.0}}}},
		"toadstool": map[string]any{"name": "toadstool", "state": "running", "depends_on": []string{}, "metrics": map[string]any{}},
	}
	return ipctest.Config{Methods: map[string]peer.HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) { return map[string]any{"alive": true}, nil },
		"lifecycle.status": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primals": []any{map[string]any{"name": "squirrel", "state": "running"},
				map[string]any{"name": "beardog", "state": "running"}, map[string]any{"name": "toadstool", "state": "running"}}, "count": 3, "healthy": 3}, nil
		},
		"lifecycle.get": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(p, &a)
			if r, ok := get[a.Name]; ok {
				return r, nil
			}
			return ipctest.Error(-32001, "no such primal")(context.Background(), nil)
		},
		"topology.get": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"nodes": []string{"squirrel", "beardog", "toadstool"},
				"edges": []any{map[string]any{"from": "toadstool", "to": "beardog", "capability": "crypto.hash"}}}, nil
		},
		"graph.list": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"graphs": []any{map[string]any{"id": "g1", "name": "tower", "state": "running", "nodes": []any{
				map[string]any{"id": "n1", "primal": "beardog", "state": "completed"},
				map[string]any{"id": "n2", "primal": "squirrel", "state": "failed", "depends_on": []string{"n1"}}}}}}, nil
		},
	}}
}

func TestPeersOrchestratorGraphObservedStates(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "beardog.sock", level3("beardog", map[string][]string{"crypto": {"sign", "hash"}}, []string{}, nil).Config())
	serve(t, dir, "squirrel.sock", level3("squirrel", map[string][]string{"ai": {"query"}}, []string{"crypto.sign", "crypto.hash"}, nil).Config())
	serve(t, dir, "toadstool.sock", level3("toadstool", map[string][]string{"compute": {"run"}}, []string{}, nil).Config())
	serve(t, dir, "neural-api.sock", neuralAPI())

	ts := sweep(t, dir)
	gath := Gather(ctxT(t), dialer(t), ts, GatherOptions{Timeout: time.Second})
	if len(gath.Errs) > 0 {
		t.Fatalf("gather: %v", gath.Errs)
	}
	if !gath.TrafficReported || len(gath.Orchestrated) != 3 || len(gath.Links) != 1 || len(gath.Graphs) != 1 || len(gath.Routes) != 2 {
		t.Fatalf("gathered %+v", gath)
	}
	g := Build(Inputs{Targets: ts, Orchestrated: gath.Orchestrated, Links: gath.Links, Graphs: gath.Graphs,
		Routes: gath.Routes, TrafficReported: gath.TrafficReported})
	sq, bd, ts2 := idOf(t, g, "squirrel"), idOf(t, g, "beardog"), idOf(t, g, "toadstool")

	e := edgeOf(g, sq, bd, "crypto.sign")
	if e == nil || !reflect.DeepEqual(e.Sources, []Source{SrcDeclared, SrcOrchestrator, SrcGraph, SrcObserved}) || e.State != StateOK {
		t.Fatalf("squirrel → crypto.sign = %+v", e)
	}
	if e.Traffic == nil || e.Traffic.CallsPerS != 2.5 || e.Traffic.ErrorRate != 0.1 || e.Traffic.P95ms != 12 || !e.Traffic.Reported {
		t.Errorf("traffic = %+v", e.Traffic)
	}
	if e := edgeOf(g, sq, bd, "crypto.hash"); e == nil || e.State != StateUnused || e.Traffic != nil {
		t.Errorf("squirrel → crypto.hash, declared, no traffic = %+v, want unused", e)
	}
	if e := edgeOf(g, sq, ts2, ""); e == nil || !reflect.DeepEqual(e.Sources, []Source{SrcOrchestrator}) {
		t.Errorf("squirrel depends_on toadstool = %+v", e)
	}
	if e := edgeOf(g, ts2, bd, "crypto.hash"); e == nil || !reflect.DeepEqual(e.Sources, []Source{SrcOrchestrator}) {
		t.Errorf("topology edge = %+v", e)
	}
	if e := edgeOf(g, bd, ts2, "compute.run"); e == nil || e.State != StateUndeclared || !reflect.DeepEqual(e.Sources, []Source{SrcObserved}) {
		t.Errorf("beardog → compute.run, only in traffic = %+v, want undeclared", e)
	}
	if n, _ := g.Node(sq); n.Step != "deploy tower: failed" || !n.StepFailed {
		t.Errorf("squirrel's deploy step = %q", n.Step)
	}
	if n, _ := g.Node(bd); n.Step != "deploy tower: completed" || n.StepFailed {
		t.Errorf("beardog's deploy step = %q", n.Step)
	}
}

// TestPeersObservedEventsAndHistory: the biomeOS API's event stream (a
// simulated one, over its Unix socket with the riboCipher prefix) names a
// caller and a callee, and a deploy graph's progress; the model shows both.
func TestPeersObservedEventsAndHistory(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "beardog.sock", level3("beardog", map[string][]string{"crypto": {"sign"}}, []string{}, nil).Config())
	serve(t, dir, "squirrel.sock", level3("squirrel", map[string][]string{"ai": {"query"}}, []string{"crypto.sign"}, nil).Config())
	bio, err := ipctest.ListenBiomeOS(filepath.Join(dir, "biomeos-api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer bio.Close()
	ts := sweep(t, dir)
	m := NewModel(Inputs{Targets: ts})
	sq, bd := idOf(t, m.Graph(), "squirrel"), idOf(t, m.Graph(), "beardog")

	ctx, cancel := context.WithCancel(ctxT(t))
	st := events.Merge(ctx, []events.Source{&events.SSESource{Source: "biomeos-api", Path: bio.Path}}, events.Options{})
	defer func() { cancel(); st.Wait() }()
	// The stream is open when a heartbeat comes through it (a stream the
	// server registered may still be reopening on the client's side).
	for ready := false; !ready; {
		if ctx.Err() != nil {
			t.Fatal("the event stream never opened")
		}
		_ = bio.Heartbeat(2, 2, nil)
		wctx, wcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		for {
			ev, err := st.Next(wctx)
			if err != nil {
				break
			}
			if ev.Kind == events.KindSSE && ev.Name == "heartbeat" {
				ready = true
				break
			}
		}
		wcancel()
	}
	for i := 0; i < 3; i++ {
		if err := bio.Publish("capability_called", map[string]any{"caller": "squirrel", "callee": "beardog", "method": "crypto.sign",
			"latency_ms": float64(10 * (i + 1)), "ok": i != 2}); err != nil {
			t.Fatal(err)
		}
	}
	_ = bio.Publish("graph_started", map[string]any{"graph_id": "g9", "name": "nightly", "nodes": []any{map[string]any{"id": "a", "primal": "beardog"}}})
	_ = bio.Publish("node_completed", map[string]any{"graph_id": "g9", "node_id": "a"})
	seen := 0
	for seen < 5 {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events: %v", seen, err)
		}
		if ev.Kind != events.KindSSE || ev.Name == "heartbeat" {
			continue
		}
		seen++
		if ch := m.Apply(ev); !ch.Graph {
			t.Fatalf("event %s changed nothing", ev.Name)
		}
	}
	e := edgeOf(m.Graph(), sq, bd, "crypto.sign")
	if e == nil || !reflect.DeepEqual(e.Sources, []Source{SrcDeclared, SrcObserved}) || e.Traffic == nil ||
		e.Traffic.Calls != 3 || e.Traffic.Errors != 1 || e.Traffic.P95ms != 30 || !m.Graph().TrafficKnown {
		t.Fatalf("squirrel → crypto.sign after 3 events = %+v %+v", e, e.Traffic)
	}
	if n, _ := m.Graph().Node(bd); n.Step != "deploy nightly: completed" {
		t.Errorf("beardog's step = %q", n.Step)
	}

	// The user's own calls, from history, come from the "you" node.
	var bdAddr string
	for _, x := range ts {
		if x.Name == "beardog" {
			bdAddr = x.Address
		}
	}
	m.AddCalls(FromHistory(historyEntry(bdAddr, "beardog", "crypto.sign", 4*time.Millisecond, true)))
	you := edgeOf(m.Graph(), YouID, bd, "crypto.sign")
	if you == nil || you.State != StateOK || you.Traffic == nil || you.Traffic.Calls != 1 {
		t.Fatalf("you → beardog = %+v", you)
	}
	if n, ok := m.Graph().Node(YouID); !ok || n.Kind != KindYou {
		t.Fatalf("no you node: %+v", n)
	}
}
