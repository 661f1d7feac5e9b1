package composition

import (
	"sort"
)

// Pos is where a node sits in a layered drawing.
type Pos struct {
	// Layer grows from consumers (top) to providers (bottom). Layers are
	// relative and may be negative: a layout keeps them across refreshes.
	Layer int
	// Slot is the node's index within its layer, left to right.
	Slot int
	// Row is the index of the layer among the non-empty ones (Rows).
	Row int
}

// Placement is a layered layout of a graph.
type Placement struct {
	// Pos holds every node's position, by ID.
	Pos map[string]Pos
	// Rows are the non-empty layers, top first, each left to right.
	Rows [][]string
	// Upward marks edges (From, To) drawn against the flow: within one
	// layer or from below to above (cycles, and edges a stable refresh
	// could not honour without moving nodes).
	Upward map[[2]string]bool
}

// Layout places g in layers, consumers above their providers (Sugiyama
// style: cycle breaking, longest-path layering, barycentric ordering).
//
// With prev (the layout of an earlier graph) it is stable: a node prev
// placed keeps its layer, except that a node arriving between a consumer
// and its provider may push that provider (and its own providers) one
// layer down; a kept node keeps its order in its layer, so adding or
// removing one node moves no other node by more than one slot; and the
// same graph laid out again over its own layout is unchanged.
func Layout(g *Graph, prev *Placement) *Placement {
	ids := make([]string, len(g.Nodes))
	for i := range g.Nodes {
		ids[i] = g.Nodes[i].ID
	}
	adjOut := make(map[string][]string, len(ids))
	adjIn := make(map[string][]string, len(ids))
	for i := range g.Edges {
		e := &g.Edges[i]
		if e.From == e.To {
			continue
		}
		if _, ok := g.index[e.From]; !ok {
			continue
		}
		if _, ok := g.index[e.To]; !ok {
			continue
		}
		adjOut[e.From] = append(adjOut[e.From], e.To)
		adjIn[e.To] = append(adjIn[e.To], e.From)
	}
	back := backEdges(ids, adjOut)
	layer := make(map[string]int, len(ids))
	var fresh []string
	if prev == nil {
		fresh = ids
	} else {
		for _, id := range ids {
			if p, ok := prev.Pos[id]; ok {
				layer[id] = p.Layer
			} else {
				fresh = append(fresh, id)
			}
		}
	}
	placeNew(fresh, layer, adjOut, adjIn, back, prev)

	// Order within layers.
	byLayer := map[int][]string{}
	for _, id := range ids {
		byLayer[layer[id]] = append(byLayer[layer[id]], id)
	}
	keys := make([]int, 0, len(byLayer))
	for k := range byLayer {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	pl := &Placement{Pos: make(map[string]Pos, len(ids)), Upward: map[[2]string]bool{}}
	if prev == nil {
		orderFresh(keys, byLayer, adjOut, adjIn)
	} else {
		orderStable(keys, byLayer, adjOut, adjIn, prev)
	}
	for r, k := range keys {
		row := byLayer[k]
		pl.Rows = append(pl.Rows, row)
		for s, id := range row {
			pl.Pos[id] = Pos{Layer: k, Slot: s, Row: r}
		}
	}
	for from, tos := range adjOut {
		for _, to := range tos {
			if layer[from] >= layer[to] {
				pl.Upward[[2]string{from, to}] = true
			}
		}
	}
	return pl
}

// backEdges returns the edges a depth-first search in ID order finds
// closing a cycle: reversing them leaves the graph acyclic.
func backEdges(ids []string, out map[string][]string) map[[2]string]bool {
	back := map[[2]string]bool{}
	state := make(map[string]uint8, len(ids)) // 0 new, 1 on stack, 2 done
	type frame struct {
		id string
		i  int
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	for _, root := range sorted {
		if state[root] != 0 {
			continue
		}
		stack := []frame{{root, 0}}
		state[root] = 1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			nb := out[f.id]
			if f.i >= len(nb) {
				state[f.id] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			m := nb[f.i]
			f.i++
			switch state[m] {
			case 0:
				state[m] = 1
				stack = append(stack, frame{m, 0})
			case 1:
				back[[2]string{f.id, m}] = true
			}
		}
	}
	return back
}

// placeNew gives a layer to each node in fresh. Without prev they are laid
// out by longest path from the consumers; with prev, each goes just below
// its placed consumers (or just above its placed providers), pushing a
// provider it lands on one layer down at most.
func placeNew(fresh []string, layer map[string]int, out, in map[string][]string, back map[[2]string]bool, prev *Placement) {
	if len(fresh) == 0 {
		return
	}
	isFresh := make(map[string]bool, len(fresh))
	for _, id := range fresh {
		isFresh[id] = true
	}
	placed := func(id string) bool { _, ok := layer[id]; return ok }
	if prev != nil {
		// New nodes next to placed ones, repeatedly, in ID order.
		todo := append([]string(nil), fresh...)
		sort.Strings(todo)
		for progress := true; progress; {
			progress = false
			rest := todo[:0]
			for _, id := range todo {
				l, ok := 0, false
				for _, c := range in[id] {
					if placed(c) && !back[[2]string{c, id}] && (!ok || layer[c]+1 > l) {
						l, ok = layer[c]+1, true
					}
				}
				if !ok {
					for _, p := range out[id] {
						if placed(p) && !back[[2]string{id, p}] && (!ok || layer[p]-1 < l) {
							l, ok = layer[p]-1, true
						}
					}
				}
				if !ok {
					rest = append(rest, id)
					continue
				}
				layer[id] = l
				progress = true
				for _, p := range out[id] {
					if placed(p) && !back[[2]string{id, p}] {
						push(p, l+1, layer, out, back, prev, isFresh, map[string]bool{id: true})
					}
				}
			}
			todo = rest
		}
		fresh = todo
		if len(fresh) == 0 {
			return
		}
	}
	// Longest path over the rest (their edges among themselves).
	indeg := map[string]int{}
	for _, id := range fresh {
		for _, c := range in[id] {
			if isFresh[c] && !placed(c) && !back[[2]string{c, id}] {
				indeg[id]++
			}
		}
	}
	var queue []string
	for _, id := range fresh {
		if indeg[id] == 0 {
			queue = append(queue, id)
			layer[id] = 0
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, p := range out[id] {
			if !isFresh[p] || back[[2]string{id, p}] {
				continue
			}
			if l, ok := layer[p]; !ok || l < layer[id]+1 {
				layer[p] = layer[id] + 1
			}
			indeg[p]--
			if indeg[p] == 0 {
				queue = append(queue, p)
			}
		}
	}
	for _, id := range fresh {
		if _, ok := layer[id]; !ok {
			layer[id] = 0
		}
	}
}

// push moves v down to layer want, and its providers after it, as long as
// no node prev placed moves more than one layer from where it was.
func push(v string, want int, layer map[string]int, out map[string][]string, back map[[2]string]bool, prev *Placement, isFresh map[string]bool, busy map[string]bool) {
	if layer[v] >= want || busy[v] {
		return
	}
	if !isFresh[v] {
		if p, ok := prev.Pos[v]; ok && want > p.Layer+1 {
			return
		}
	}
	layer[v] = want
	busy[v] = true
	for _, w := range out[v] {
		if _, ok := layer[w]; ok && !back[[2]string{v, w}] {
			push(w, want+1, layer, out, back, prev, isFresh, busy)
		}
	}
	delete(busy, v)
}

// orderFresh orders each layer by the barycentre of its neighbours in the
// layer above, then below, a few sweeps; ties keep the graph's order
// (group, name, ID).
func orderFresh(keys []int, byLayer map[int][]string, out, in map[string][]string) {
	pos := map[string]float64{}
	set := func(row []string) {
		for i, id := range row {
			pos[id] = float64(i) / float64(len(row))
		}
	}
	for _, k := range keys {
		set(byLayer[k])
	}
	sweep := func(k int, nb map[string][]string) {
		row := byLayer[k]
		key := make(map[string]float64, len(row))
		for _, id := range row {
			sum, n := 0.0, 0
			for _, m := range nb[id] {
				if p, ok := pos[m]; ok {
					sum += p
					n++
				}
			}
			if n > 0 {
				key[id] = sum / float64(n)
			} else {
				key[id] = pos[id]
			}
		}
		sort.SliceStable(row, func(i, j int) bool { return key[row[i]] < key[row[j]] })
		set(row)
	}
	for it := 0; it < 4; it++ {
		for _, k := range keys[1:] {
			sweep(k, in)
		}
		for i := len(keys) - 2; i >= 0; i-- {
			sweep(keys[i], out)
		}
	}
}

// orderStable keeps prev's order of the nodes it placed (a node pushed into
// another layer goes where its old slot was) and inserts each new node at
// the barycentre of its neighbours' slots.
func orderStable(keys []int, byLayer map[int][]string, out, in map[string][]string, prev *Placement) {
	for _, k := range keys {
		row := byLayer[k]
		var kept, fresh []string
		for _, id := range row {
			if _, ok := prev.Pos[id]; ok {
				kept = append(kept, id)
			} else {
				fresh = append(fresh, id)
			}
		}
		sort.SliceStable(kept, func(i, j int) bool {
			a, b := prev.Pos[kept[i]], prev.Pos[kept[j]]
			if a.Slot != b.Slot {
				return a.Slot < b.Slot
			}
			return a.Layer == k && b.Layer != k // those already here first
		})
		sort.Strings(fresh)
		for _, id := range fresh {
			sum, n := 0.0, 0
			for _, nb := range [][]string{in[id], out[id]} {
				for _, m := range nb {
					if p, ok := prev.Pos[m]; ok {
						sum += float64(p.Slot)
						n++
					}
				}
			}
			at := len(kept)
			if n > 0 {
				bary := sum / float64(n)
				at = 0
				for at < len(kept) && float64(prev.Pos[kept[at]].Slot) < bary {
					at++
				}
			}
			kept = append(kept, "")
			copy(kept[at+1:], kept[at:])
			kept[at] = id
		}
		byLayer[k] = kept
	}
}
