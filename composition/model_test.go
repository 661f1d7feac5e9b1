package composition

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

func TestModelHealthGoneAndEvents(t *testing.T) {
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m"})
	b := tgt("b", discovery.StateLive, []string{"b.m"}, nil)
	m := NewModel(Inputs{Targets: []*discovery.Target{a, b}})
	first := m.Graph()
	if edgeOf(first, a.ID, b.ID, "b.m").State != StateOK {
		t.Fatal("a→b not ok at first")
	}
	ch := m.Apply(events.Event{Source: "b", Kind: events.KindLiveness, Name: events.StateStale, Payload: json.RawMessage(`{"state":"stale"}`)})
	if !ch.Graph || edgeOf(m.Graph(), a.ID, b.ID, "b.m").State != StateDegraded {
		t.Fatalf("after b went stale: %+v, %+v", ch, edgeOf(m.Graph(), a.ID, b.ID, "b.m"))
	}
	if edgeOf(first, a.ID, b.ID, "b.m").State != StateOK {
		t.Fatal("a graph handed out was modified")
	}
	// The health override survives a rebuild (a call arriving).
	m.AddCalls(Call{At: time.Now(), From: YouID, To: "a", Method: "a.m"})
	if edgeOf(m.Graph(), a.ID, b.ID, "b.m").State != StateDegraded {
		t.Fatal("a rebuild forgot the event's health")
	}
	// b leaves: drawn as gone until the user moves.
	m.SetTargets([]*discovery.Target{a}, nil)
	n, ok := m.Graph().Node(b.ID)
	if !ok || !n.Gone || edgeOf(m.Graph(), a.ID, b.ID, "b.m").State != StateDegraded {
		t.Fatalf("b after leaving: %+v", n)
	}
	m.Moved()
	if _, ok := m.Graph().Node(b.ID); ok {
		t.Fatal("gone node kept after the user moved")
	}
	if e := edgeOf(m.Graph(), a.ID, MissingID("b.m"), "b.m"); e == nil || e.State != StateGap {
		t.Fatalf("with b gone for good, b.m is a gap: %+v", e)
	}
	// A deploy graph's events show progress on the nodes.
	m.Apply(events.Event{Kind: events.KindSSE, Name: "graph_started", Payload: json.RawMessage(`{"graph_id":"g1","name":"tower","nodes":[{"id":"s1","primal":"a"}]}`)})
	m.Apply(events.Event{Kind: events.KindSSE, Name: "node_failed", Payload: json.RawMessage(`{"graph_id":"g1","node_id":"s1","error":"boom"}`)})
	if n, _ := m.Graph().Node(a.ID); n.Step != "deploy tower: failed" || !n.StepFailed {
		t.Fatalf("a's step = %q", n.Step)
	}
}

func TestModelRegistrationsAndRefresh(t *testing.T) {
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"vault.get"})
	m := NewModel(Inputs{Targets: []*discovery.Target{a}})
	if e := edgeOf(m.Graph(), a.ID, MissingID("vault.get"), "vault.get"); e == nil || e.State != StateGap {
		t.Fatalf("before vault registers: %+v", e)
	}
	// ipc.watch: vault registers, with its endpoint and capabilities. It is
	// drawn at once (unprobed), and the caller is told to sweep.
	ch := m.Apply(events.Event{Source: "songbird", Kind: events.KindRegistry, Name: "registered",
		Payload: json.RawMessage(`{"revision":3,"kind":"registered","primal":"vault","capabilities":["vault"],"endpoint":"/run/vault.sock"}`)})
	if !ch.Graph || !ch.Refresh {
		t.Fatalf("registration: %+v", ch)
	}
	g := m.Graph()
	vid, ok := g.Find("vault")
	if !ok {
		t.Fatal("vault not drawn after registering")
	}
	if e := edgeOf(g, a.ID, vid, "vault.get"); e == nil || e.State != StateOK {
		t.Fatalf("a → vault.get after registration = %+v", e)
	}
	if _, ok := g.Node(MissingID("vault.get")); ok {
		t.Fatal("the gap's node stayed after a provider came")
	}
	// primal_discovered for a name already drawn changes nothing but asks
	// for a sweep; topology_changed only asks.
	if ch := m.Apply(events.Event{Kind: events.KindSSE, Name: "primal_discovered", Payload: json.RawMessage(`{"primal":"vault"}`)}); ch.Graph || !ch.Refresh {
		t.Fatalf("primal_discovered again: %+v", ch)
	}
	if ch := m.Apply(events.Event{Kind: events.KindSSE, Name: "topology_changed", Payload: json.RawMessage(`{}`)}); ch.Graph || !ch.Refresh {
		t.Fatalf("topology_changed: %+v", ch)
	}
	// health_changed from the biomeOS API.
	m.Apply(events.Event{Kind: events.KindSSE, Name: "health_changed", Payload: json.RawMessage(`{"primal":"vault","status":"unhealthy"}`)})
	if e := edgeOf(m.Graph(), a.ID, vid, "vault.get"); e.State != StateDegraded {
		t.Fatalf("after health_changed unhealthy: %+v", e)
	}
	// The registry says it left: gone (degraded) until the next sweep.
	m.Apply(events.Event{Source: "songbird", Kind: events.KindRegistry, Name: "unregistered", Payload: json.RawMessage(`{"primal":"vault"}`)})
	if e := edgeOf(m.Graph(), a.ID, vid, "vault.get"); e.State != StateDegraded || e.Why != "provider vault is gone" {
		t.Fatalf("after unregistering: %+v", e)
	}
	// Hostile payloads change nothing and do not panic.
	for _, p := range []string{`null`, `[]`, `{"primal":5}`, `{"caller":"a"}`, `"x"`, `{"graph_id":{}}`} {
		for _, k := range []string{events.KindRegistry, events.KindSSE, events.KindLiveness, events.KindNotification} {
			m.Apply(events.Event{Kind: k, Name: "health_changed", Payload: json.RawMessage(p)})
		}
	}
}

func TestDegradedBTSPRefusalAndLevel(t *testing.T) {
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m", "c.m"})
	b := tgt("b", discovery.StateLocked, []string{"b.m"}, nil)
	b.Probe.BTSPRejection = &ipc.RPCError{Code: -32001, Message: "family mismatch"}
	c := tgt("c", discovery.StateLive, []string{"c.m"}, nil)
	c.Level = 1
	g := Build(Inputs{Targets: []*discovery.Target{a, b, c}, MinLevel: 2})
	if e := edgeOf(g, a.ID, b.ID, "b.m"); e == nil || e.State != StateDegraded || e.Why != "provider b refuses BTSP: family mismatch" {
		t.Fatalf("a → b (BTSP refused) = %+v", e)
	}
	if e := edgeOf(g, a.ID, c.ID, "c.m"); e == nil || e.State != StateDegraded || e.Why != "provider c is level 1, below the required 2" {
		t.Fatalf("a → c (level 1) = %+v", e)
	}
	// Locked without a refusal is no fault of the provider's: family
	// members speak BTSP.
	b.Probe.BTSPRejection = nil
	if e := edgeOf(Build(Inputs{Targets: []*discovery.Target{a, b, c}}), a.ID, b.ID, "b.m"); e.State != StateOK {
		t.Fatalf("a → b (locked, no refusal) = %+v", e)
	}
}
