package tui

import (
	"slices"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/composition"
	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// The map pane's pictures: what a build command makes of the composition
// model (lent to it) for the pane to draw, and the work it applies first.

// mapWork is what waits for the model: applied in order by the next
// build command.
type mapWork struct {
	targets  bool
	events   []events.Event
	dropped  int
	calls    []composition.Call
	gathered *composition.Gathered
	moved    bool
	tick     bool
	// view says the focus or the hops changed (only a layout is due).
	view bool
}

func (w *mapWork) empty() bool {
	return !w.targets && len(w.events) == 0 && len(w.calls) == 0 && w.gathered == nil && !w.moved && !w.tick && !w.view
}

// maxMapEvents bounds the events waiting for the model between builds
// (more are dropped and counted: a flood must not grow memory).
const maxMapEvents = 4096

// mapKey names an item across pictures: a node, or an edge.
type mapKey struct {
	node           string
	from, to, capy string
	edge           bool
}

// mapRow is a row of the tree: an item, or (item < 0) a group's header.
type mapRow struct {
	item   int
	header string
}

// mapItem is a row of the tree and a stop of the cursor in the drawing:
// a node (edge < 0) or one of the edges it consumes.
type mapItem struct{ node, edge int }

// mapPicture is one laid-out map, made in a command and never changed
// after: the whole map and its placement, what shows (the whole, or the
// focus' neighbourhood) with its placement, and what drawing it needs.
type mapPicture struct {
	g, view *composition.Graph
	pl, vpl *composition.Placement
	// asked is the focus the picture was made for; focus is what it
	// shows ("" when that node is no longer in the map).
	asked, focus string
	hops         int
	items        []mapItem
	// nodeItem is each view node's item; pos each view node's place; ends
	// each view edge's consumer and provider as view node indexes; out
	// each view node's edges (indexes), in order.
	nodeItem []int
	pos      []composition.Pos
	ends     [][2]int
	out      [][]int
	in       []int // how many edges reach each view node
	byID     map[string]int
	lower    []string // each view node's name in lower case, for /
	// col is each view node's column in the drawing; byCol the nodes of
	// each column, by slot.
	col   []int
	byCol [][]int
	// cycleAt is the first cycle (in view.Cycles) through each node on one.
	cycleAt map[string]int
	// rows are the tree's rows: the items, under a header for each group
	// (federation node and family) when there is more than one; rowOf is
	// each item's row.
	rows  []mapRow
	rowOf []int
	// cols and slots are the drawing's size in layers and slots; colW is
	// a node label's width.
	cols, slots, colW int
	gaps, degraded    int
}

// buildMap applies w to the model (lent to it) and lays out what shows;
// refresh says an event wants the ecosystem asked again.
func buildMap(m *composition.Model, w mapWork, targets []*discovery.Target, prev *mapPicture, focus string, hops int) (pic *mapPicture, refresh bool) {
	// same: only health changed, so the last layout still holds (a
	// node's place does not depend on its health).
	same := prev != nil && prev.g == m.Graph()
	if w.targets && !(same && healthOnly(m, targets)) {
		m.SetTargets(targets, nil)
		same = false
	}
	if w.gathered != nil {
		m.SetGathered(*w.gathered)
		same = false
	}
	if len(w.calls) > 0 {
		m.AddCalls(w.calls...)
		same = false
	}
	for _, ev := range w.events {
		c := m.Apply(ev)
		if c.Graph && !isHealth(ev) {
			same = false
		}
		refresh = refresh || c.Refresh
	}
	if w.moved {
		m.Moved()
		same = false
	}
	if w.tick {
		m.Tick()
		same = false
	}
	g := m.Graph()
	if same && !w.view && prev.asked == focus && prev.hops == hops {
		// Only health changed (or nothing): the places, the items and the
		// rows stay; only the states are new.
		if g == prev.g {
			return prev, refresh
		}
		again := *prev
		again.g, again.view = g, g
		if prev.view != prev.g {
			again.view = composition.Neighborhood(g, prev.focus, hops)
		}
		again.count()
		return &again, refresh
	}
	var prevPl, prevVpl *composition.Placement
	if prev != nil {
		prevPl = prev.pl
		if prev.focus == focus {
			prevVpl = prev.vpl
		}
	}
	pic = &mapPicture{g: g, asked: focus, focus: focus, hops: hops}
	if same {
		pic.pl = prevPl
	} else {
		pic.pl = composition.Layout(g, prevPl)
	}
	pic.view, pic.vpl = g, pic.pl
	if focus != "" {
		if _, ok := g.Node(focus); ok {
			pic.view = composition.Neighborhood(g, focus, hops)
			switch {
			case same && !w.view && prevVpl != nil:
				pic.vpl = prevVpl
			default:
				if prevVpl == nil {
					prevVpl = pic.pl
				}
				pic.vpl = composition.Layout(pic.view, prevVpl)
			}
		} else {
			pic.focus = "" // it left: the whole map again
		}
	}
	pic.index()
	return pic, refresh
}

// isHealth reports whether an event can only change a node's health
// (liveness, health_changed): the layout stays.
func isHealth(ev events.Event) bool {
	return ev.Kind == events.KindLiveness || ev.Name == "health_changed"
}

// maxHealthChanges is how many targets may change health at once and
// still be applied one by one (Model.SetHealth) rather than by rebuilding
// the map.
const maxHealthChanges = 32

// healthOnly applies the targets to m as health changes when that is all
// they are (every target known and alike but for its probe's state, none
// gone, at most maxHealthChanges changed), and reports whether it did: a
// rebuild of 2,000 targets costs a hundred times more.
func healthOnly(m *composition.Model, targets []*discovery.Target) bool {
	g := m.Graph()
	type change struct{ id, health string }
	var changes []change
	known := 0
	for i := range g.Nodes {
		if n := &g.Nodes[i]; n.Target != nil && n.Node == "" && !n.Gone {
			known++
		}
	}
	if known != len(targets) {
		return false
	}
	for _, t := range targets {
		n, ok := g.Node(t.ID)
		if !ok || n.Target == nil || n.Node != "" || n.Gone {
			return false
		}
		if n.Target == t {
			continue
		}
		if !sameShape(n.Target, t) {
			return false
		}
		if h := string(t.State()); h != n.Health {
			changes = append(changes, change{t.ID, h})
		}
		if len(changes) > maxHealthChanges {
			return false
		}
	}
	for _, c := range changes {
		m.SetHealth(c.id, c.health)
	}
	return true
}

// sameShape reports whether two snapshots of a target give the map the
// same node and edges: names, family, kind, level, and what it provides
// and consumes.
func sameShape(a, b *discovery.Target) bool {
	if !sameListing(a, b) || a.Level != b.Level || !slices.Equal(a.Capabilities, b.Capabilities) {
		return false
	}
	ca, cb := a.Probe, b.Probe
	if ca == nil || cb == nil {
		return ca == cb
	}
	x, y := ca.Capabilities, cb.Capabilities
	if x == y {
		return true
	}
	if x == nil || y == nil || x.Primal != y.Primal || !slices.Equal(x.Methods, y.Methods) || !slices.Equal(x.Consumed, y.Consumed) || len(x.Provided) != len(y.Provided) {
		return false
	}
	for i := range x.Provided {
		if x.Provided[i].Type != y.Provided[i].Type {
			return false
		}
	}
	if len(x.OperationDependencies) != len(y.OperationDependencies) {
		return false
	}
	for k, v := range x.OperationDependencies {
		if !slices.Equal(v, y.OperationDependencies[k]) {
			return false
		}
	}
	ra, rb := ca.BTSPRejection, cb.BTSPRejection
	return (ra == nil) == (rb == nil) && (ra == nil || ra.Message == rb.Message)
}

// maxColW bounds a layer's width in the drawing: four layers fit in 120
// columns (longer names are cut, the detail lines say them whole).
const maxColW = 22

// index works out what drawing the picture needs: the items in the
// drawing's reading order (layer by layer, slot by slot; each node, then
// what it consumes), positions and edge ends.
func (pic *mapPicture) index() {
	v := pic.view
	at := make(map[string]int, len(v.Nodes))
	pic.pos = make([]composition.Pos, len(v.Nodes))
	pic.colW = 12
	minLayer := 0
	for i := range v.Nodes {
		n := &v.Nodes[i]
		at[n.ID] = i
		pic.pos[i] = pic.vpl.Pos[n.ID]
		if i == 0 || pic.pos[i].Layer < minLayer {
			minLayer = pic.pos[i].Layer
		}
		pic.slots = max(pic.slots, pic.pos[i].Slot+1)
		// the glyph, the name, and room for a word ("GAP", "stale")
		pic.colW = max(pic.colW, min(len(nodeLabel(n))+9, maxColW))
	}
	pic.byID = at
	// A node's column is its layer (kept from refresh to refresh by the
	// layout), not its row among the layers that have nodes: a layer that
	// empties does not shift every layer after it.
	pic.col = make([]int, len(v.Nodes))
	for i := range v.Nodes {
		pic.col[i] = pic.pos[i].Layer - minLayer
		pic.cols = max(pic.cols, pic.col[i]+1)
	}
	pic.byCol = make([][]int, pic.cols)
	for _, row := range pic.vpl.Rows {
		var c []int
		for _, id := range row {
			if i, ok := at[id]; ok {
				c = append(c, i)
			}
		}
		if len(c) > 0 {
			pic.byCol[pic.col[c[0]]] = c
		}
	}
	pic.lower = make([]string, len(v.Nodes))
	for i := range v.Nodes {
		pic.lower[i] = strings.ToLower(nodeLabel(&v.Nodes[i]))
	}
	pic.ends = make([][2]int, len(v.Edges))
	pic.out = make([][]int, len(v.Nodes))
	pic.in = make([]int, len(v.Nodes))
	for i := range v.Edges {
		e := &v.Edges[i]
		a, b := at[e.From], at[e.To]
		pic.ends[i] = [2]int{a, b}
		pic.out[a] = append(pic.out[a], i)
		pic.in[b]++
	}
	pic.count()
	pic.cycleAt = map[string]int{}
	for ci, c := range v.Cycles {
		for _, id := range c {
			if _, ok := pic.cycleAt[id]; !ok {
				pic.cycleAt[id] = ci
			}
		}
	}
	order := make([]int, len(v.Nodes))
	for i := range order {
		order[i] = i
	}
	groups := make([]string, len(v.Nodes))
	distinct := map[string]bool{}
	for i := range v.Nodes {
		groups[i] = v.Nodes[i].Group()
		distinct[groups[i]] = true
	}
	sort.SliceStable(order, func(x, y int) bool {
		if ga, gb := groups[order[x]], groups[order[y]]; ga != gb {
			return ga < gb
		}
		if a, b := pic.col[order[x]], pic.col[order[y]]; a != b {
			return a < b
		}
		return pic.pos[order[x]].Slot < pic.pos[order[y]].Slot
	})
	pic.nodeItem = make([]int, len(v.Nodes))
	pic.items = make([]mapItem, 0, len(v.Nodes)+len(v.Edges))
	pic.rows = make([]mapRow, 0, len(v.Nodes)+len(v.Edges)+len(distinct))
	last := "\x00"
	for _, i := range order {
		// The tree is grouped by federation node and family, with a
		// header for each when there is more than one.
		if len(distinct) > 1 && groups[i] != last {
			pic.rows = append(pic.rows, mapRow{item: -1, header: groupWords(&v.Nodes[i])})
			last = groups[i]
		}
		pic.nodeItem[i] = len(pic.items)
		pic.rows = append(pic.rows, mapRow{item: len(pic.items)})
		pic.items = append(pic.items, mapItem{node: i, edge: -1})
		for _, e := range pic.out[i] {
			pic.rows = append(pic.rows, mapRow{item: len(pic.items)})
			pic.items = append(pic.items, mapItem{node: i, edge: e})
		}
	}
	pic.rowOf = make([]int, len(pic.items))
	for r, row := range pic.rows {
		if row.item >= 0 {
			pic.rowOf[row.item] = r
		}
	}
}

// groupWords names a node's group for the tree's headers.
func groupWords(n *composition.Node) string {
	fam := "no family"
	if n.Family != "" {
		fam = "family " + n.Family
	}
	if n.Node != "" {
		return "node " + n.Node + " · " + fam
	}
	return fam
}

// count counts the gaps and degraded edges that show.
func (pic *mapPicture) count() {
	pic.gaps, pic.degraded = 0, 0
	for i := range pic.view.Edges {
		switch pic.view.Edges[i].State {
		case composition.StateGap:
			pic.gaps++
		case composition.StateDegraded:
			pic.degraded++
		}
	}
}

// keyOf names item i of the picture.
func (pic *mapPicture) keyOf(i int) mapKey {
	if pic == nil || i < 0 || i >= len(pic.items) {
		return mapKey{}
	}
	it := pic.items[i]
	if it.edge < 0 {
		return mapKey{node: pic.view.Nodes[it.node].ID}
	}
	e := &pic.view.Edges[it.edge]
	return mapKey{node: e.From, from: e.From, to: e.To, capy: e.Capability, edge: true}
}

// find is the item named k (its node's when the edge is not there), or -1.
func (pic *mapPicture) find(k mapKey) int {
	node := -1
	for i := range pic.items {
		got := pic.keyOf(i)
		if got == k {
			return i
		}
		if node < 0 && !got.edge && got.node == k.node {
			node = i
		}
	}
	return node
}
