package composition

// Neighborhood returns the part of g within hops of the node id in both
// directions: what it needs (following edges to providers) and what needs
// it (following edges to consumers), with the edges among those nodes.
// Cycles are kept when all their nodes are in it. A node g does not have
// gives an empty graph; hops < 0 counts as 0.
func Neighborhood(g *Graph, id string, hops int) *Graph {
	sub := &Graph{TrafficKnown: g.TrafficKnown, Window: g.Window, At: g.At, Nodes: []Node{}, Edges: []Edge{}, Cycles: [][]string{}}
	if _, ok := g.index[id]; !ok {
		sub.reindex()
		return sub
	}
	keep := map[string]bool{id: true}
	walk := func(next func(string) []int, end func(*Edge) string) {
		frontier := []string{id}
		seen := map[string]bool{id: true}
		for h := 0; h < hops && len(frontier) > 0; h++ {
			var nf []string
			for _, n := range frontier {
				for _, i := range next(n) {
					m := end(&g.Edges[i])
					if !seen[m] {
						seen[m] = true
						keep[m] = true
						nf = append(nf, m)
					}
				}
			}
			frontier = nf
		}
	}
	walk(func(n string) []int { return g.out[n] }, func(e *Edge) string { return e.To })
	walk(func(n string) []int { return g.in[n] }, func(e *Edge) string { return e.From })
	for _, n := range g.Nodes {
		if keep[n.ID] {
			sub.Nodes = append(sub.Nodes, n)
		}
	}
	for _, e := range g.Edges {
		if keep[e.From] && keep[e.To] {
			sub.Edges = append(sub.Edges, e)
		}
	}
	for _, c := range g.Cycles {
		all := true
		for _, n := range c {
			all = all && keep[n]
		}
		if all {
			sub.Cycles = append(sub.Cycles, c)
		}
	}
	sub.MethodCycles = g.MethodCycles
	sub.reindex()
	return sub
}
