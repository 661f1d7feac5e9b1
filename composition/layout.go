package composition

import (
	"cmp"
	"slices"
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
//
// It works on node indexes, not IDs: at 2,000 nodes and 10,000 edges,
// string-keyed maps were most of its time.
func Layout(g *Graph, prev *Placement) *Placement {
	n := len(g.Nodes)
	l := &layouter{n: n, out: make([][]int32, n), in: make([][]int32, n), layer: make([]int, n), placed: make([]bool, n)}
	for i := range g.Edges {
		e := &g.Edges[i]
		f, okf := g.index[e.From]
		t, okt := g.index[e.To]
		if !okf || !okt || f == t {
			continue
		}
		l.out[f] = append(l.out[f], int32(t))
		l.in[t] = append(l.in[t], int32(f))
	}
	l.backEdges(g)
	var fresh []int32
	if prev != nil {
		l.prevLayer, l.prevSlot, l.kept = make([]int, n), make([]int, n), make([]bool, n)
		for i := range g.Nodes {
			if p, ok := prev.Pos[g.Nodes[i].ID]; ok {
				l.prevLayer[i], l.prevSlot[i], l.kept[i] = p.Layer, p.Slot, true
				l.layer[i], l.placed[i] = p.Layer, true
			} else {
				fresh = append(fresh, int32(i))
			}
		}
	} else {
		fresh = make([]int32, n)
		for i := range fresh {
			fresh[i] = int32(i)
		}
	}
	l.placeNew(g, fresh)

	byLayer := map[int][]int32{}
	for i := 0; i < n; i++ {
		byLayer[l.layer[i]] = append(byLayer[l.layer[i]], int32(i))
	}
	keys := make([]int, 0, len(byLayer))
	for k := range byLayer {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	if prev == nil {
		l.orderFresh(keys, byLayer)
	} else {
		l.orderStable(g, keys, byLayer)
	}
	pl := &Placement{Pos: make(map[string]Pos, n), Upward: map[[2]string]bool{}, Rows: make([][]string, 0, len(keys))}
	for r, k := range keys {
		row := make([]string, len(byLayer[k]))
		for s, i := range byLayer[k] {
			row[s] = g.Nodes[i].ID
			pl.Pos[row[s]] = Pos{Layer: k, Slot: s, Row: r}
		}
		pl.Rows = append(pl.Rows, row)
	}
	for f := 0; f < n; f++ {
		for _, t := range l.out[f] {
			if l.layer[f] >= l.layer[t] {
				pl.Upward[[2]string{g.Nodes[f].ID, g.Nodes[t].ID}] = true
			}
		}
	}
	return pl
}

type layouter struct {
	n       int
	out, in [][]int32
	back    map[[2]int32]bool // edges that close a cycle
	layer   []int
	placed  []bool
	// prevLayer, prevSlot, kept: where prev had each node (kept: it had it).
	prevLayer, prevSlot []int
	kept                []bool
}

func (l *layouter) isBack(f, t int32) bool { return len(l.back) > 0 && l.back[[2]int32{f, t}] }

// backEdges finds the edges a depth-first search in ID order sees closing
// a cycle: reversing them leaves the graph acyclic.
func (l *layouter) backEdges(g *Graph) {
	l.back = map[[2]int32]bool{}
	order := make([]int32, l.n)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(g.Nodes[a].ID, g.Nodes[b].ID) })
	state := make([]uint8, l.n) // 0 new, 1 on stack, 2 done
	type frame struct {
		v int32
		i int
	}
	var stack []frame
	for _, root := range order {
		if state[root] != 0 {
			continue
		}
		stack = append(stack[:0], frame{root, 0})
		state[root] = 1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i >= len(l.out[f.v]) {
				state[f.v] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			m := l.out[f.v][f.i]
			f.i++
			switch state[m] {
			case 0:
				state[m] = 1
				stack = append(stack, frame{m, 0})
			case 1:
				l.back[[2]int32{f.v, m}] = true
			}
		}
	}
}

