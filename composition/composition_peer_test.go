package composition

import (
	"reflect"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// TestCompositionPeerEverySourceAndState runs the whole path — discovery,
// Gather (registries, the Neural API, the federation over TCP), Build —
// against internal/peer's two-node test composition, after one round of
// traffic, one deploy-graph run and its stale provider stalled.
func TestCompositionPeerEverySourceAndState(t *testing.T) {
	dir := tempDir(t)
	c, err := peer.StartComposition(peer.CompositionOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := ctxT(t)
	c.Traffic(ctx)
	if _, err := c.RunGraph(ctx); err != nil {
		t.Fatal(err)
	}
	c.SetStale(true)

	ts := sweep(t, dir)
	gath := Gather(ctx, dialer(t), ts, GatherOptions{Timeout: time.Second, Federation: true})
	if len(gath.Errs) > 0 {
		t.Logf("gather errors: %v", gath.Errs)
	}
	g := Build(Inputs{Targets: ts, Remote: gath.Remote, Registered: gath.Registered, Orchestrated: gath.Orchestrated,
		Links: gath.Links, Graphs: gath.Graphs, Routes: gath.Routes, TrafficReported: gath.TrafficReported})
	id := func(name, node string) string {
		for _, n := range g.Nodes {
			if n.Name == name && n.Node == node && !n.Missing {
				return n.ID
			}
		}
		t.Fatalf("no %s on node %q: %+v", name, node, g.Nodes)
		return ""
	}
	bd, ng, rc, cr, ts2 := id("beardog", ""), id("nestgate", ""), id("rhizocrypt", ""), id("coralreef", ""), id("toadstool", "")
	sq := id("squirrel", peer.RemoteNodeID)
	edge := func(from, to, c string) *Edge {
		t.Helper()
		e := edgeOf(g, from, to, c)
		if e == nil {
			t.Fatalf("no edge %s → %s (%s); edges: %+v", from, to, c, g.Edges)
		}
		return e
	}
	// declared + orchestrator + observed, ok, with the Neural API's figures.
	if e := edge(rc, bd, "crypto.sign"); e.State != StateOK || !e.Has(SrcDeclared) || !e.Has(SrcOrchestrator) || !e.Has(SrcObserved) ||
		e.Traffic == nil || e.Traffic.CallsPerS <= 0 {
		t.Errorf("rhizocrypt → crypto.sign = %+v %+v", e, e.Traffic)
	}
	// gap, with the calls that went into it.
	if e := edge(ts2, MissingID(peer.CompositionGap), peer.CompositionGap); e.State != StateGap || e.Traffic == nil || e.Traffic.ErrorRate != 1 {
		t.Errorf("gap = %+v %+v", e, e.Traffic)
	}
	// degraded: coralreef stalled.
	if e := edge(ts2, cr, "shader.compile"); e.State != StateDegraded {
		t.Errorf("toadstool → shader.compile = %+v", e)
	}
	// undeclared: coralreef calls crypto.hash without declaring it.
	if e := edge(cr, bd, "crypto.hash"); e.State != StateUndeclared || !reflect.DeepEqual(e.Sources, []Source{SrcObserved}) {
		t.Errorf("coralreef → crypto.hash = %+v", e)
	}
	// unused, across the federation: toadstool's ai.complete on node-b.
	if e := edge(ts2, sq, "ai.complete"); e.State != StateUnused {
		t.Errorf("toadstool → ai.complete → node-b's squirrel = %+v", e)
	}
	// node-b's squirrel consumes dag.append from this node.
	if e := edge(sq, rc, "dag.append"); e.State == StateGap {
		t.Errorf("node-b's squirrel → dag.append = %+v", e)
	}
	// cycles: nestgate ⇄ rhizocrypt, named once.
	want := []string{ng, rc, ng}
	if rc < ng {
		want = []string{rc, ng, rc}
	}
	found := 0
	for _, cy := range g.Cycles {
		if reflect.DeepEqual(cy, want) {
			found++
		}
	}
	if found != 1 {
		t.Errorf("cycles %v: want %v once", g.Cycles, want)
	}
	// graph: the failing node, and the one skipped after it.
	failed := 0
	for _, n := range g.Nodes {
		if n.StepFailed {
			failed++
		}
	}
	if n, _ := g.Node(rc); n.Step == "" || failed == 0 {
		t.Errorf("deploy steps: rhizocrypt %q, %d failed", n.Step, failed)
	}
	if !g.TrafficKnown {
		t.Error("traffic reported, yet unknown")
	}
}
