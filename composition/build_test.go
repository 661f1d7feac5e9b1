package composition

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// tgt is a probed target for unit tests: methods it provides, capabilities
// it consumes.
func tgt(name string, state discovery.State, methods, consumed []string) *discovery.Target {
	return &discovery.Target{ID: "unix:/run/" + name + ".sock", Name: name, Kind: discovery.KindPrimal, Level: 3,
		Probe: &discovery.Probe{State: state, Capabilities: &capability.Capabilities{Primal: name, Methods: methods, Consumed: consumed}}}
}

func edgeOf(g *Graph, from, to, c string) *Edge {
	for i := range g.Edges {
		e := &g.Edges[i]
		if e.From == from && e.To == to && e.Capability == c {
			return e
		}
	}
	return nil
}

func TestBuildDeclaredEdgesGapDegradedCycle(t *testing.T) {
	ai := tgt("squirrel", discovery.StateLive, []string{"ai.query"}, []string{"crypto.sign", "storage", "quantum.entangle"})
	cr := tgt("beardog", discovery.StateLive, []string{"crypto.sign", "crypto.verify"}, []string{"ai.query"})
	st := tgt("nestgate", discovery.StateStale, nil, nil)
	st.Probe.Capabilities = nil
	st.Capabilities = []string{"storage"} // known from a registry's list only
	g := Build(Inputs{Targets: []*discovery.Target{ai, cr, st}})

	if e := edgeOf(g, ai.ID, cr.ID, "crypto.sign"); e == nil || e.State != StateOK || !reflect.DeepEqual(e.Sources, []Source{SrcDeclared}) {
		t.Fatalf("crypto.sign edge = %+v", e)
	}
	if e := edgeOf(g, ai.ID, st.ID, "storage"); e == nil || e.State != StateDegraded || e.Why == "" {
		t.Fatalf("storage edge to a stale provider = %+v, want degraded with a reason", e)
	}
	e := edgeOf(g, ai.ID, MissingID("quantum.entangle"), "quantum.entangle")
	if e == nil || e.State != StateGap {
		t.Fatalf("quantum.entangle = %+v, want a gap", e)
	}
	if n, ok := g.Node(MissingID("quantum.entangle")); !ok || !n.Missing || n.Health != HealthMissing {
		t.Fatalf("missing node = %+v", n)
	}
	want := [][]string{{cr.ID, ai.ID, cr.ID}}
	if !reflect.DeepEqual(g.Cycles, want) {
		t.Fatalf("cycles = %v, want %v", g.Cycles, want)
	}
	if !edgeOf(g, ai.ID, cr.ID, "crypto.sign").InCycle || edgeOf(g, ai.ID, st.ID, "storage").InCycle {
		t.Fatal("InCycle marks the wrong edges")
	}
	if g.TrafficKnown {
		t.Fatal("no traffic source, yet TrafficKnown")
	}
	if len(g.Out(ai.ID)) != 3 || len(g.In(cr.ID)) != 1 {
		t.Fatalf("out(ai)=%d in(cr)=%d", len(g.Out(ai.ID)), len(g.In(cr.ID)))
	}
}

func TestNeighborhoodBothWays(t *testing.T) {
	// a → b → c → d, and x → c
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m"})
	b := tgt("b", discovery.StateLive, []string{"b.m"}, []string{"c.m"})
	c := tgt("c", discovery.StateLive, []string{"c.m"}, []string{"d.m"})
	d := tgt("d", discovery.StateLive, []string{"d.m"}, nil)
	x := tgt("x", discovery.StateLive, []string{"x.m"}, []string{"c.m"})
	g := Build(Inputs{Targets: []*discovery.Target{a, b, c, d, x}})
	ids := func(g *Graph) []string {
		var s []string
		for _, n := range g.Nodes {
			s = append(s, n.Name)
		}
		return s
	}
	if got := ids(Neighborhood(g, c.ID, 1)); !reflect.DeepEqual(got, []string{"b", "c", "d", "x"}) {
		t.Fatalf("1 hop around c = %v", got)
	}
	if got := ids(Neighborhood(g, b.ID, 1)); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("1 hop around b = %v (x is a sibling, not a neighbour)", got)
	}
	if got := ids(Neighborhood(g, b.ID, 2)); !reflect.DeepEqual(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("2 hops around b = %v", got)
	}
}

