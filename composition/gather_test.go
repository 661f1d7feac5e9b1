package composition

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// The shapes internal/peer's simulated Neural API documents (its package
// doc, "Neural API shapes"): lifecycle.get metrics with outbound routes,
// topology.get with depends_on and route edges.
func TestNeuralShapesAsThePeerDocumentsThem(t *testing.T) {
	var metrics any
	_ = json.Unmarshal([]byte(`{"collected_at":"2026-11-26T12:00:00Z","window_s":60,"calls":9,"errors":1,
		"outbound":[{"callee":"beardog","capability":"crypto.sign_ed25519","calls":6,"errors":1,"calls_per_s":0.6,"error_rate":0.1,
		             "latency_ms":{"p50":0.4,"p95":1.9,"max":3.2}},
		            {"callee":null,"capability":"ledger.append","calls":3,"errors":3,"calls_per_s":0.3,"error_rate":1,"latency_ms":null}],
		"inbound":[{"caller":"squirrel","capability":"x.y","calls_per_s":5,"error_rate":0}]}`), &metrics)
	got := parseRoutes("toadstool", metrics)
	want := []Route{
		{From: "toadstool", To: "beardog", Capability: "crypto.sign_ed25519", CallsPerS: 0.6, ErrorRate: 0.1, P95ms: 1.9},
		{From: "toadstool", To: MissingID("ledger.append"), Capability: "ledger.append", CallsPerS: 0.3, ErrorRate: 1, P95ms: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("routes:\n got %+v\nwant %+v", got, want)
	}
	links, routes, traffic := parseTopology(json.RawMessage(`{"family_id":"f","nodes":[{"id":"a"}],
		"edges":[{"from":"toadstool","to":"beardog","kind":"depends_on"},
		         {"from":"toadstool","to":"beardog","kind":"route","capability":"crypto.hash","calls":4,"errors":0}]}`))
	if !reflect.DeepEqual(links, []Link{{From: "toadstool", To: "beardog"}}) || len(routes) != 0 || traffic {
		t.Fatalf("topology: links %+v routes %+v traffic %v (a route edge is no dependency)", links, routes, traffic)
	}
	gs := parseGraphs(json.RawMessage(`{"graphs":[{"id":"g","name":"tower","every_s":60,"status":"failed","nodes":[
		{"id":"n1","primal":"beardog","depends_on":[],"status":"completed"},
		{"id":"n2","primal":"coralreef","depends_on":["n1"],"status":"failed","error":"timeout"}]}]}`))
	if len(gs) != 1 || gs[0].State != "failed" || len(gs[0].Nodes) != 2 || gs[0].Nodes[1].State != "failed" ||
		!reflect.DeepEqual(gs[0].Nodes[1].DependsOn, []string{"n1"}) {
		t.Fatalf("graphs: %+v", gs)
	}

	// Built: the gap's edge carries the calls that went into it.
	to := tgt("toadstool", discovery.StateLive, []string{"compute.run"}, []string{"crypto.sign_ed25519", "ledger.append"})
	bd := tgt("beardog", discovery.StateLive, []string{"crypto.sign_ed25519"}, nil)
	g := Build(Inputs{Targets: []*discovery.Target{to, bd}, Routes: got, TrafficReported: true})
	e := edgeOf(g, to.ID, MissingID("ledger.append"), "ledger.append")
	if e == nil || e.State != StateGap || e.Traffic == nil || e.Traffic.CallsPerS != 0.3 || !e.Has(SrcObserved) {
		t.Fatalf("gap edge with traffic = %+v", e)
	}
	if e := edgeOf(g, to.ID, bd.ID, "crypto.sign_ed25519"); e == nil || e.State != StateOK || e.Traffic.P95ms != 1.9 {
		t.Fatalf("routed edge = %+v", e)
	}
}

func TestCapabilityCalledEvents(t *testing.T) {
	to := tgt("toadstool", discovery.StateLive, []string{"compute.run"}, []string{"ledger.append", "crypto.hash"})
	bd := tgt("beardog", discovery.StateLive, []string{"crypto.hash"}, nil)
	m := NewModel(Inputs{Targets: []*discovery.Target{to, bd}})
	at := time.Now()
	for _, p := range []string{
		`{"caller":"toadstool","callee":null,"capability":"ledger.append","ok":false,"error":"-32001 No provider","duration_ms":0.1}`,
		`{"caller":"toadstool","callee":"beardog","capability":"crypto.hash","ok":true,"duration_ms":2.5}`,
	} {
		if ch := m.Apply(events.Event{Time: at, Kind: events.KindSSE, Name: "capability_called", Payload: json.RawMessage(p)}); !ch.Graph {
			t.Fatalf("%s changed nothing", p)
		}
	}
	g := m.Graph()
	if e := edgeOf(g, to.ID, MissingID("ledger.append"), "ledger.append"); e == nil || e.State != StateGap || e.Traffic == nil || e.Traffic.Errors != 1 {
		t.Fatalf("gap after a call into it = %+v", e)
	}
	if e := edgeOf(g, to.ID, bd.ID, "crypto.hash"); e == nil || e.Traffic == nil || e.Traffic.P95ms != 2.5 {
		t.Fatalf("crypto.hash = %+v", e)
	}
	m.Apply(events.Event{Kind: events.KindSSE, Name: "health_changed", Payload: json.RawMessage(`{"primal":"beardog","from":"running","to":"unhealthy"}`)})
	if e := edgeOf(m.Graph(), to.ID, bd.ID, "crypto.hash"); e.State != StateDegraded {
		t.Fatalf("after beardog went unhealthy: %+v", e)
	}
}
