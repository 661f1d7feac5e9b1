package tui

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/composition"
	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func mapSpec() paneSpec {
	return paneSpec{action: "map", tab: "map", focus: b([]string{"m", "9"}, "m", "composition map"), whole: true,
		make: func(id paneID, pc *programContext) pane { return newMapPane(id, pc) }}
}

// mapPane draws the composition map (the composition package's Model):
// who consumes whom, with each edge's state and traffic. From 120×35 it is
// a layered drawing, consumers left of their providers; on smaller screens
// (and in the side slot) the same map as an indented tree, consumer →
// capability → providers. Focusing a node shows only what is within N hops
// of it, both ways.
//
// The composition model is the pane's, but every change to it (targets,
// events, calls, what Gather found, the user moving) and every layout runs
// in a command: the model is lent to one command at a time (lent), and
// what arrives meanwhile waits in pend for the next. Update only reads the
// pictures commands hand back; a node's health is drawn from the live
// targets, so a health change shows on the next frame.
type mapPane struct {
	paneBase
	model *composition.Model
	// lent is set while a command holds the model.
	lent bool
	pend mapWork
	// active is set once the pane has been focused: until then the map is
	// not built (it costs nothing to those who never open it).
	active bool

	pic *mapPicture
	// sel is the item under the cursor; want is what it was, to find it
	// again in the next picture.
	sel  int
	want mapKey
	// off is the first tree row shown; ox, oy the drawing's scroll, which
	// brings the cursor's node into sight when shownSel (the item it did
	// last) is not the cursor's, or before the first drawing (scrolled).
	off, ox, oy int
	shownSel    mapKey
	scrolled    bool
	// focus is the node whose neighbourhood shows ("" for the whole
	// map), hops how far it reaches.
	focus string
	hops  int
	// gone is set while the map shows nodes that left, until the user
	// moves.
	gone bool

	// edge is the open edge's detail (nil when none).
	edge *edgeDetail
	// find is the name the cursor looks for (/, then n and N).
	find field
	// samples keep, for edges whose traffic a source reports already
	// summed (no series of its own), the figures of each picture, at most
	// one every sampleEvery, for their sparklines.
	samples   map[edgeID]*edgeSamples
	sampledAt time.Time

	// dropped counts events and calls that arrived faster than the model
	// could take them (see maxMapEvents).
	dropped int

	// gathering is set while a Gather runs; ticking while a tick is due;
	// gatherErr is the first thing the last Gather could not ask.
	gathering, ticking bool
	gatherErr          string
	lastGather         time.Time
}

// edgeID names an edge across pictures.
type edgeID struct{ from, to, capy string }

// edgeSamples are an edge's reported figures over time, oldest first.
type edgeSamples struct {
	rate, errs, p95 []float64
	seen            bool // reported in the last sampling
}

// sampleEvery is how often reported figures are sampled; the sparkline
// keeps composition.SeriesLen of them (a minute's worth).
const sampleEvery = 5 * time.Second

// sample keeps the reported figures of pic's edges (those with no series
// of their own), at most one sample every sampleEvery; edges no longer
// reported are let go.
func (p *mapPane) sample(pic *mapPicture) {
	now := p.pc.now()
	if p.samples != nil && now.Sub(p.sampledAt) < sampleEvery {
		return
	}
	if p.samples == nil {
		p.samples = map[edgeID]*edgeSamples{}
	}
	p.sampledAt = now
	for _, sm := range p.samples {
		sm.seen = false
	}
	for i := range pic.g.Edges {
		e := &pic.g.Edges[i]
		t := e.Traffic
		if t == nil || len(t.Series) > 0 {
			continue
		}
		k := edgeID{e.From, e.To, e.Capability}
		sm := p.samples[k]
		if sm == nil {
			sm = &edgeSamples{}
			p.samples[k] = sm
		}
		sm.seen = true
		push := func(s []float64, v float64) []float64 {
			if len(s) == composition.SeriesLen {
				s = append(s[:0], s[1:]...)
			}
			return append(s, v)
		}
		p95 := t.P95ms
		if p95 < 0 {
			p95 = math.NaN()
		}
		sm.rate, sm.errs, sm.p95 = push(sm.rate, t.CallsPerS), push(sm.errs, t.ErrorRate), push(sm.p95, p95)
	}
	for k, sm := range p.samples {
		if !sm.seen {
			delete(p.samples, k)
		}
	}
}

