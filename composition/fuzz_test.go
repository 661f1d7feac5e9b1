package composition

import (
	"encoding/json"
	"testing"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// FuzzApply: whatever an event says, applying it never panics, and the map
// stays consistent (every edge's ends are nodes).
func FuzzApply(f *testing.F) {
	for _, s := range []struct{ kind, name, payload string }{
		{events.KindSSE, "capability_called", `{"caller":"a","callee":null,"capability":"x.y","duration_ms":1e308}`},
		{events.KindSSE, "graph_started", `{"graph_id":"g","nodes":[{"id":"n","primal":"a","depends_on":["n","n"]},7,null]}`},
		{events.KindSSE, "node_failed", `{"graph_id":"g","node":"zz","primal":{"x":1}}`},
		{events.KindRegistry, "registered", `{"primal":"v","endpoint":"tcp://[::1]:99999","capabilities":[1,"a",null]}`},
		{events.KindRegistry, "unregistered", `{"primal":"a"}`},
		{events.KindSSE, "health_changed", `{"primal":"b","healthy":"yes"}`},
		{events.KindLiveness, "gone", `{}`},
		{events.KindNotification, "x", `{"from":"you","to":"missing:","method":"m"}`},
	} {
		f.Add(s.kind, s.name, s.payload)
	}
	f.Fuzz(func(t *testing.T, kind, name, payload string) {
		a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m"})
		b := tgt("b", discovery.StateLive, []string{"b.m"}, nil)
		m := NewModel(Inputs{Targets: []*discovery.Target{a, b}})
		m.Apply(events.Event{Source: "b", Kind: kind, Name: name, Payload: json.RawMessage(payload)})
		g := m.Graph()
		for _, e := range g.Edges {
			if _, ok := g.Node(e.From); !ok {
				t.Fatalf("edge from a node not in the map: %+v", e)
			}
			if _, ok := g.Node(e.To); !ok {
				t.Fatalf("edge to a node not in the map: %+v", e)
			}
		}
		Layout(g, nil)
	})
}
