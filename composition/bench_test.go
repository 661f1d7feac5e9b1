package composition

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// bigEcosystem is n probed targets, each providing two methods of its own
// domain and consuming per capabilities of others further down (a DAG
// several layers deep, as compositions are), plus one gap in ten: about
// n*per edges.
func bigEcosystem(n, per int) []*discovery.Target {
	r := rand.New(rand.NewPCG(1, 2))
	ts := make([]*discovery.Target, n)
	for i := range ts {
		var consumed []string
		for k := 0; k < per; k++ {
			if i < n-1 {
				j := i + 1 + r.IntN(min(n-i-1, 200))
				consumed = append(consumed, fmt.Sprintf("d%04d.get", j))
			}
		}
		if i%10 == 0 {
			consumed = append(consumed, fmt.Sprintf("nobody%d.has", i%7))
		}
		ts[i] = tgt(fmt.Sprintf("p%04d", i), discovery.StateLive, []string{fmt.Sprintf("d%04d.get", i), fmt.Sprintf("d%04d.put", i)}, consumed)
		ts[i].Family = fmt.Sprintf("fam%d", i%4)
	}
	return ts
}

func BenchmarkBuild2000x10000(b *testing.B) {
	ts := bigEcosystem(2000, 5)
	var g *Graph
	for b.Loop() {
		g = Build(Inputs{Targets: ts})
	}
	b.ReportMetric(float64(len(g.Nodes)), "nodes")
	b.ReportMetric(float64(len(g.Edges)), "edges")
}

func BenchmarkLayout2000x10000(b *testing.B) {
	g := Build(Inputs{Targets: bigEcosystem(2000, 5)})
	b.ResetTimer()
	for b.Loop() {
		Layout(g, nil)
	}
}

// BenchmarkBuildLayout2000x10000 is the whole map from targets to a
// drawing's positions: the figure the issue bounds at 100 ms.
func BenchmarkBuildLayout2000x10000(b *testing.B) {
	ts := bigEcosystem(2000, 5)
	for b.Loop() {
		Layout(Build(Inputs{Targets: ts}), nil)
	}
}

// BenchmarkRelayout2000x10000 is a refresh: the same map laid out over
// its previous layout.
func BenchmarkRelayout2000x10000(b *testing.B) {
	g := Build(Inputs{Targets: bigEcosystem(2000, 5)})
	prev := Layout(g, nil)
	b.ResetTimer()
	for b.Loop() {
		Layout(g, prev)
	}
}

// BenchmarkHealthChange2000x10000 is one liveness event applied to a live
// model: the issue bounds it at 5 ms.
func BenchmarkHealthChange2000x10000(b *testing.B) {
	ts := bigEcosystem(2000, 5)
	m := NewModel(Inputs{Targets: ts})
	stale := events.Event{Source: "p1000", Kind: events.KindLiveness, Name: events.StateStale, Payload: json.RawMessage(`{"state":"stale"}`)}
	alive := events.Event{Source: "p1000", Kind: events.KindLiveness, Name: events.StateAlive, Payload: json.RawMessage(`{"state":"alive"}`)}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ev := stale
		if i%2 == 1 {
			ev = alive
		}
		i++
		if !m.Apply(ev).Graph {
			b.Fatal("no change")
		}
	}
}

// BenchmarkCallEventsFrame2000x10000 is one frame's worth of observed
// calls (100 capability_called events) applied, then the map read once.
func BenchmarkCallEventsFrame2000x10000(b *testing.B) {
	ts := bigEcosystem(2000, 5)
	m := NewModel(Inputs{Targets: ts})
	evs := make([]events.Event, 100)
	for i := range evs {
		evs[i] = events.Event{Kind: events.KindSSE, Name: "capability_called",
			Payload: json.RawMessage(fmt.Sprintf(`{"caller":"p%04d","callee":"p%04d","capability":"d%04d.get","ok":true,"duration_ms":1.5}`, i, i+1, i+1))}
	}
	b.ResetTimer()
	for b.Loop() {
		for _, ev := range evs {
			m.Apply(ev)
		}
		m.Graph()
	}
}
