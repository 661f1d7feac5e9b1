package tui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/composition"
	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// mapGap is the room between two layers of the drawing, where the edges
// run; a slot is two rows (the node's, and a lane edges cross layers on).
const mapGap = 7

// mapMargin is the room left of the first layer, where edges back into
// it (cycles) arrive.
const mapMargin = 5

// drawingFits reports whether the pane is large enough for the layered
// drawing (120×35 screens and wider give it the body); smaller, the tree.
func (p *mapPane) drawingFits() bool { return p.w >= 120 && p.h >= 33 }

// View draws the map: a summary line, the tree or the drawing (only what
// shows), and the item under the cursor in words; or an opened edge.
func (p *mapPane) View() string {
	st := p.pc.st
	w, h := p.inner()
	title := "Map"
	if p.pic != nil && p.focus != "" {
		if n, ok := p.pic.g.Node(p.focus); ok {
			title += fmt.Sprintf(" · %s ±%d", render.Sanitize(n.Name), p.hops)
		}
	}
	right := ""
	if p.pic != nil {
		right = st.Dim.Render(fmt.Sprintf("%d nodes · %d edges", len(p.pic.view.Nodes), len(p.pic.view.Edges)))
	}
	if w <= 0 || h <= 0 {
		return p.box(title, right, nil)
	}
	if p.edge != nil {
		return p.box(title+" · edge", right, p.edgeBody(w, h))
	}
	if p.pic == nil {
		return p.box(title, right, []string{st.Dim.Render(" building the map…")})
	}
	if len(p.pic.view.Nodes) == 0 {
		return p.box(title, right, []string{st.Dim.Render(" No targets to map yet.")})
	}
	first := p.summary(w)
	if p.find.active || !p.find.Empty() {
		first = p.find.view(p.pc.st, "/ ", w)
	}
	body := []string{first}
	detail := p.detail(w)
	avail := p.bodyRows(h)
	if p.drawingFits() {
		body = append(body, p.drawing(w, avail)...)
	} else {
		body = append(body, p.tree(w, avail)...)
	}
	for len(body) < h-len(detail) {
		body = append(body, "")
	}
	return p.box(title, right, append(body, detail...))
}

// summary is the first line: the gaps, degraded edges and cycles, in
// words, and whether any source reports traffic.
func (p *mapPane) summary(w int) string {
	st, pic := p.pc.st, p.pic
	var parts []string
	if pic.gaps > 0 {
		parts = append(parts, st.Err.Render(fmt.Sprintf("✗ %d gap%s", pic.gaps, plural(pic.gaps))))
	}
	if pic.degraded > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("! %d degraded", pic.degraded)))
	}
	if n := len(pic.view.Cycles); n > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("↻ %d cycle%s", n, plural(n))))
	}
	if len(parts) == 0 {
		parts = append(parts, st.OK.Render("✓ no gaps, nothing degraded"))
	}
	if p.gone {
		n := 0
		for i := range pic.view.Nodes {
			if pic.view.Nodes[i].Gone {
				n++
			}
		}
		parts = append(parts, st.Dim.Render(fmt.Sprintf("✕ %d gone", n)))
	}
	if !pic.g.TrafficKnown {
		parts = append(parts, st.Dim.Render("no traffic reported"))
	}
	if p.dropped > 0 {
		parts = append(parts, st.Warn.Render(fmt.Sprintf("%d events not applied (too many at once)", p.dropped)))
	}
	if p.gatherErr != "" {
		parts = append(parts, st.Warn.Render("could not ask: "+p.gatherErr))
	}
	return fit(" "+strings.Join(parts, st.Dim.Render(" · ")), w)
}

// nodeHealth is a node's health as drawn: the live target's when
// discovery has said more of it since the map was built (so a change shows
// on the next frame, before the map is built again), else what the map
// says (which events may have changed since).
func (p *mapPane) nodeHealth(n *composition.Node) discovery.State {
	if n.Node == "" && !n.Gone {
		if t := p.pc.targets[n.ID]; t != nil && t.Target != n.Target {
			return t.health()
		}
	}
	switch discovery.State(n.Health) {
	case discovery.StateLive, discovery.StateLocked:
		return discovery.StateLive
	case discovery.StateStale:
		return discovery.StateStale
	case discovery.StateDead, discovery.StateError:
		return discovery.StateDead
	}
	return discovery.StateUnknown
}