// series is an edge's traffic over the window for its sparklines: its own
// series, else the samples of what its source reported (nil when none).
func (p *mapPane) series(g *composition.Graph, e *composition.Edge) (rates, errs, p95 []float64) {
	if rates, errs, p95 = e.Traffic.Rates(g.Window); rates != nil {
		return rates, errs, p95
	}
	if sm := p.samples[edgeID{e.From, e.To, e.Capability}]; sm != nil && len(sm.rate) > 1 {
		return sm.rate, sm.errs, sm.p95
	}
	return nil, nil, nil
}

// Messages of the map's commands.
type (
	// mapBuiltMsg hands the model back with the picture made from it;
	// refresh says an event asked for the ecosystem to be asked again (a
	// registration, a topology change).
	mapBuiltMsg struct {
		pic     *mapPicture
		refresh bool
	}
	// mapGatheredMsg is what composition.Gather found.
	mapGatheredMsg struct{ g composition.Gathered }
	// mapHistoryMsg is the user's own recent calls, from history.
	mapHistoryMsg struct{ calls []composition.Call }
	// mapTickMsg moves the traffic window.
	mapTickMsg struct{}
	// mapCallsMsg is the calls history holds on an opened edge.
	mapCallsMsg struct {
		seq     int
		entries []history.Entry
		err     error
	}
)

// edgeDetail is an opened edge: its figures, and the calls history holds
// on it, to load in the composer.
type edgeDetail struct {
	seq      int
	e        composition.Edge
	from, to composition.Node
	calls    []history.Entry
	loaded   bool
	err      string
	sel, off int
}

func newMapPane(id paneID, pc *programContext) *mapPane {
	return &mapPane{paneBase: paneBase{id: id, pc: pc}, hops: 1}
}

// Typing reports whether the search field has the keyboard.
func (p *mapPane) Typing() bool { return p.find.active }

// KeyMap is the status bar's keys.
func (p *mapPane) KeyMap() help.KeyMap {
	k := p.keys()
	if p.edge != nil {
		return hints{k.Help, k.Select, k.Back, k.NextPane, k.Quit}
	}
	back := k.Back
	back.SetHelp(back.Help().Key, "whole map")
	return hints{k.Help, k.Select, k.FocusNode, k.MoreHops, k.FewerHops, back, k.Filter, k.Quit}
}