func TestObservedTrafficStates(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b", "c.m"})
	b := tgt("b", discovery.StateLive, []string{"b.x", "b.y"}, nil)
	c := tgt("c", discovery.StateLive, []string{"c.m"}, nil)
	var calls []Call
	for i := 0; i < 30; i++ {
		calls = append(calls, Call{At: now.Add(-time.Duration(i) * time.Second), From: "a", To: "b", Method: "b.x",
			Latency: time.Duration(i+1) * time.Millisecond, Failed: i%10 == 0})
	}
	calls = append(calls, Call{At: now.Add(-time.Second), From: "c", To: "b", Method: "b.y"})
	calls = append(calls, Call{At: now.Add(-time.Second), From: YouID, To: "c", Method: "c.m"})
	g := Build(Inputs{Targets: []*discovery.Target{a, b, c}, Calls: calls, Now: now, Window: time.Minute})
	if !g.TrafficKnown {
		t.Fatal("calls between primals, yet traffic unknown")
	}
	e := edgeOf(g, a.ID, b.ID, "b")
	if e == nil || e.State != StateOK || !reflect.DeepEqual(e.Sources, []Source{SrcDeclared, SrcObserved}) {
		t.Fatalf("a→b = %+v", e)
	}
	if e.Traffic == nil || e.Traffic.Calls != 30 || e.Traffic.Errors != 3 || fmt.Sprintf("%.2f", e.Traffic.CallsPerS) != "0.50" ||
		e.Traffic.P95ms != 29 || len(e.Traffic.Series) != SeriesLen {
		t.Fatalf("traffic = %+v", e.Traffic)
	}
	if e := edgeOf(g, a.ID, c.ID, "c.m"); e == nil || e.State != StateUnused || e.Traffic != nil {
		t.Fatalf("a→c never called = %+v, want unused, no figures", e)
	}
	if e := edgeOf(g, c.ID, b.ID, "b.y"); e == nil || e.State != StateUndeclared {
		t.Fatalf("c→b = %+v, want undeclared", e)
	}
	if e := edgeOf(g, YouID, c.ID, "c.m"); e == nil || e.State != StateOK {
		t.Fatalf("you→c = %+v", e)
	}
}

// A cycle that shows both in consumption and in operation_dependencies is
// named once.
func TestCycleInBothNamedOnce(t *testing.T) {
	r := tgt("rhizocrypt", discovery.StateLive, []string{"dag.append", "dag.create"}, []string{"storage.store"})
	r.Probe.Capabilities.OperationDependencies = map[string][]string{"dag.append": {"dag.create"}, "dag.create": {"storage.store"}}
	n := tgt("nestgate", discovery.StateLive, []string{"storage.store"}, []string{"dag.append"})
	n.Probe.Capabilities.OperationDependencies = map[string][]string{"storage.store": {"dag.append"}}
	g := Build(Inputs{Targets: []*discovery.Target{r, n}})
	if want := [][]string{{n.ID, r.ID, n.ID}}; !reflect.DeepEqual(g.Cycles, want) {
		t.Fatalf("cycles = %v, want %v", g.Cycles, want)
	}
	if len(g.MethodCycles) != 1 {
		t.Fatalf("method cycles = %v", g.MethodCycles)
	}
}

// Two providers of one name (a plain socket and a family-scoped one):
// traffic reported by name counts for both, so neither is unused.
func TestTwinProvidersNotUnused(t *testing.T) {
	c := tgt("toadstool", discovery.StateLive, []string{"compute.run"}, []string{"crypto.hash"})
	b1 := tgt("beardog", discovery.StateLive, []string{"crypto.hash"}, nil)
	b2 := tgt("beardog", discovery.StateLive, []string{"crypto.hash"}, nil)
	b2.ID = "unix:/run/beardog-fam.sock"
	g := Build(Inputs{Targets: []*discovery.Target{c, b1, b2}, TrafficReported: true,
		Routes: []Route{{From: "toadstool", To: "beardog", Capability: "crypto.hash", CallsPerS: 1, P95ms: -1}}})
	for _, id := range []string{b1.ID, b2.ID} {
		if e := edgeOf(g, c.ID, id, "crypto.hash"); e == nil || e.State != StateOK {
			t.Fatalf("toadstool → %s = %+v", id, e)
		}
	}
}

func TestTinyWindowNoPanic(t *testing.T) {
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m"})
	b := tgt("b", discovery.StateLive, []string{"b.m"}, nil)
	now := time.Now()
	g := Build(Inputs{Targets: []*discovery.Target{a, b}, Now: now, Window: time.Nanosecond,
		Calls: []Call{{At: now, From: "a", To: "b", Method: "b.m"}}})
	if e := edgeOf(g, a.ID, b.ID, "b.m"); e == nil || e.Traffic == nil || e.Traffic.Calls != 1 {
		t.Fatalf("%+v", e)
	}
}

// A call to a method nobody declared is its own undeclared edge, even where
// the orchestrator says the caller depends on the callee: folded into the
// dependency, it would show as an ok edge and the method would vanish.
func TestUndeclaredCallBesideADependency(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := tgt("squirrel", discovery.StateLive, []string{"ai.complete"}, []string{})
	r := tgt("rhizocrypt", discovery.StateLive, []string{"dag.session.create", "dag.session.list"}, nil)
	g := Build(Inputs{Targets: []*discovery.Target{s, r}, Now: now, Window: time.Minute,
		Orchestrated: []Orchestrated{{Name: "squirrel", State: "running", DependsOn: []string{"rhizocrypt"}}},
		Calls:        []Call{{At: now.Add(-time.Second), From: "squirrel", To: "rhizocrypt", Method: "dag.session.list"}}})
	if e := edgeOf(g, s.ID, r.ID, "dag.session.list"); e == nil || e.State != StateUndeclared {
		t.Fatalf("squirrel → rhizocrypt dag.session.list = %+v, want an undeclared edge of its own", e)
	}
	if e := edgeOf(g, s.ID, r.ID, ""); e != nil && e.Traffic != nil && e.Traffic.Calls > 0 {
		t.Fatalf("the dependency edge took the undeclared call: %+v", e.Traffic)
	}
}