// nodeMark is a node's glyph, its ink, and a word when its state needs
// one (so the map reads without colour).
func (p *mapPane) nodeMark(n *composition.Node) (string, ink, string) {
	switch {
	case n.Missing:
		return "✗", inkErr, "GAP"
	case n.Gone:
		return "✕", inkDim, "gone"
	case n.Kind == composition.KindYou:
		return "◆", inkAccent, ""
	}
	switch h := p.nodeHealth(n); h {
	case discovery.StateLive:
		return "●", inkOK, ""
	case discovery.StateStale:
		return "◌", inkWarn, "stale"
	case discovery.StateDead:
		return "✕", inkErr, "down"
	}
	return "○", inkDim, ""
}

// nodeLabel is a node's name as the map shows it (without its glyph):
// with its family ("beardog@westgate-tower-155f", as the targets pane
// names family-scoped sockets) and the federation node it runs on.
func nodeLabel(n *composition.Node) string {
	name := n.Label() // NAME@FAMILY, as primalscope map says it
	if n.Node != "" {
		name += " on " + n.Node
	}
	return name
}

// stateMark is an edge state's glyph, ink and word.
func stateMark(s composition.State) (string, ink, string) {
	g := composition.Glyph(s) // the CLI's marks
	switch s {
	case composition.StateGap:
		return g, inkErr, "GAP"
	case composition.StateDegraded:
		return g, inkWarn, "DEGRADED"
	case composition.StateUnused:
		return g, inkDim, "unused"
	case composition.StateUndeclared:
		return g, inkAccent, "undeclared"
	}
	return g, inkOK, "ok"
}

// edgeLine is how an edge's line is drawn: its ink and dashes.
func edgeLine(e *composition.Edge) (ink, lineStyle) {
	switch e.State {
	case composition.StateGap:
		return inkErr, lineGap
	case composition.StateDegraded:
		return inkWarn, lineDegraded
	}
	if e.Traffic != nil && e.Traffic.CallsPerS > 0 {
		return inkOK, lineSolid
	}
	return inkDim, lineSolid
}

