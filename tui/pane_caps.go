package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func capsSpec() paneSpec {
	return paneSpec{action: "caps", tab: "caps", focus: b([]string{"2"}, "2", "capabilities"),
		make: func(id paneID, pc *programContext) pane { return newCapsPane(id, pc) }}
}

type capRowKind int

const (
	rowDomain capRowKind = iota
	rowMethod
	rowConsumedHeader
	rowConsumed
	rowInfo
)

type capRow struct {
	kind   capRowKind
	domain int // index in tree
	method int // index in domain's methods
	text   string
}

// capsPane is the current target's capability tree: domains that fold,
// their methods (⏎ puts one in the composer) and the capabilities it
// consumes with who provides them.
type capsPane struct {
	paneBase
	key      string // the target the rows are of
	open     map[string]bool
	rows     []capRow
	sel, off int
	filter   field
	consumed bool // consumed section unfolded
	// shown is the target the rows were built of.
	shown *target
	// known is what is known of the methods of a target without a
	// capability list (a Holon-RPC server).
	known knownMethods
}

// tree is t's capability tree: advertised, else what is known (known).
func (p *capsPane) tree(t *target) []capability.Domain {
	if tr := t.capTree(); tr != nil {
		return tr
	}
	return p.known.treeOf(t)
}

func newCapsPane(id paneID, pc *programContext) *capsPane {
	return &capsPane{paneBase: paneBase{id: id, pc: pc}, open: map[string]bool{}}
}

// Typing reports whether the filter has the keyboard.
func (p *capsPane) Typing() bool { return p.filter.active }

// KeyMap is the status bar's keys.
func (p *capsPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Select, k.Fold, k.Unfold, k.Filter, k.NextPane, k.Quit}
}