// placeNew gives a layer to each node in fresh. Without prev they are laid
// out by longest path from the consumers; with prev, each goes just below
// its placed consumers (or just above its placed providers), pushing a
// provider it lands on one layer down at most.
func (l *layouter) placeNew(g *Graph, fresh []int32) {
	if len(fresh) == 0 {
		return
	}
	isFresh := make([]bool, l.n)
	for _, v := range fresh {
		isFresh[v] = true
	}
	if l.kept != nil {
		todo := append([]int32(nil), fresh...)
		slices.SortFunc(todo, func(a, b int32) int { return cmp.Compare(g.Nodes[a].ID, g.Nodes[b].ID) })
		for progress := true; progress; {
			progress = false
			rest := todo[:0]
			for _, v := range todo {
				at, ok := 0, false
				for _, c := range l.in[v] {
					if l.placed[c] && !l.isBack(c, v) && (!ok || l.layer[c]+1 > at) {
						at, ok = l.layer[c]+1, true
					}
				}
				if !ok {
					for _, p := range l.out[v] {
						if l.placed[p] && !l.isBack(v, p) && (!ok || l.layer[p]-1 < at) {
							at, ok = l.layer[p]-1, true
						}
					}
				}
				if !ok {
					rest = append(rest, v)
					continue
				}
				l.layer[v], l.placed[v] = at, true
				progress = true
				busy := map[int32]bool{v: true}
				for _, p := range l.out[v] {
					if l.placed[p] && !l.isBack(v, p) {
						l.push(p, at+1, isFresh, busy)
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
	indeg := make([]int, l.n)
	for _, v := range fresh {
		for _, c := range l.in[v] {
			if isFresh[c] && !l.placed[c] && !l.isBack(c, v) {
				indeg[v]++
			}
		}
	}
	var queue []int32
	for _, v := range fresh {
		if indeg[v] == 0 {
			queue = append(queue, v)
			l.layer[v], l.placed[v] = 0, true
		}
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, p := range l.out[v] {
			if !isFresh[p] || l.isBack(v, p) || indeg[p] <= 0 {
				continue
			}
			if !l.placed[p] || l.layer[p] < l.layer[v]+1 {
				l.layer[p], l.placed[p] = l.layer[v]+1, true
			}
			indeg[p]--
			if indeg[p] == 0 {
				queue = append(queue, p)
			}
		}
	}
	for _, v := range fresh {
		l.placed[v] = true
	}
}

// push moves v down to layer want, and its providers after it, as long as
// no node prev placed moves more than one layer from where it was.
func (l *layouter) push(v int32, want int, isFresh []bool, busy map[int32]bool) {
	if l.layer[v] >= want || busy[v] {
		return
	}
	if !isFresh[v] && l.kept[v] && want > l.prevLayer[v]+1 {
		return
	}
	l.layer[v] = want
	busy[v] = true
	for _, w := range l.out[v] {
		if l.placed[w] && !l.isBack(v, w) {
			l.push(w, want+1, isFresh, busy)
		}
	}
	delete(busy, v)
}

// orderFresh orders each layer by the barycentre of its neighbours in the
// layer above, then below, a few sweeps; ties keep the graph's order
// (group, name, ID).
func (l *layouter) orderFresh(keys []int, byLayer map[int][]int32) {
	pos := make([]float64, l.n)
	set := func(row []int32) {
		for i, v := range row {
			pos[v] = float64(i) / float64(len(row))
		}
	}
	for _, k := range keys {
		set(byLayer[k])
	}
	type keyed struct {
		v   int32
		key float64
	}
	var buf []keyed
	sweep := func(k int, nb [][]int32) {
		row := byLayer[k]
		buf = buf[:0]
		for _, v := range row {
			sum := 0.0
			for _, m := range nb[v] {
				sum += pos[m]
			}
			key := pos[v]
			if len(nb[v]) > 0 {
				key = sum / float64(len(nb[v]))
			}
			buf = append(buf, keyed{v, key})
		}
		slices.SortStableFunc(buf, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
		for i := range buf {
			row[i] = buf[i].v
		}
		set(row)
	}
	for it := 0; it < 4; it++ {
		for _, k := range keys[1:] {
			sweep(k, l.in)
		}
		for i := len(keys) - 2; i >= 0; i-- {
			sweep(keys[i], l.out)
		}
	}
}

// orderStable keeps prev's order of the nodes it placed (a node pushed into
// another layer goes where its old slot was) and inserts each new node at
// the barycentre of its neighbours' slots.
func (l *layouter) orderStable(g *Graph, keys []int, byLayer map[int][]int32) {
	for _, k := range keys {
		row := byLayer[k]
		var kept, fresh []int32
		for _, v := range row {
			if l.kept[v] {
				kept = append(kept, v)
			} else {
				fresh = append(fresh, v)
			}
		}
		slices.SortStableFunc(kept, func(a, b int32) int {
			if c := cmp.Compare(l.prevSlot[a], l.prevSlot[b]); c != 0 {
				return c
			}
			// At the same old slot, the node that was already in this
			// layer goes first.
			return cmp.Compare(b2i(l.prevLayer[a] != k), b2i(l.prevLayer[b] != k))
		})
		slices.SortFunc(fresh, func(a, b int32) int { return cmp.Compare(g.Nodes[a].ID, g.Nodes[b].ID) })
		for _, v := range fresh {
			sum, cnt := 0.0, 0
			for _, nb := range [2][]int32{l.in[v], l.out[v]} {
				for _, m := range nb {
					if l.kept[m] {
						sum += float64(l.prevSlot[m])
						cnt++
					}
				}
			}
			at := len(kept)
			if cnt > 0 {
				bary := sum / float64(cnt)
				at = 0
				for at < len(kept) && (!l.kept[kept[at]] || float64(l.prevSlot[kept[at]]) < bary) {
					at++
				}
			}
			kept = slices.Insert(kept, at, v)
		}
		byLayer[k] = kept
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