// cellText makes peer text safe for the canvas: escaped, one cell a
// rune (wider runes become '?'), cut to w cells.
func cellText(s string, w int) string {
	s = render.Sanitize(s)
	var b strings.Builder
	n := 0
	for _, r := range s {
		if n >= w {
			break
		}
		if r >= utf8.RuneSelf && ansi.StringWidth(string(r)) != 1 {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	if utf8.RuneCountInString(s) > w && w > 0 {
		rs := []rune(b.String())
		rs[len(rs)-1] = '…'
		return string(rs)
	}
	return b.String()
}

// ---- the tree (narrow) ----

// fitTree scrolls the tree's h rows to show the cursor's row (and the
// header of its group with a group's first node).
func (p *mapPane) fitTree(h int) {
	pic := p.pic
	if h <= 0 {
		return
	}
	sel := 0
	if p.sel >= 0 && p.sel < len(pic.rowOf) {
		sel = pic.rowOf[p.sel]
		if sel > 0 && pic.rows[sel-1].item < 0 && sel-1 < p.off {
			sel-- // the group's header with its first node
		}
	}
	p.off = scrollInto(p.off, sel, h, len(pic.rows))
}

// tree draws the visible rows of the tree, from off (fitTree): each node,
// then what it consumes, one edge a row (consumer → capability →
// provider).
func (p *mapPane) tree(w, h int) []string {
	pic := p.pic
	if h <= 0 {
		return nil
	}
	out := make([]string, 0, h)
	for r := p.off; r < len(pic.rows) && len(out) < h; r++ {
		if row := pic.rows[r]; row.item < 0 {
			out = append(out, fit(p.pc.st.Title.Render("▾ "+render.Sanitize(row.header)), w))
		} else {
			out = append(out, p.treeRow(row.item, w))
		}
	}
	return out
}

// treeRow draws item i of the tree in w cells.
func (p *mapPane) treeRow(i, w int) string {
	st, pic := p.pc.st, p.pic
	it := pic.items[i]
	sel := i == p.sel
	cur := " "
	if sel {
		cur = st.Accent.Render("›")
	}
	v := pic.view
	n := &v.Nodes[it.node]
	if it.edge < 0 {
		g, k, word := p.nodeMark(n)
		label := render.Sanitize(nodeLabel(n))
		if n.Missing {
			label = "GAP " + label
			word = "nobody provides it"
		}
		if sel && p.focused() {
			label = st.Selected.Render(label)
		} else if n.ID == p.focus {
			label = st.Accent.Render(label)
		}
		more := ""
		if word != "" {
			more += " " + inkStyle(st, k).Render(word)
		}
		if n.Level > 0 {
			more += st.Dim.Render(fmt.Sprintf(" L%d", n.Level))
		}
		if c := pic.in[it.node]; c > 0 {
			more += st.Dim.Render(fmt.Sprintf(" · needed by %d", c))
		}
		if n.Step != "" {
			sk := inkDim
			if n.StepFailed {
				sk = inkErr
			}
			more += " " + inkStyle(st, sk).Render("⚑ "+render.Sanitize(n.Step))
		}
		return fit(cur+inkStyle(st, k).Render(g)+" "+label+more, w)
	}
	e := &v.Edges[it.edge]
	to := &v.Nodes[pic.ends[it.edge][1]]
	// the branch: ├ for all but the node's last edge
	outs := pic.out[it.node]
	branch := "├"
	if outs[len(outs)-1] == it.edge {
		branch = "╰"
	}
	capy := render.Sanitize(capLabel(e.Capability))
	for j, x := range outs {
		if x == it.edge && j > 0 && v.Edges[outs[j-1]].Capability == e.Capability {
			capy = strings.Repeat(" ", ansi.StringWidth(capy)) // one capability, several providers
		}
	}
	sg, sk, sw := stateMark(e.State)
	tg, tk, tw := p.nodeMark(to)
	prov := render.Sanitize(nodeLabel(to))
	if to.Missing {
		prov = "nobody"
	}
	if sel && p.focused() {
		prov = st.Selected.Render(prov)
	}
	s := cur + st.Dim.Render("  "+branch+" ") + capy + st.Dim.Render(" → ") + inkStyle(st, tk).Render(tg) + " " + prov
	if tw != "" && !to.Missing {
		s += " " + inkStyle(st, tk).Render(tw)
	}
	s += "  " + inkStyle(st, sk).Render(sg+" "+sw)
	if e.InCycle {
		s += " " + st.Warn.Render("↻ cycle")
	}
	if e.Traffic != nil {
		s += st.Dim.Render("  " + trafficWords(pic.g, e))
	}
	return fit(s, w)
}

// capLabel names an edge's capability ("(depends on)" when a source gave
// none), as the CLI does.
func capLabel(c string) string { return composition.CapabilityLabel(c) }

// trafficWords is an edge's traffic in words, as the CLI says it, or
// that there is none to show (never zeros where no source reports any).
func trafficWords(g *composition.Graph, e *composition.Edge) string {
	return composition.TrafficText(g, e)
}

// rate is a call rate for people, as the CLI writes it.
func rate(r float64) string {
	if r >= 0.01 || r == 0 {
		return fmt.Sprintf("%.3g/s", r)
	}
	return fmt.Sprintf("%.2g/s", r)
}

// ---- the drawing (wide) ----

// geometry of a view node: the cell its label starts at.
func (pic *mapPicture) cell(i int) (x, y int) {
	pos := pic.pos[i]
	return mapMargin + pic.col[i]*(pic.colW+mapGap), pos.Slot * 2
}

// fitDrawing scrolls the drawing's w×h cells: when the cursor moved (or
// before the first drawing) its node comes into sight; otherwise the
// user's own scrolling (<, >) stays, refresh after refresh (the layout is
// stable); never past the drawing's edges.
func (p *mapPane) fitDrawing(w, h int) {
	pic := p.pic
	it := pic.items[min(max(p.sel, 0), len(pic.items)-1)]
	if k := pic.keyOf(p.sel); k != p.shownSel || !p.scrolled {
		p.shownSel, p.scrolled = k, true
		x, y := pic.cell(it.node)
		if x < p.ox {
			p.ox = x
		}
		if x+pic.colW > p.ox+w {
			p.ox = x + pic.colW - w
		}
		if y < p.oy {
			p.oy = y
		}
		if y >= p.oy+h {
			p.oy = y - h + 1
		}
	}
	p.ox = max(min(p.ox, mapMargin+pic.cols*(pic.colW+mapGap)-w), 0)
	p.oy = max(min(p.oy, pic.slots*2-h), 0)
}

// drawing draws the part of the layered map that shows in w×h cells,
// from ox, oy (fitDrawing): layers left to right
// (consumers left of providers), edges in the room between them.
func (p *mapPane) drawing(w, h int) []string {
	pic := p.pic
	if h <= 0 {
		return nil
	}
	it := pic.items[min(max(p.sel, 0), len(pic.items)-1)]
	c := newCanvas(w, h, p.ox, p.oy)
	selEdge := it.edge
	for i := range pic.view.Edges {
		if i != selEdge {
			p.drawEdge(c, i, false)
		}
	}
	if selEdge >= 0 {
		p.drawEdge(c, selEdge, true)
	}
	pitch := pic.colW + mapGap
	r0, r1 := max(p.ox-mapMargin, 0)/pitch, (p.ox+w)/pitch
	s0, s1 := p.oy/2, (p.oy+h)/2
	for r := r0; r <= r1 && r < len(pic.byCol); r++ {
		col := pic.byCol[r]
		for s := s0; s <= s1 && s < len(col); s++ {
			p.drawNode(c, col[s], it)
		}
	}
	return c.lines(p.pc.st)
}

// nodeText is node i's label in the drawing (without its glyph): its
// name, and a word for a state that needs one; at most colW-2 cells.
func (p *mapPane) nodeText(i int) string {
	pic := p.pic
	n := &pic.view.Nodes[i]
	_, _, word := p.nodeMark(n)
	label := nodeLabel(n)
	switch {
	case n.Missing:
		label = word + " " + label
	case word != "":
		label += " " + word
	}
	return cellText(label, pic.colW-2)
}

// labelEnd is the first cell after node i's label and a space: where its
// edges leave and the edges against the flow arrive.
func (p *mapPane) labelEnd(i int) int {
	x, _ := p.pic.cell(i)
	return x + 2 + utf8.RuneCountInString(p.nodeText(i)) + 1
}

// drawNode writes node i's label: glyph, name, and a word for a state
// that needs one.
func (p *mapPane) drawNode(c *canvas, i int, cur mapItem) {
	pic := p.pic
	n := &pic.view.Nodes[i]
	x, y := pic.cell(i)
	g, k, _ := p.nodeMark(n)
	lk := inkText
	switch {
	case cur.node == i && cur.edge < 0 && p.focused():
		lk = inkSel
	case cur.node == i, n.ID == pic.focus:
		lk = inkAccent
	case n.Missing:
		lk = inkErr
	case n.Gone:
		lk = inkDim
	}
	c.text(x, y, g, k)
	c.put(x+1, y, ' ', lk)
	c.text(x+2, y, p.nodeText(i), lk)
}

// drawEdge draws edge i from its consumer's right into its provider's
// left; an edge that crosses layers, or goes back against the flow (a
// cycle), runs along the lane under the consumer's row.
func (p *mapPane) drawEdge(c *canvas, i int, sel bool) {
	pic := p.pic
	e := &pic.view.Edges[i]
	a, b := pic.ends[i][0], pic.ends[i][1]
	xa, ya := pic.cell(a)
	xb, yb := pic.cell(b)
	cw := pic.colW
	// Cull what cannot show.
	x0, x1 := min(xa, xb)-mapMargin, max(xa, xb)+cw+mapGap
	y0, y1 := min(ya, yb), max(ya, yb)+1
	if x1 < c.ox || x0 >= c.ox+c.w || y1 < c.oy || y0 >= c.oy+c.h {
		return
	}
	k, ls := edgeLine(e)
	if sel {
		k = inkSel
	}
	arrow, ak := '▸', k
	if e.State == composition.StateDegraded {
		arrow = '!'
	}
	ra, rb := pic.col[a], pic.col[b]
	cx := xb - 2 - pic.pos[b].Slot%(mapGap-4) // edges into one provider share a channel
	out := p.labelEnd(a)
	if rb == ra+1 {
		c.hline(ya, out, cx, k, ls)
		c.vline(cx, ya, yb, k, ls)
	} else {
		// Across layers, or back against the flow (a cycle): down to the
		// lane under the consumer, along it, and into the provider.
		ca := xa + cw + 1 + pic.pos[a].Slot%2
		c.hline(ya, out, ca, k, ls)
		c.vline(ca, ya, ya+1, k, ls)
		c.hline(ya+1, ca, cx, k, ls)
		c.vline(cx, ya+1, yb, k, ls)
	}
	c.hline(yb, cx, xb-1, k, ls)
	c.put(xb-1, yb, arrow, ak)
}

// itemAt is the item drawn at (x, y) inside the pane (tree row or node
// label), or -1.
func (p *mapPane) itemAt(x, y int) int {
	pic := p.pic
	y-- // the summary line
	if y < 0 {
		return -1
	}
	if !p.drawingFits() {
		if r := p.off + y; r < len(pic.rows) {
			return pic.rows[r].item
		}
		return -1
	}
	mx, my := x+p.ox-mapMargin, y+p.oy
	if my%2 != 0 || mx < 0 {
		return -1
	}
	pitch := pic.colW + mapGap
	r, s := mx/pitch, my/2
	if mx%pitch >= pic.colW || r >= len(pic.byCol) || s >= len(pic.byCol[r]) {
		return -1
	}
	return pic.nodeItem[pic.byCol[r][s]]
}

// ---- the item under the cursor, in words ----

// detailRows is how many rows detail takes.
const detailRows = 2

// bodyRows is the rows the map (drawing or tree) has in a body h rows
// high: below the summary, above the detail (when an item is under the
// cursor).
func (p *mapPane) bodyRows(h int) int {
	if _, ok := p.selItem(); ok {
		h -= detailRows
	}
	return h - 1
}

// detail is detailRows lines on the item under the cursor: a node's
// state and neighbours, or an edge's state, sources and traffic with
// sparklines.
func (p *mapPane) detail(w int) []string {
	st, pic := p.pc.st, p.pic
	it, ok := p.selItem()
	if !ok {
		return nil
	}
	v := pic.view
	n := &v.Nodes[it.node]
	if it.edge < 0 {
		g, k, word := p.nodeMark(n)
		if word == "" {
			word = healthWord(p.nodeHealth(n))
		}
		l1 := inkStyle(st, k).Render(g) + " " + st.Accent.Render(render.Sanitize(nodeLabel(n))) + " · " + inkStyle(st, k).Render(word)
		if n.Kind != "" && !n.Missing {
			l1 += st.Dim.Render(" · " + render.Sanitize(n.Kind))
		}
		l1 += st.Dim.Render(fmt.Sprintf(" · needs %d · needed by %d", len(pic.out[it.node]), pic.in[it.node]))
		l2 := ""
		switch {
		case n.Missing:
			l2 = st.Err.Render("✗ GAP: nobody provides " + render.Sanitize(n.Name))
		case n.Step != "":
			sk := st.Dim
			if n.StepFailed {
				sk = st.Err
			}
			l2 = sk.Render("⚑ " + render.Sanitize(n.Step))
		}
		if cyc := pic.cycleOf(n.ID); cyc != "" {
			l2 = joinHints(" · ", l2, st.Warn.Render("↻ cycle: "+cyc))
		}
		return []string{fit(" "+l1, w), fit(" "+l2, w)}
	}
	e := &v.Edges[it.edge]
	to := &v.Nodes[pic.ends[it.edge][1]]
	sg, sk, sw := stateMark(e.State)
	l1 := render.Sanitize(nodeLabel(n)) + st.Dim.Render(" → ") + render.Sanitize(capLabel(e.Capability)) + st.Dim.Render(" → ") + render.Sanitize(nodeLabel(to)) +
		" " + inkStyle(st, sk).Render(sg+" "+sw) + st.Dim.Render(" · from "+sourceWords(e))
	if e.Why != "" {
		l1 += inkStyle(st, sk).Render(" · " + render.Sanitize(e.Why))
	}
	return []string{fit(" "+l1, w), fit(" "+p.sparks(pic.g, e, 12), w)}
}

// sparks is an edge's traffic on one line: rate, errors and p95, each
// with its sparkline over the window (or why there is none).
func (p *mapPane) sparks(g *composition.Graph, e *composition.Edge, n int) string {
	st := p.pc.st
	t := e.Traffic
	if t == nil {
		return st.Dim.Render(trafficWords(g, e))
	}
	rates, errs, p95 := p.series(g, e)
	part := func(name string, vals []float64, now string, k ink) string {
		s := st.Dim.Render(name+" ") + now
		if sl := sparkline(vals, n); sl != "" {
			s = st.Dim.Render(name+" ") + inkStyle(p.pc.st, k).Render(sl) + " " + now
		}
		return s
	}
	pf := "–"
	if t.P95ms >= 0 {
		pf = composition.Millis(t.P95ms)
	}
	ek := inkDim
	if t.ErrorRate > 0 {
		ek = inkErr
	}
	return part("rate", rates, rate(t.CallsPerS), inkOK) + st.Dim.Render(" · ") +
		part("errors", errs, fmt.Sprintf("%.0f%%", 100*t.ErrorRate), ek) + st.Dim.Render(" · ") +
		part("p95", p95, pf, inkAccent)
}

// sourceWords lists where an edge was learned.
func sourceWords(e *composition.Edge) string {
	if len(e.Sources) == 0 {
		return "no source"
	}
	s := make([]string, len(e.Sources))
	for i, x := range e.Sources {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
}

// maxCycleNames bounds how much of a cycle the detail line names.
const maxCycleNames = 8

// cycleOf names the first cycle through id ("a → b → a"), or "".
func (pic *mapPicture) cycleOf(id string) string {
	ci, ok := pic.cycleAt[id]
	if !ok {
		return ""
	}
	c := pic.view.Cycles[ci]
	names := make([]string, 0, min(len(c), maxCycleNames+1))
	for i, y := range c {
		if i == maxCycleNames {
			names = append(names, fmt.Sprintf("… (%d in all)", len(c)-1))
			break
		}
		name := y
		if n, ok := pic.view.Node(y); ok {
			name = nodeLabel(n)
		}
		names = append(names, name)
	}
	return render.Sanitize(strings.Join(names, " → "))
}

// ---- an opened edge ----

// edgeBody draws an opened edge: what it is, its traffic as three
// sparklines, the offer to compose its method on its provider, and the
// calls history holds on it.
func (p *mapPane) edgeBody(w, h int) []string {
	st, d := p.pc.st, p.edge
	out, rows := p.edgeHead()
	avail := h - len(out) - len(rows)
	for i := d.off; i < len(d.calls) && i-d.off < avail; i++ {
		rows = append(rows, p.pickRow(i+1, callWords(st, &d.calls[i])))
	}
	for i := range out {
		out[i] = fit(out[i], w)
	}
	for _, r := range rows {
		out = append(out, fit(r, w))
	}
	return out
}

// fitEdge scrolls the opened edge's calls to show the cursor's in a body
// of h rows.
func (p *mapPane) fitEdge(h int) {
	d := p.edge
	out, rows := p.edgeHead()
	avail := h - len(out) - len(rows)
	d.off = scrollInto(d.off, max(d.sel-1, 0), avail, len(d.calls))
}

// edgeHead is what an opened edge shows above its calls: out, what it
// is; rows, the offer to compose and the calls' heading.
func (p *mapPane) edgeHead() (out, rows []string) {
	st, d := p.pc.st, p.edge
	e := &d.e
	sg, sk, sw := stateMark(e.State)
	out = []string{
		" " + st.Accent.Render(render.Sanitize(nodeLabel(&d.from))) + st.Dim.Render(" → ") + render.Sanitize(capLabel(e.Capability)) + st.Dim.Render(" → ") + st.Accent.Render(render.Sanitize(nodeLabel(&d.to))),
		" " + inkStyle(st, sk).Render(sg+" "+sw) + st.Dim.Render(" · from "+sourceWords(e)),
	}
	if e.Why != "" {
		out = append(out, " "+inkStyle(st, sk).Render(render.Sanitize(e.Why)))
	}
	g := p.pic.g
	if t := e.Traffic; t == nil {
		out = append(out, " "+st.Dim.Render(trafficWords(g, e)))
	} else {
		rates, errs, p95 := p.series(g, e)
		pf := "–"
		if t.P95ms >= 0 {
			pf = composition.Millis(t.P95ms)
		}
		sw := composition.SeriesLen * 2
		stretch := func(vals []float64) []float64 { // two cells a bucket: easier to read
			out := make([]float64, 0, 2*len(vals))
			for _, v := range vals {
				out = append(out, v, v)
			}
			return out
		}
		row := func(name string, vals []float64, now string, k ink) string {
			sl := sparkline(stretch(vals), sw)
			if sl == "" {
				sl = st.Dim.Render(fmt.Sprintf("%-*s", sw, "(a sum: its history is sampled)"))
			} else {
				sl = inkStyle(st, k).Render(fmt.Sprintf("%*s", sw, sl)) // the newest at the right
			}
			return " " + st.Dim.Render(fmt.Sprintf("%-7s", name)) + sl + "  " + now
		}
		ek := inkDim
		if t.ErrorRate > 0 {
			ek = inkErr
		}
		out = append(out,
			row("rate", rates, rate(t.CallsPerS), inkOK),
			row("errors", errs, fmt.Sprintf("%.0f%%", 100*t.ErrorRate), ek),
			row("p95", p95, pf, inkAccent),
			" "+st.Dim.Render(fmt.Sprintf("over the last %s", g.Window)))
	}
	out = append(out, "")
	k := p.keys()
	offer := hint(k.Select, "compose "+render.Sanitize(capLabel(e.Capability))+" on "+render.Sanitize(nodeLabel(&d.to)))
	rows = []string{p.pickRow(0, offer)}
	switch {
	case !d.loaded:
		rows = append(rows, "  "+st.Dim.Render("reading history…"))
	case d.err != "":
		rows = append(rows, "  "+st.Err.Render("history: "+d.err))
	case len(d.calls) == 0:
		rows = append(rows, "  "+st.Dim.Render("no calls on this edge in history"))
	default:
		rows = append(rows, "  "+st.Title.Render(fmt.Sprintf("Calls on this edge in history (%d)", len(d.calls))))
	}
	return out, rows
}

// pickRow is a row of the opened edge's list, with the cursor when on it.
func (p *mapPane) pickRow(i int, s string) string {
	if i == p.edge.sel {
		return p.pc.st.Accent.Render("›") + " " + s
	}
	return "  " + s
}

// callWords is one call from history: when, the method, its outcome and
// how long it took.
func callWords(st *styles, e *history.Entry) string {
	o := st.OK
	if e.Outcome != history.OutcomeOK {
		o = st.Err
	}
	return st.Dim.Render(e.Time.Local().Format("15:04:05")) + " " + render.Sanitize(e.Method) + " " + o.Render(string(e.Outcome)) + " " + st.Dim.Render(human.Duration(e.Duration))
}