// Update handles the pane's keys and clicks, and rebuilds the tree when
// the targets or the current one change; then fits the scroll to the
// rows (View changes nothing).
func (p *capsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

// SetSize records the pane's size and fits the scroll to it.
func (p *capsPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit keeps the cursor's row among those the tree has room for: the
// pane's rows less the filter, the note above the tree and the selected
// method's details below it (which change with the cursor).
func (p *capsPane) fit() {
	t := p.pc.target()
	if t == nil || p.tree(t) == nil {
		return
	}
	w, h := p.inner()
	if h <= 0 {
		return
	}
	p.off = scrollInto(p.off, p.sel, p.treeRows(t, w, h), len(p.rows))
}

// treeRows is how many rows of the tree show in a body of w×h.
func (p *capsPane) treeRows(t *target, w, h int) int {
	return h - p.headRows(t) - len(p.details(p.pc.st, t, w, h))
}

// headRows is how many rows are above the tree: the filter, and the line
// saying the methods are not advertised.
func (p *capsPane) headRows(t *target) int {
	n := 0
	if p.filter.active || !p.filter.Empty() {
		n++
	}
	if t != nil && t.capTree() == nil && p.tree(t) != nil {
		n++
	}
	return n
}

func (p *capsPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case targetsMsg:
		p.known.targetsChanged()
		// The rows are of the current target (and, unfolded, of who
		// provides what it consumes): another target's change leaves
		// them as they are.
		if t := p.pc.target(); t != p.shown || p.consumed {
			p.refresh()
		}
	case currentMsg:
		p.refresh()
		if msg.changed {
			return p.known.fromHistory(p.pc, p.pc.target())
		}
	case liveMsg:
		p.known.traffic(msg.frames, p.pc.targets)
		p.knownChanged()
	case callDoneMsg:
		p.known.answered(msg.ans)
		p.knownChanged()
	case seenHistoryMsg:
		for m, ok := range msg.methods {
			p.known.note(msg.key, m, ok, true)
		}
		p.knownChanged()
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.filter.active {
			if e := p.filter.Update(msg, p.keys(), true); e == editChanged || e == editBack {
				p.sel = 0
				p.refresh()
			}
			return nil
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p.onKey(kp)
		}
	case clickMsg:
		row := msg.y - p.headRows(p.pc.target())
		if i := p.off + row; msg.button == tea.MouseLeft && row >= 0 && i < len(p.rows) {
			p.sel = i
		}
	case wheelMsg:
		p.move(msg.delta)
	}
	return nil
}

func (p *capsPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	t := p.pc.target()
	if t == nil {
		if key.Matches(kp, k.Filter) {
			p.filter.active = true
		}
		return nil
	}
	row := func() *capRow {
		if p.sel >= 0 && p.sel < len(p.rows) {
			return &p.rows[p.sel]
		}
		return nil
	}
	if d, ok := moveBy(kp, k, len(p.rows)); ok {
		p.move(d)
		return nil
	}
	switch {
	case key.Matches(kp, k.MockFaults):
		return p.toggleMock(t)
	case key.Matches(kp, k.Filter):
		p.filter.active = true
	case key.Matches(kp, k.FoldAll):
		anyOpen := false
		for _, v := range p.open {
			anyOpen = anyOpen || v
		}
		p.open = map[string]bool{}
		if !anyOpen {
			for _, d := range p.tree(t) {
				p.open[d.Name] = true
			}
		}
		p.refresh()
	case key.Matches(kp, k.Fold):
		r := row()
		if r == nil {
			return nil
		}
		switch r.kind {
		case rowDomain:
			p.open[p.tree(t)[r.domain].Name] = false
		case rowMethod:
			p.open[p.tree(t)[r.domain].Name] = false
			for i, rr := range p.rows {
				if rr.kind == rowDomain && rr.domain == r.domain {
					p.sel = i
				}
			}
		case rowConsumedHeader, rowConsumed:
			p.consumed = false
		}
		p.refresh()
	case key.Matches(kp, k.Select), key.Matches(kp, k.Unfold):
		r := row()
		if r == nil {
			return nil
		}
		switch r.kind {
		case rowDomain:
			name := p.tree(t)[r.domain].Name
			if key.Matches(kp, k.Unfold) {
				p.open[name] = true
			} else {
				p.open[name] = !p.open[name]
			}
			p.refresh()
		case rowConsumedHeader:
			p.consumed = !p.consumed
			p.refresh()
		case rowMethod:
			if key.Matches(kp, k.Select) {
				return p.pickMethod(p.tree(t)[r.domain].Methods[r.method].Name)
			}
		}
	}
	return nil
}

// pickMethod puts method in the composer with the params to start from: a
// template from the capability list's schema, else those of its last call
// in history, else {} (paramsFor).
func (p *capsPane) pickMethod(method string) tea.Cmd {
	params, prefill := paramsFor(p.pc, method)
	return tea.Batch(p.pc.do(composeMsg{method: method, params: params}), prefill)
}

// providers names the targets other than the current one that offer
// method (for consumed capabilities).
func (p *capsPane) providers(method string) []string {
	var out []string
	for _, t := range p.pc.targets {
		if t.caps() == nil || t.ID == p.pc.current {
			continue
		}
		for _, mm := range t.caps().Methods {
			if mm == method || strings.HasPrefix(mm, method+".") {
				out = append(out, t.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// refresh rebuilds the rows of the current target's tree; a new target
// starts at the top.
// knownChanged redraws the rows when what is known of the methods shown
// changed.
func (p *capsPane) knownChanged() {
	if p.known.dirty {
		p.refresh()
		p.known.shown(p.pc.target())
	}
}

func (p *capsPane) refresh() {
	if p.key != p.pc.current {
		p.key = p.pc.current
		p.sel, p.off = 0, 0
	}
	p.shown = p.pc.target()
	p.rebuild(p.pc.target(), p.providers)
}

// rebuild recomputes the rows of t's tree.
func (p *capsPane) rebuild(t *target, providers func(method string) []string) {
	keepKind, keepText := rowDomain, ""
	if p.sel >= 0 && p.sel < len(p.rows) {
		keepKind, keepText = p.rows[p.sel].kind, p.rowName(t, p.rows[p.sel])
	}
	p.rows = p.rows[:0]
	if t == nil {
		return
	}
	pat := strings.TrimSpace(p.filter.String())
	for di, d := range p.tree(t) {
		var ms []int
		for mi, m := range d.Methods {
			if pat == "" || fuzzy(m.Name, pat) || fuzzy(m.Description+" "+m.GroupDescription, pat) {
				ms = append(ms, mi)
			}
		}
		if pat != "" && len(ms) == 0 {
			continue
		}
		p.rows = append(p.rows, capRow{kind: rowDomain, domain: di})
		if p.open[d.Name] || pat != "" {
			for _, mi := range ms {
				p.rows = append(p.rows, capRow{kind: rowMethod, domain: di, method: mi})
			}
		}
	}
	if t.caps() != nil && len(t.caps().Consumed) > 0 && pat == "" {
		p.rows = append(p.rows, capRow{kind: rowConsumedHeader})
		if p.consumed {
			for _, c := range t.caps().Consumed {
				txt := "✗ " + c + "  (nobody provides it)"
				if ps := providers(c); len(ps) > 0 {
					txt = "✓ " + c + "  ← " + strings.Join(ps, ", ")
				}
				p.rows = append(p.rows, capRow{kind: rowConsumed, text: txt})
			}
		}
	}
	p.sel = min(max(p.sel, 0), len(p.rows)-1)
	for i, r := range p.rows {
		if r.kind == keepKind && p.rowName(t, r) == keepText {
			p.sel = i
			break
		}
	}
}

func (p *capsPane) rowName(t *target, r capRow) string {
	if t == nil {
		return ""
	}
	switch r.kind {
	case rowDomain:
		if r.domain < len(p.tree(t)) {
			return p.tree(t)[r.domain].Name
		}
	case rowMethod:
		if r.domain < len(p.tree(t)) && r.method < len(p.tree(t)[r.domain].Methods) {
			return p.tree(t)[r.domain].Methods[r.method].Name
		}
	}
	return r.text
}

// selectedMethod returns the method under the cursor, if any.
func (p *capsPane) selectedMethod(t *target) *capability.Method {
	if t == nil || p.sel < 0 || p.sel >= len(p.rows) {
		return nil
	}
	r := p.rows[p.sel]
	if r.kind != rowMethod || r.domain >= len(p.tree(t)) || r.method >= len(p.tree(t)[r.domain].Methods) {
		return nil
	}
	return &p.tree(t)[r.domain].Methods[r.method]
}

func (p *capsPane) move(n int) {
	p.sel = min(max(p.sel+n, 0), len(p.rows)-1)
}

// View draws the tree, and the selected method's details at the bottom.
func (p *capsPane) View() string {
	t := p.pc.target()
	title, right := capsTitle(p.pc.st, t)
	if t != nil && t.capTree() == nil && p.tree(t) != nil {
		right = strings.TrimSpace(right + " " + p.pc.st.Dim.Render("not advertised"))
	}
	return p.box(title, right, p.body(t))
}

// refusalLines say why calls to a target that demands BTSP are refused
// before anything is sent (the one dialer's judgement, r), and how to give
// or bind the seed of its family: what the call itself says (exit 5 in
// the CLI), wrapped to w.
func refusalLines(st *styles, r *ipc.BTSPRequiredError, w int) []string {
	fam := render.Sanitize(human.Clip(r.Family, 64))
	var why, how string
	switch {
	case r.Claimed:
		why = "Calls are refused: it only says it is of family " + fam + " (its socket name does not carry it), and a peer's own word picks no seed."
		how = "If you trust it, call it by its address, or by a socket name ending in -" + fam + ".sock."
	case r.Unbound:
		why = "Calls are refused: the family seed set was given with no family, and is not offered to family " + fam + "."
		how = "If it is family " + fam + "'s seed, bind it: --family " + fam + " (or FAMILY_ID=" + fam + "); another family's seed goes in the config file: [families." + fam + "] seed_file."
	case r.OwnFamily != "":
		why = "Calls are refused: no seed is known for family " + fam + " (the seed set is family " + render.Sanitize(human.Clip(r.OwnFamily, 64)) + "'s)."
		how = "Give it in the config file: [families." + fam + "] seed_file, or as your own: --family " + fam + " --family-seed-file FILE."
	default:
		why = "Calls are refused: no seed is known for family " + fam + "."
		how = "Give it: --family " + fam + " with FAMILY_SEED (or --family-seed-file), or [families." + fam + "] seed_file in the config file."
	}
	var out []string
	for _, l := range wrapText(why, w-2, w-2) {
		out = append(out, st.Warn.Render("  "+l))
	}
	for _, l := range wrapText(how, w-2, w-2) {
		out = append(out, st.Dim.Render("  "+l))
	}
	return out
}

func (p *capsPane) body(t *target) []string {
	st := p.pc.st
	w, h := p.inner()
	focused := p.focused()
	var out []string
	if p.filter.active || !p.filter.Empty() {
		out = append(out, p.filter.view(st, "/ ", w))
	}
	if t == nil {
		return append(out, "", st.Dim.Render("  Select a target ("+helpKey(p.keys().Select)+" in Targets)."))
	}
	if t.capTree() == nil && p.tree(t) != nil {
		out = append(out, st.Dim.Render(fit("  Not advertised (no capability list): built-ins, and methods seen called.", w)))
	}
	if p.tree(t) == nil {
		out = append(out, "")
		switch {
		case t.Kind == discovery.KindTarpc:
			out = append(out, st.Dim.Render("  A binary tarpc sidecar: listed, never spoken to."))
		case t.BTSP() && t.seeded() && t.errText() == "":
			out = append(out, st.Info.Render("  This socket demands a BTSP handshake: asking it with the family seed…"))
		case t.BTSP() && t.seeded():
			out = append(out, st.Warn.Render("  This socket demands a BTSP handshake, which failed."))
		case t.BTSP() && t.refusal != nil && t.refusal.Family != "":
			out = append(out, refusalLines(st, t.refusal, w)...)
		case t.BTSP() && !t.judged && p.pc.cfg.CanBTSP:
			out = append(out, st.Info.Render("  This socket demands a BTSP handshake: looking for the seed of its family…"))
		case t.BTSP() && t.Family != "":
			// No seed at all: a seed alone would not reach a family's
			// socket either (it is offered to the family it is given for),
			// so say both, as the call's refusal does.
			out = append(out, st.Warn.Render("  This socket demands a BTSP handshake before JSON-RPC."))
			out = append(out, refusalLines(st, &ipc.BTSPRequiredError{Family: t.Family}, w)...)
		case t.BTSP():
			out = append(out, st.Warn.Render("  This socket demands a BTSP handshake before JSON-RPC."),
				st.Dim.Render("  Set FAMILY_SEED (or --family-seed-file) to reach it."))
		case t.State() == discovery.StateUnprobed:
			// Never spoken to by design: say why, never "Probing…".
			why := "never spoken to"
			if len(t.Notes) > 0 {
				why = strings.Join(t.Notes, "; ")
			}
			out = append(out, st.Dim.Render("  Not probed: "+render.Sanitize(why)))
		case t.Wire() == discovery.WireHTTP && t.health() == discovery.StateLive:
			out = append(out, st.Dim.Render("  An HTTP API, not JSON-RPC: its events reach the events pane."))
		case t.health() == discovery.StateUnknown && t.Probe != nil && t.Probe.Incomplete:
			out = append(out, st.Dim.Render("  Not judged yet: the last probe was cut short."))
		case t.health() == discovery.StateUnknown:
			out = append(out, st.Dim.Render("  Probing…"))
		default:
			out = append(out, st.Dim.Render("  No capabilities known."))
		}
		if t.errText() != "" {
			out = append(out, "  "+st.Err.Render(render.Sanitize(t.errText())))
		}
		if t.endpoint() != "" {
			out = append(out, "", st.Dim.Render("  endpoint ")+render.Sanitize(t.endpoint()))
		}
		return out
	}
	// Details of the selected method at the bottom.
	detail := p.details(st, t, w, h)
	avail := h - len(out) - len(detail)
	// fit scrolled the tree (off); clamped here for drawing only.
	off := scrollInto(p.off, p.sel, avail, len(p.rows))
	for i := off; i < len(p.rows) && i < off+avail; i++ {
		out = append(out, p.row(st, t, p.rows[i], w, i == p.sel, focused))
	}
	for len(out) < h-len(detail) {
		out = append(out, "")
	}
	return append(out, detail...)
}

// details are the rows at the bottom about the selected method (none
// when no method is selected, or the pane is short).
func (p *capsPane) details(st *styles, t *target, w, h int) []string {
	m := p.selectedMethod(t)
	if m == nil || h < 8 {
		return nil
	}
	var detail []string
	if s := costText(m.Cost); s != "" {
		detail = append(detail, st.Dim.Render("cost ")+s)
	}
	if len(m.Prerequisites) > 0 {
		detail = append(detail, st.Dim.Render("after ")+render.Sanitize(strings.Join(m.Prerequisites, ", ")))
	}
	if len(m.Params) > 0 {
		detail = append(detail, st.Dim.Render("params ")+render.Sanitize(string(m.Params[:min(len(m.Params), 512)])))
	}
	if m.Description != "" {
		detail = append(detail, render.Sanitize(m.Description))
	} else if m.GroupDescription != "" {
		detail = append(detail, st.Dim.Render(render.Sanitize(m.GroupDescription)))
	}
	if len(detail) > 0 {
		detail = append([]string{st.Dim.Render(strings.Repeat("─", max(w, 0)))}, detail...)
	}
	return detail
}

func (p *capsPane) row(st *styles, t *target, r capRow, w int, sel, focused bool) string {
	cur := " "
	if sel {
		cur = st.Accent.Render("›")
	}
	var left, right string
	switch r.kind {
	case rowDomain:
		d := p.tree(t)[r.domain]
		arrow := "▸ "
		if p.open[d.Name] || !p.filter.Empty() {
			arrow = "▾ "
		}
		left = arrow + st.Accent.Render(render.Sanitize(d.Name))
		if d.Description != "" {
			left += " " + st.Dim.Render(render.Sanitize(d.Description))
		}
		right = st.Dim.Render(fmt.Sprint(len(d.Methods)))
	case rowMethod:
		m := p.tree(t)[r.domain].Methods[r.method]
		left = "    " + render.Sanitize(m.Short)
		if sel && focused {
			left = "    " + st.Selected.Render(render.Sanitize(m.Short))
		}
		right = st.Dim.Render(costText(m.Cost))
		if mk := p.known.mark(t, m.Name); mk != "" && t.capTree() == nil {
			right = st.Dim.Render(mk)
		}
		if len(m.Prerequisites) > 0 {
			right = st.Dim.Render("⤷ ") + right
		}
	case rowConsumedHeader:
		arrow := "▸ "
		if p.consumed {
			arrow = "▾ "
		}
		left = arrow + st.Title.Render("consumed capabilities")
		right = st.Dim.Render(fmt.Sprint(len(t.caps().Consumed)))
	case rowConsumed:
		s := render.Sanitize(r.text)
		if strings.HasPrefix(s, "✓") {
			left = "    " + st.OK.Render(s)
		} else {
			left = "    " + st.Err.Render(s)
		}
	}
	rw := ansi.StringWidth(right)
	lw := w - 1 - rw - 1
	if lw < 8 {
		lw, right = w-1, ""
	}
	return cur + fit(left, lw) + " " + right
}

// capsTitle is the identity line of the pane and its right-hand note.
func capsTitle(st *styles, t *target) (string, string) {
	if t == nil {
		return "Capabilities", ""
	}
	parts := []string{render.Sanitize(t.Name)}
	if v := t.version(); v != "" {
		parts[0] += " " + render.Sanitize(v)
	}
	if t.identityOf() != nil && t.identityOf().Domain != "" {
		parts = append(parts, render.Sanitize(t.identityOf().Domain))
	}
	if t.Level > 0 {
		parts = append(parts, fmt.Sprintf("L%d", t.Level))
	}
	if t.caps() != nil {
		switch t.caps().Signature.State {
		case capability.Verified:
			parts = append(parts, "signed ✓")
		case "", "unsigned", "absent":
		default:
			parts = append(parts, "signature "+render.Sanitize(string(t.caps().Signature.State))+" ✗")
		}
	}
	if o := t.ForeignOwner(); o != nil {
		parts = append(parts, "⚠ served by "+render.Sanitize(o.Owner())+": calls refused")
	}
	weak := t.weakSession()
	switch ts := (*capability.TransportSecurity)(nil); {
	case weak != "" && !t.session().BTSP:
		parts = append(parts, "cleartext, BTSP skipped")
	case weak != "":
		parts = append(parts, "BTSP "+weak)
	case t.BTSP() && t.refusal != nil && t.refusal.Family != "":
		parts = append(parts, "BTSP, no seed: calls refused")
	case t.BTSP():
		parts = append(parts, "BTSP")
	case t.caps() != nil && t.caps().TransportSecurity != nil:
		ts = t.caps().TransportSecurity
		if ts.BTSPServerAvailable != nil && *ts.BTSPServerAvailable {
			parts = append(parts, "BTSP optional")
		} else {
			parts = append(parts, "cleartext")
		}
	}
	var right []string
	if t.gone {
		// Discovery lost it; it stays here until the user picks another.
		parts = append(parts, "gone")
		right = append(right, st.Err.Render("✕ gone"))
	}
	if weak != "" {
		// The title (which says the word) is drawn in the title's style:
		// the styled marker is here.
		right = append(right, st.Err.Render("⚿!"))
	}
	if t.caps() != nil {
		right = append(right, st.Dim.Render(fmt.Sprintf("%d methods", len(t.caps().Methods))))
	}
	return strings.Join(parts, " · "), strings.Join(right, " ")
}

func costText(c *capability.Cost) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.CPU != "" {
		parts = append(parts, "cpu "+render.Sanitize(c.CPU)) // the peer's words
	}
	if c.LatencyMS != nil {
		parts = append(parts, fmt.Sprintf("~%g ms", *c.LatencyMS))
	}
	if c.MemoryBytes != nil {
		parts = append(parts, "mem "+human.Bytes(int64(*c.MemoryBytes)))
	}
	if c.GPUEligible != nil && *c.GPUEligible {
		parts = append(parts, "gpu")
	}
	return strings.Join(parts, " ")
}

// mockControl is the method a primalscope mock toggles its faults with.
const mockControl = "mock.faults.toggle"

// toggleMock asks a primalscope mock (its capability list says "mock") to
// turn its faults off, or on again.
func (p *capsPane) toggleMock(t *target) tea.Cmd {
	c := t.caps()
	if c == nil || c.Extra["mock"] == nil {
		p.pc.setErr(render.Sanitize(t.Name) + " is not a primalscope mock: it has no faults to turn on or off")
		return nil
	}
	if p.pc.client == nil {
		return nil
	}
	cl, ctx, dt, timeout := p.pc.client, p.pc.ctx, t.Target, p.pc.callTimeout()
	name := t.Name
	return p.pc.safe(func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := cl.send(cctx, dt, ipc.Request{Method: mockControl})
		if err != nil {
			return statusMsg{text: "mock faults: " + err.Error(), err: true}
		}
		var st struct {
			On     bool `json:"on"`
			Faults []struct {
				Spec string `json:"spec"`
			} `json:"faults"`
		}
		if json.Unmarshal(resp.Result, &st) != nil || len(st.Faults) == 0 {
			return statusMsg{text: "mock " + name + " has no faults (start it with --fault)"}
		}
		specs := make([]string, len(st.Faults))
		for i, f := range st.Faults {
			specs[i] = f.Spec
		}
		state := "OFF"
		if st.On {
			state = "ON"
		}
		return statusMsg{text: fmt.Sprintf("mock %s: faults %s (%s)", name, state, strings.Join(specs, ", "))}
	})
}
