package composition

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/ecoPrimals/primalscope/discovery"
)

// chainEco is a small layered ecosystem: n consumers of a few providers
// that consume a base.
func chainEco(n int) []*discovery.Target {
	var ts []*discovery.Target
	ts = append(ts, tgt("base", discovery.StateLive, []string{"base.get"}, nil))
	for i := 0; i < 4; i++ {
		ts = append(ts, tgt(fmt.Sprintf("mid%d", i), discovery.StateLive, []string{fmt.Sprintf("mid%d.get", i)}, []string{"base.get"}))
	}
	for i := 0; i < n; i++ {
		ts = append(ts, tgt(fmt.Sprintf("top%02d", i), discovery.StateLive, []string{fmt.Sprintf("top%02d.get", i)},
			[]string{fmt.Sprintf("mid%d.get", i%4), fmt.Sprintf("mid%d.get", (i+1)%4)}))
	}
	return ts
}

func checkLayered(t *testing.T, g *Graph, p *Placement) {
	t.Helper()
	for _, e := range g.Edges {
		if p.Pos[e.From].Layer >= p.Pos[e.To].Layer && !p.Upward[[2]string{e.From, e.To}] {
			t.Fatalf("edge %s→%s not downward and not marked upward", e.From, e.To)
		}
	}
	if len(p.Pos) != len(g.Nodes) {
		t.Fatalf("%d positions for %d nodes", len(p.Pos), len(g.Nodes))
	}
}

func maxMove(t *testing.T, a, b *Placement, skip string) {
	t.Helper()
	for id, pa := range a.Pos {
		if id == skip {
			continue
		}
		pb, ok := b.Pos[id]
		if !ok {
			t.Fatalf("%s vanished", id)
		}
		dl, ds := pa.Layer-pb.Layer, pa.Slot-pb.Slot
		if dl < -1 || dl > 1 || ds < -1 || ds > 1 {
			t.Fatalf("%s moved from %+v to %+v", id, pa, pb)
		}
	}
}

func TestLayoutConsumersAboveAndStable(t *testing.T) {
	ts := chainEco(12)
	g := Build(Inputs{Targets: ts})
	p := Layout(g, nil)
	checkLayered(t, g, p)
	if len(p.Upward) != 0 {
		t.Fatalf("acyclic graph has upward edges: %v", p.Upward)
	}
	if p.Pos[ts[0].ID].Layer != 2 || p.Pos[ts[1].ID].Layer != 1 || p.Pos[ts[5].ID].Layer != 0 {
		t.Fatalf("layers: base %v mid %v top %v", p.Pos[ts[0].ID], p.Pos[ts[1].ID], p.Pos[ts[5].ID])
	}
	// A refresh with the same graph never reshuffles.
	if again := Layout(Build(Inputs{Targets: ts}), p); !reflect.DeepEqual(again, p) {
		t.Fatal("the same graph laid out over its own layout moved")
	}
	// Without prev, the same graph lays out the same way.
	if fresh := Layout(Build(Inputs{Targets: ts}), nil); !reflect.DeepEqual(fresh, p) {
		t.Fatal("layout is not deterministic")
	}
	// Add a node: no other node moves more than one slot.
	added := append(append([]*discovery.Target(nil), ts...), tgt("newcomer", discovery.StateLive, []string{"new.get"}, []string{"mid2.get", "base.get"}))
	g2 := Build(Inputs{Targets: added})
	p2 := Layout(g2, p)
	checkLayered(t, g2, p2)
	maxMove(t, p, p2, "")
	if p2.Pos[added[len(added)-1].ID].Layer != 1 && p2.Pos[added[len(added)-1].ID].Layer != 0 {
		t.Fatalf("newcomer at %+v", p2.Pos[added[len(added)-1].ID])
	}
	// Remove one: the same.
	removed := append(append([]*discovery.Target(nil), ts[:6]...), ts[7:]...)
	g3 := Build(Inputs{Targets: removed})
	p3 := Layout(g3, p)
	checkLayered(t, g3, p3)
	maxMove(t, p3, p, "")
}

func TestLayoutPushesOneLayerAtMost(t *testing.T) {
	// c consumes p directly (adjacent layers); then n arrives between them.
	c := tgt("c", discovery.StateLive, []string{"c.m"}, []string{"p.m"})
	p := tgt("p", discovery.StateLive, []string{"p.m"}, []string{"q.m"})
	q := tgt("q", discovery.StateLive, []string{"q.m"}, nil)
	p0 := Layout(Build(Inputs{Targets: []*discovery.Target{c, p, q}}), nil)
	n := tgt("n", discovery.StateLive, []string{"n.m"}, []string{"p.m"})
	c2 := tgt("c", discovery.StateLive, []string{"c.m"}, []string{"p.m", "n.m"})
	g := Build(Inputs{Targets: []*discovery.Target{c2, p, q, n}})
	p1 := Layout(g, p0)
	checkLayered(t, g, p1)
	if len(p1.Upward) != 0 {
		t.Fatalf("upward edges %v: the push should have made room", p1.Upward)
	}
	maxMove(t, p0, p1, "")
}

func TestLayoutCycleMarkedUpward(t *testing.T) {
	a := tgt("a", discovery.StateLive, []string{"a.m"}, []string{"b.m"})
	b := tgt("b", discovery.StateLive, []string{"b.m"}, []string{"a.m"})
	g := Build(Inputs{Targets: []*discovery.Target{a, b}})
	p := Layout(g, nil)
	checkLayered(t, g, p)
	if len(p.Upward) != 1 {
		t.Fatalf("upward = %v, want the one edge closing the cycle", p.Upward)
	}
}

// A node that leaves stays drawn (gone) until the user moves: nothing
// moves meanwhile; once it is dropped, no other node moves more than one
// slot. Then it comes back: the same.
func TestLayoutAcrossALeavingNode(t *testing.T) {
	ts := chainEco(12)
	m := NewModel(Inputs{Targets: ts})
	p0 := Layout(m.Graph(), nil)
	leaving := ts[7] // a consumer in the top layer
	rest := append(append([]*discovery.Target(nil), ts[:7]...), ts[8:]...)
	m.SetTargets(rest, nil)
	if n, ok := m.Graph().Node(leaving.ID); !ok || !n.Gone {
		t.Fatalf("left node not drawn as gone: %+v", n)
	}
	p1 := Layout(m.Graph(), p0)
	if !reflect.DeepEqual(p1.Pos, p0.Pos) {
		t.Fatal("a node going (still drawn) moved others")
	}
	m.Moved()
	p2 := Layout(m.Graph(), p1)
	checkLayered(t, m.Graph(), p2)
	maxMove(t, p2, p1, "")
	m.SetTargets(ts, nil)
	p3 := Layout(m.Graph(), p2)
	checkLayered(t, m.Graph(), p3)
	maxMove(t, p2, p3, "")
	if p3.Pos[leaving.ID].Layer != p0.Pos[leaving.ID].Layer {
		t.Errorf("the node came back to layer %d, was %d", p3.Pos[leaving.ID].Layer, p0.Pos[leaving.ID].Layer)
	}
}