// Update follows the targets, events and calls, and handles the keys;
// then fits the view to the picture and the cursor.
func (p *mapPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

// SetSize records the pane's size and fits the view to it.
func (p *mapPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit scrolls what the pane shows (the opened edge's calls, the drawing
// or the tree) to keep the cursor in sight in the rows it has: View only
// draws from there.
func (p *mapPane) fit() {
	w, h := p.inner()
	switch {
	case w <= 0 || h <= 0:
	case p.edge != nil:
		p.fitEdge(h)
	case p.pic == nil || len(p.pic.view.Nodes) == 0:
	case p.drawingFits():
		if avail := p.bodyRows(h); avail > 0 {
			p.fitDrawing(w, avail)
		}
	default:
		p.fitTree(p.bodyRows(h))
	}
}

func (p *mapPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case focusedMsg:
		var again tea.Cmd
		if p.edge != nil { // back from the composer: the calls made since
			again = p.loadCalls(p.edge)
		}
		if !p.active {
			p.active = true
			p.pend.targets = true
			return tea.Batch(p.kick(), p.loadHistory(), p.gather(), p.tickLater())
		}
		return tea.Batch(again, p.kick(), p.tickLater())
	case targetsMsg:
		if p.active {
			p.pend.targets = true
			return p.kick()
		}
	case liveMsg:
		if p.active {
			p.takeEvents(msg.lines)
			return p.kick()
		}
	case callDoneMsg:
		if p.active && msg.ans != nil {
			if c, ok := callOf(msg.ans, p.pc.now()); ok {
				p.addCalls(c)
				return p.kick()
			}
		}
	case mapHistoryMsg:
		p.addCalls(msg.calls...)
		return p.kick()
	case mapGatheredMsg:
		p.gathering = false
		p.gatherErr = ""
		if len(msg.g.Errs) > 0 {
			p.gatherErr = render.Sanitize(msg.g.Errs[0].Error())
		}
		g := msg.g
		p.pend.gathered = &g
		return p.kick()
	case mapTickMsg:
		p.ticking = false
		if p.active {
			p.pend.tick = true
			var again tea.Cmd
			if p.focused() && p.pc.now().Sub(p.lastGather) >= gatherEvery {
				again = p.gather()
			}
			return tea.Batch(p.kick(), again, p.tickLater())
		}
	case mapBuiltMsg:
		p.lent = false
		p.install(msg.pic)
		if msg.refresh {
			return tea.Batch(p.gather(), p.kick())
		}
		return p.kick()
	case mapCallsMsg:
		if d := p.edge; d != nil && d.seq == msg.seq {
			d.loaded = true
			if msg.err != nil {
				d.err = render.Sanitize(msg.err.Error())
			}
			d.calls = msg.entries
		}
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.find.active {
			return p.typeFind(msg)
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p.onKey(kp)
		}
	case clickMsg:
		return p.onClick(msg)
	case wheelMsg:
		return p.move(msg.delta)
	}
	return nil
}

// takeEvents keeps what live targets pushed for the model (copies: the
// lines' slice is the root's), bounded.
func (p *mapPane) takeEvents(ls []line) {
	for i := range ls {
		l := &ls[i]
		if l.kind == EvNote || l.kind == EvRequest {
			continue // the TUI's own notes; requests are not about the map
		}
		if len(p.pend.events) >= maxMapEvents {
			p.pend.dropped++
			continue
		}
		p.pend.events = append(p.pend.events, l.Event)
	}
}

// addCalls keeps calls for the model, bounded as events are.
func (p *mapPane) addCalls(cs ...composition.Call) {
	for _, c := range cs {
		if len(p.pend.calls) >= maxMapEvents {
			p.pend.dropped++
			continue
		}
		p.pend.calls = append(p.pend.calls, c)
	}
}

// callOf is the user's own call, answered at now, as an observed call
// (from the "you" node).
func callOf(a *answer, now time.Time) (composition.Call, bool) {
	if a.title != "" || a.target == nil || a.req.Method == "" || a.target.Name == "" {
		return composition.Call{}, false // a replay, an inspected event or frame
	}
	c := composition.Call{At: now, From: composition.YouID, To: a.target.Address, Method: a.req.Method,
		Latency: a.elapsed, Failed: a.outcome != "ok", Alt: []string{a.target.Name}}
	if c.To == "" {
		c.To, c.Alt = a.target.Name, nil
	}
	return c, true
}

// kick lends the model to a build command when work waits, no command
// holds it, and the map is on the screen (hidden, what arrives waits,
// bounded, for the next look).
func (p *mapPane) kick() tea.Cmd {
	if p.lent || !p.active || p.pend.empty() && p.pic != nil {
		return nil
	}
	if p.pc.visible != nil && !p.pc.visible(p.id) && !p.focused() {
		return nil
	}
	w := p.pend
	p.pend = mapWork{}
	p.dropped += w.dropped
	if w.targets || p.model == nil {
		w.targets = true
	}
	var targets []*discovery.Target
	if w.targets {
		targets = p.pc.discoveryTargets()
	}
	p.lent = true
	model, prev, focus, hops := p.model, p.pic, p.focus, p.hops
	if model == nil {
		model = composition.NewModel(composition.Inputs{}) // empty: nothing to build yet
		model.SetClock(p.pc.now)
		p.model = model
	}
	return p.pc.safe(func() tea.Msg {
		pic, refresh := buildMap(model, w, targets, prev, focus, hops)
		return mapBuiltMsg{pic: pic, refresh: refresh}
	})
}

// install shows a new picture, the cursor on what it was on.
func (p *mapPane) install(pic *mapPicture) {
	p.pic = pic
	p.sample(pic)
	if d := p.edge; d != nil { // an open edge follows its traffic and state
		for _, e := range pic.g.Out(d.e.From) {
			if e.To == d.e.To && e.Capability == d.e.Capability {
				d.e = *e
			}
		}
		if n, ok := pic.g.Node(d.to.ID); ok {
			d.to = *n
		}
	}
	if pic.asked == p.focus && pic.focus == "" {
		p.focus = "" // the focused node left the map
	}
	// (a picture made for another focus is followed by one for this)
	gone := false
	for i := range pic.g.Nodes {
		if pic.g.Nodes[i].Gone {
			gone = true
			break
		}
	}
	p.gone = gone
	if p.want != (mapKey{}) {
		if i := pic.find(p.want); i >= 0 {
			p.sel = i
			return
		}
	}
	if p.focus != "" {
		if i := pic.find(mapKey{node: p.focus}); i >= 0 {
			p.sel = i
		}
	}
	p.sel = min(max(p.sel, 0), max(len(pic.items)-1, 0))
	p.want = pic.keyOf(p.sel)
}

// loadHistory reads the user's calls of the traffic window from history
// (they are observed traffic from the "you" node).
func (p *mapPane) loadHistory() tea.Cmd {
	hs, ctx, now := p.pc.hist, p.pc.ctx, p.pc.now
	if hs == nil {
		return nil
	}
	return p.pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		es, err := hs.Search(ctx, "", 1000)
		if err != nil {
			return statusMsg{text: "map: reading history: " + err.Error(), err: true}
		}
		since := now().Add(-composition.DefaultWindow)
		var calls []composition.Call
		for _, e := range es {
			if e.Time.Before(since) {
				break // newest first
			}
			calls = append(calls, composition.FromHistory(e))
		}
		return mapHistoryMsg{calls: calls}
	})
}

