package composition

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/discovery"
)

func (b *builder) finish() {
	g := b.g
	g.TrafficKnown = b.trafficKnown
	g.reported, g.callers, g.minLevel = b.in.TrafficReported, b.callers, b.in.MinLevel
	// Traffic is reported by name: with two providers of one name (a
	// primal's plain socket and its family-scoped one), calls seen on one
	// cannot be told from calls on the other, and neither is unused.
	type twin struct{ from, capability, toName string }
	seenTwin := map[twin]bool{}
	for i := range b.seen {
		e := &g.Edges[i]
		seenTwin[twin{e.From, e.Capability, g.Nodes[g.index[e.To]].Name}] = true
	}
	for i := range g.Edges {
		e := &g.Edges[i]
		e.seen = b.seen[i] || len(seenTwin) > 0 && seenTwin[twin{e.From, e.Capability, g.Nodes[g.index[e.To]].Name}]
		sortSources(e.Sources)
		e.State, e.Why = g.edgeState(e)
	}
	b.cycles()
	sort.SliceStable(g.Nodes, func(i, j int) bool {
		a, c := &g.Nodes[i], &g.Nodes[j]
		if ga, gc := a.Group(), c.Group(); ga != gc {
			return ga < gc
		}
		if a.Name != c.Name {
			return a.Name < c.Name
		}
		return a.ID < c.ID
	})
	slices.SortStableFunc(g.Edges, func(a, c Edge) int {
		if a.From != c.From {
			return strings.Compare(a.From, c.From)
		}
		if a.Capability != c.Capability {
			return strings.Compare(a.Capability, c.Capability)
		}
		return strings.Compare(a.To, c.To)
	})
	if g.Nodes == nil {
		g.Nodes = []Node{}
	}
	if g.Edges == nil {
		g.Edges = []Edge{}
	}
	if g.Cycles == nil {
		g.Cycles = [][]string{}
	}
	g.reindex()
}

// edgeState decides an edge's state from its provider and its sources.
func (g *Graph) edgeState(e *Edge) (State, string) {
	to, ok := g.Node(e.To)
	if !ok {
		return StateOK, ""
	}
	if to.Missing {
		return StateGap, "nobody provides " + e.Capability
	}
	if why := degraded(to, g.minLevel); why != "" {
		return StateDegraded, why
	}
	if e.From == YouID {
		return StateOK, ""
	}
	declared := e.Has(SrcDeclared) || e.Has(SrcOrchestrator) || e.Has(SrcGraph)
	if !declared {
		return StateUndeclared, "seen in traffic, declared by no source"
	}
	if g.TrafficKnown && !e.seen && (g.reported || g.callers[e.From]) {
		return StateUnused, "declared, never seen in traffic"
	}
	return StateOK, ""
}

// degraded says why a provider cannot serve well, or "".
func degraded(n *Node, minLevel int) string {
	if n.Gone || n.Health == HealthGone {
		return "provider " + n.Name + " is gone"
	}
	t := n.Target
	if t != nil && t.Probe != nil && t.Probe.BTSPRejection != nil && n.Health == string(discovery.StateLocked) {
		return "provider " + n.Name + " refuses BTSP: " + t.Probe.BTSPRejection.Message
	}
	switch discovery.State(n.Health) {
	case discovery.StateStale:
		return "provider " + n.Name + " is stale (no answer in time)"
	case discovery.StateDead:
		return "provider " + n.Name + " is unreachable"
	case discovery.StateError:
		return "provider " + n.Name + " answers in error"
	case discovery.StateLive:
		if minLevel > 0 && t != nil && n.Level < minLevel {
			return fmt.Sprintf("provider %s is level %d, below the required %d", n.Name, n.Level, minLevel)
		}
	}
	return ""
}

// cycles names the cycles in consumption (edges between nodes) and in
// operation_dependencies (methods, mapped to the nodes providing them).
func (b *builder) cycles() {
	g := b.g
	deps := map[string][]string{}
	for i := range g.Edges {
		e := &g.Edges[i]
		if e.State == StateGap || e.From == YouID {
			continue
		}
		if !containsStr(deps[e.From], e.To) {
			deps[e.From] = append(deps[e.From], e.To)
		}
	}
	g.Cycles = discovery.FindCycles(deps)
	seen := map[string]bool{}
	for _, c := range g.Cycles {
		seen[fmt.Sprint(c)] = true
	}
	g.MethodCycles = discovery.FindCycles(b.deps)
	for _, mc := range g.MethodCycles {
		var ids []string
		for _, m := range mc {
			p := b.methodProvider(m)
			if p == "" {
				ids = nil
				break
			}
			if len(ids) == 0 || ids[len(ids)-1] != p {
				ids = append(ids, p)
			}
		}
		if len(ids) == 0 {
			continue
		}
		if len(ids) > 1 && ids[0] == ids[len(ids)-1] {
			ids = ids[:len(ids)-1]
		}
		// The same form FindCycles gives: rotated to the smallest ID,
		// ending where it started ([A, A] within one primal).
		m := 0
		for j := range ids {
			if ids[j] < ids[m] {
				m = j
			}
		}
		ids = append(append(ids[m:len(ids):len(ids)], ids[:m]...), ids[m])
		if k := fmt.Sprint(ids); !seen[k] {
			seen[k] = true
			g.Cycles = append(g.Cycles, ids)
		}
	}
	on := map[[2]string]bool{}
	for _, c := range g.Cycles {
		for i := 0; i+1 < len(c); i++ {
			on[[2]string{c[i], c[i+1]}] = true
		}
	}
	for i := range g.Edges {
		e := &g.Edges[i]
		e.InCycle = on[[2]string{e.From, e.To}]
	}
}

// methodProvider returns the node that provides method m ("" if none).
func (b *builder) methodProvider(m string) string {
	if b.px == nil {
		return ""
	}
	if ids := b.px.method[m]; len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// sortSources puts an edge's few sources in their fixed order, in place.
func sortSources(ss []Source) {
	for i := 1; i < len(ss); i++ {
		for j := i; j > 0 && sourceOrder[ss[j]] < sourceOrder[ss[j-1]]; j-- {
			ss[j], ss[j-1] = ss[j-1], ss[j]
		}
	}
}
