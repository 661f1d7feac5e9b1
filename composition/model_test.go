package composition

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
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