// gatherEvery is how often what the ecosystem says of itself (the Neural
// API, registries, deploy graphs) is asked again while the map is open.
const gatherEvery = 10 * time.Second

// gatherTimeout bounds one Gather as a whole (each call gets 2 s).
const gatherTimeout = 8 * time.Second

// gatherFunc is the command that asks the ecosystem what the targets do
// not say (composition.Gather: registries for the gaps, the Neural API's
// dependencies, topology, traffic and deploy graphs, the federation's
// other nodes), through the run's one dialer, bounded.
func (p *mapPane) gatherFunc() tea.Cmd {
	if p.pc.client == nil || p.pc.client.dialer == nil {
		return nil
	}
	targets := p.pc.discoveryTargets()
	ctx, d, sec := p.pc.ctx, p.pc.client.dialer, p.pc.cfg.Security
	p.lastGather = p.pc.now()
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, gatherTimeout)
		defer cancel()
		return mapGatheredMsg{g: composition.Gather(ctx, d, targets, composition.GatherOptions{Timeout: 2 * time.Second, Security: sec, Federation: true})}
	}
}

// gather asks the ecosystem (composition.Gather) in a command, bounded.
func (p *mapPane) gather() tea.Cmd {
	if p.gathering {
		return nil
	}
	g := p.gatherFunc()
	if g == nil {
		return nil
	}
	p.gathering = true
	return p.pc.safe(g)
}

// tickEvery is how often the traffic window moves while the map has the
// keyboard: one of its buckets (a minute in twelve).
const tickEvery = 5 * time.Second

// tickLater moves the traffic window (and asks the ecosystem again) a
// while from now, while the map has the keyboard.
func (p *mapPane) tickLater() tea.Cmd {
	if p.ticking || !p.focused() || p.pc.ticks == nil || !p.pc.ticks() {
		return nil
	}
	p.ticking = true
	return tea.Tick(tickEvery, func(time.Time) tea.Msg { return mapTickMsg{} })
}

// onKey moves the cursor, focuses nodes, opens nodes and edges.
func (p *mapPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	if p.edge != nil {
		return p.edgeKey(kp)
	}
	if p.pic == nil {
		return nil
	}
	if d, ok := moveBy(kp, k, len(p.pic.items)); ok {
		return p.move(d)
	}
	switch {
	case key.Matches(kp, k.Select):
		return p.open()
	case key.Matches(kp, k.FocusNode):
		n := p.selNode()
		if n == nil {
			return nil
		}
		if p.focus == n.ID {
			return p.setFocus("", p.hops)
		}
		return p.setFocus(n.ID, p.hops)
	case key.Matches(kp, k.MoreHops):
		if p.focus == "" {
			if n := p.selNode(); n != nil {
				return p.setFocus(n.ID, p.hops)
			}
			return nil
		}
		return p.setFocus(p.focus, min(p.hops+1, 9))
	case key.Matches(kp, k.FewerHops):
		if p.focus == "" {
			return nil
		}
		return p.setFocus(p.focus, max(p.hops-1, 1))
	case key.Matches(kp, k.Back):
		if p.focus != "" {
			return p.setFocus("", p.hops)
		}
	case key.Matches(kp, k.Filter):
		p.find.active = true
		p.find.Set("")
	case key.Matches(kp, k.NextMatch):
		return p.findNext(1)
	case key.Matches(kp, k.PrevMatch):
		return p.findNext(-1)
	case key.Matches(kp, k.Left):
		p.ox = max(p.ox-20, 0)
	case key.Matches(kp, k.Right):
		p.ox += 20
	case key.Matches(kp, k.Refresh):
		p.pend.targets = true
		return tea.Batch(p.gather(), p.kick())
	}
	return nil
}

// typeFind edits what is looked for; the cursor goes to the first node
// whose name matches (fuzzy) or edge whose capability holds it, as it is
// typed.
func (p *mapPane) typeFind(msg tea.Msg) tea.Cmd {
	if p.find.Update(msg, p.keys(), false) == editChanged {
		return p.findFrom(0, 1)
	}
	return nil
}

// findNext moves the cursor to the next (d = 1) or previous (-1) node or
// edge that matches what was looked for.
func (p *mapPane) findNext(d int) tea.Cmd {
	if p.pic == nil || p.find.Empty() {
		return nil
	}
	return p.findFrom(p.sel+d, d)
}

// findFrom moves the cursor to the first matching item from i on, going
// d, around the end; it says so when none matches.
func (p *mapPane) findFrom(i, d int) tea.Cmd {
	pic := p.pic
	pat := strings.ToLower(strings.TrimSpace(p.find.String()))
	if pic == nil || pat == "" || len(pic.items) == 0 {
		return nil
	}
	n := len(pic.items)
	for k := 0; k < n; k++ {
		j := ((i+k*d)%n + n) % n
		it := pic.items[j]
		if it.edge < 0 && fuzzyLower(pic.lower[it.node], pat) ||
			it.edge >= 0 && strings.Contains(strings.ToLower(pic.view.Edges[it.edge].Capability), pat) {
			return p.move(j - p.sel)
		}
	}
	p.pc.setInfo("nothing in the map matches " + render.Sanitize(pat))
	return nil
}

// setFocus shows the neighbourhood of id within hops ("" the whole map).
func (p *mapPane) setFocus(id string, hops int) tea.Cmd {
	p.focus, p.hops = id, hops
	p.pend.view = true
	if id == "" {
		p.pc.setInfo("the whole map")
	} else if p.pic != nil {
		if n, ok := p.pic.g.Node(id); ok {
			p.pc.setInfo(fmt.Sprintf("%s and what is within %d hop%s of it", render.Sanitize(n.Name), hops, plural(hops)))
		}
	}
	return p.kick()
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// move moves the cursor by d items; moving lets go of the nodes that left.
func (p *mapPane) move(d int) tea.Cmd {
	if p.pic == nil || len(p.pic.items) == 0 {
		return nil
	}
	p.sel = min(max(p.sel+d, 0), len(p.pic.items)-1)
	p.want = p.pic.keyOf(p.sel)
	if p.gone {
		p.gone = false
		p.pend.moved = true
		return p.kick()
	}
	return nil
}

// selItem is the item under the cursor.
func (p *mapPane) selItem() (mapItem, bool) {
	if p.pic == nil || p.sel < 0 || p.sel >= len(p.pic.items) {
		return mapItem{}, false
	}
	return p.pic.items[p.sel], true
}

// selNode is the node under the cursor (an edge's consumer).
func (p *mapPane) selNode() *composition.Node {
	it, ok := p.selItem()
	if !ok {
		return nil
	}
	return &p.pic.view.Nodes[it.node]
}

// open opens what is under the cursor: a node's capabilities (it becomes
// the current target, as choosing it in the targets pane does), or an
// edge's detail and the calls on it.
func (p *mapPane) open() tea.Cmd {
	it, ok := p.selItem()
	if !ok {
		return nil
	}
	v := p.pic.view
	if it.edge < 0 {
		n := &v.Nodes[it.node]
		t := p.pc.targets[n.ID]
		if t == nil || n.Node != "" {
			p.pc.setInfo(render.Sanitize(n.Name) + " is " + notHere(n))
			return nil
		}
		return tea.Batch(p.pc.do(selectMsg{key: t.ID, listen: true}), p.pc.do(focusMsg{pCaps}))
	}
	e := v.Edges[it.edge]
	ends := p.pic.ends[it.edge]
	d := &edgeDetail{seq: p.pc.nextSeq(), e: e, from: v.Nodes[ends[0]], to: v.Nodes[ends[1]]}
	p.edge = d
	return p.loadCalls(d)
}

// notHere says why a node has no capabilities pane.
func notHere(n *composition.Node) string {
	switch {
	case n.Missing:
		return "a capability nobody provides"
	case n.Kind == composition.KindYou:
		return "you: the calls primalscope made"
	case n.Gone:
		return "gone"
	case n.Node != "":
		return "on node " + render.Sanitize(n.Node) + ": reach it there"
	}
	return "not a target discovery lists now"
}

// loadCalls reads the calls history holds on an edge: calls to its
// provider of its capability (the method, a method under it, or its
// domain), newest first.
func (p *mapPane) loadCalls(d *edgeDetail) tea.Cmd {
	hs, ctx := p.pc.hist, p.pc.ctx
	if hs == nil {
		d.loaded, d.err = true, "off"
		return nil
	}
	seq, name, capy := d.seq, d.to.Name, d.e.Capability
	addr := ""
	if d.to.Target != nil {
		addr = d.to.Target.Address
	}
	return p.pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		es, err := hs.Search(ctx, name, 500)
		var out []history.Entry
		for _, e := range es {
			if (e.Target == name || addr != "" && e.Endpoint == addr) && methodUses(e.Method, capy) {
				out = append(out, e)
			}
		}
		return mapCallsMsg{seq: seq, entries: out, err: err}
	})
}

// methodUses reports whether a call of method m uses capability c, by the
// composition's one rule (any method when c is empty: an edge an
// orchestrator or a graph gives without one).
func methodUses(m, c string) bool { return c == "" || composition.MethodMatches(m, c) }

// edgeKey handles the keys of an opened edge: the first row offers its
// method in the composer, the others are its calls.
func (p *mapPane) edgeKey(kp tea.KeyPressMsg) tea.Cmd {
	k, d := p.keys(), p.edge
	n := 1 + len(d.calls)
	if dd, ok := moveBy(kp, k, n); ok {
		d.sel = min(max(d.sel+dd, 0), n-1)
		return nil
	}
	switch {
	case key.Matches(kp, k.Back):
		p.edge = nil
	case key.Matches(kp, k.Select):
		return p.compose(d)
	}
	return nil
}

// compose puts the opened edge's method in the composer, its provider the
// current target; on a call's row, that call as it was made.
func (p *mapPane) compose(d *edgeDetail) tea.Cmd {
	var cmd tea.Cmd
	if t := p.pc.targets[d.to.ID]; t != nil && d.to.Node == "" {
		cmd = p.pc.do(selectMsg{key: t.ID, listen: true})
	} else {
		p.pc.setInfo(render.Sanitize(d.to.Name) + " is " + notHere(&d.to))
		return nil
	}
	if d.sel > 0 && d.sel-1 < len(d.calls) {
		e := d.calls[d.sel-1]
		session, pool := e.Session, e.Pool
		return tea.Batch(cmd, p.pc.do(composeMsg{method: e.Method, params: string(e.Params), session: &session, pool: &pool}))
	}
	params, prefill := paramsFor(p.pc, d.e.Capability)
	return tea.Batch(cmd, p.pc.do(composeMsg{method: d.e.Capability, params: params}), prefill)
}

// onClick puts the cursor on the row (tree) or node (drawing) clicked.
func (p *mapPane) onClick(c clickMsg) tea.Cmd {
	if p.pic == nil || p.edge != nil || c.button != tea.MouseLeft {
		return nil
	}
	if i := p.itemAt(c.x, c.y); i >= 0 {
		return p.move(i - p.sel)
	}
	return nil
}
