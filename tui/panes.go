package tui

import (
	"fmt"
	"slices"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// ---- targets ----

type targetRow struct {
	header string // a group header when not empty
	key    string
}

// targetsPane lists targets, filtered (fuzzy) and grouped.
type targetsPane struct {
	targets   map[string]*Target
	rows      []targetRow
	sel, off  int
	filter    lineEdit
	filtering bool
	groupBy   int // 0 none, 1 source, 2 family
	// live, stale and down count the targets by health (set by rebuild).
	live, stale, down int
}

var groupNames = [...]string{"", "source", "family"}

func newTargetsPane() targetsPane { return targetsPane{targets: map[string]*Target{}} }

// fuzzy reports whether every rune of pat appears in s in order, ignoring case.
func fuzzy(s, pat string) bool { return fuzzyLower(strings.ToLower(s), strings.ToLower(pat)) }

// fuzzyLower is fuzzy for text already in lower case.
func fuzzyLower(s, pat string) bool {
	for _, r := range pat {
		i := strings.IndexRune(s, r)
		if i < 0 {
			return false
		}
		s = s[i+len(string(r)):]
	}
	return true
}

func (p *targetsPane) selectedKey() string {
	if p.sel >= 0 && p.sel < len(p.rows) {
		return p.rows[p.sel].key
	}
	return ""
}

// rebuild recomputes the rows, keeping the selection on the same target,
// and the health counts the header shows. Each target's sort key is worked
// out once, so a list of 10,000 re-sorts within a frame.
func (p *targetsPane) rebuild() {
	keep := p.selectedKey()
	pat := strings.ToLower(strings.TrimSpace(p.filter.String()))
	type sortKey struct {
		group string
		score int // best matches first: prefix, substring, alias or family, subsequence
		t     *Target
	}
	ts := make([]sortKey, 0, len(p.targets))
	p.live, p.stale, p.down = 0, 0, 0
	for _, t := range p.targets {
		switch t.Health {
		case HealthLive:
			p.live++
		case HealthStale:
			p.stale++
		case HealthDown:
			p.down++
		}
		k := sortKey{t: t}
		if pat != "" {
			aliases := strings.ToLower(strings.Join(t.Aliases, " "))
			family := strings.ToLower(t.Family)
			name := strings.ToLower(t.Name)
			hay := name + " " + aliases + " " + family + " " + strings.ToLower(t.Pool) + " " + strings.ToLower(t.Kind)
			if !fuzzyLower(hay, pat) {
				continue
			}
			switch {
			case strings.HasPrefix(name, pat):
				k.score = 0
			case strings.Contains(name, pat):
				k.score = 1
			case strings.Contains(aliases+" "+family, pat):
				k.score = 2
			default:
				k.score = 3
			}
		}
		switch p.groupBy {
		case 1:
			k.group = "unknown source"
			if len(t.Sources) > 0 {
				k.group = t.Sources[0]
			}
		case 2:
			k.group = "no family"
			if t.Family != "" {
				k.group = "family " + t.Family
			}
		}
		ts = append(ts, k)
	}
	slices.SortFunc(ts, func(a, b sortKey) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if a.score != b.score {
			return a.score - b.score
		}
		if c := strings.Compare(a.t.Name, b.t.Name); c != 0 {
			return c
		}
		return strings.Compare(a.t.Key, b.t.Key)
	})
	p.rows = p.rows[:0]
	last := "\x00"
	for _, k := range ts {
		if p.groupBy != 0 && k.group != last {
			p.rows = append(p.rows, targetRow{header: k.group})
			last = k.group
		}
		p.rows = append(p.rows, targetRow{key: k.t.Key})
	}
	p.sel = -1
	for i, r := range p.rows {
		if r.key != "" && (r.key == keep || p.sel < 0) {
			p.sel = i
			if r.key == keep {
				break
			}
		}
	}
}

func (p *targetsPane) move(n int) {
	if len(p.rows) == 0 {
		return
	}
	i := p.sel
	step := 1
	if n < 0 {
		step, n = -1, -n
	}
	for ; n > 0; n-- {
		j := i + step
		for j >= 0 && j < len(p.rows) && p.rows[j].key == "" {
			j += step
		}
		if j < 0 || j >= len(p.rows) {
			break
		}
		i = j
	}
	p.sel = i
}

// counts reports how many targets are live, stale and down (as of the last
// rebuild).
func (p *targetsPane) counts() (live, stale, down int) { return p.live, p.stale, p.down }

// shortFamily keeps a family id readable in a narrow list.
func shortFamily(f string) string {
	if len(f) > 12 {
		return f[:11] + "…"
	}
	return f
}

func healthDot(st *styles, h Health) string {
	switch h {
	case HealthLive:
		return st.OK.Render("●")
	case HealthStale:
		return st.Warn.Render("◌")
	case HealthDown:
		return st.Err.Render("✕")
	}
	return st.Dim.Render("○")
}

func (p *targetsPane) View(st *styles, w, h int, focused bool, dirs []string) []string {
	var out []string
	if p.filtering || !p.filter.Empty() {
		out = append(out, st.Accent.Render("/ ")+p.filter.View(w-2, p.filtering, st, -1))
	}
	if len(p.targets) == 0 {
		out = append(out, "", st.Warn.Render(" No targets found."), "", st.Dim.Render(" Looked in:"))
		if len(dirs) == 0 {
			out = append(out, st.Dim.Render("  (no socket directory exists)"))
		}
		for _, d := range dirs {
			out = append(out, "  "+render.Sanitize(d))
		}
		out = append(out, "", st.Dim.Render(" Try ")+st.Accent.Render("primalscope demo"), st.Dim.Render(" or --socket-dir DIR."))
		return out
	}
	if len(p.rows) == 0 {
		return append(out, st.Dim.Render(" nothing matches the filter"))
	}
	avail := h - len(out)
	p.off = scrollInto(p.off, p.sel, avail, len(p.rows))
	for i := p.off; i < len(p.rows) && i < p.off+avail; i++ {
		r := p.rows[i]
		if r.header != "" {
			out = append(out, st.Title.Render("▾ "+render.Sanitize(r.header)))
			continue
		}
		t := p.targets[r.key]
		out = append(out, p.row(st, t, w, i == p.sel, focused))
	}
	return out
}

func (p *targetsPane) row(st *styles, t *Target, w int, sel, focused bool) string {
	right := ""
	switch {
	case t.weakSession() != "":
		// Not the plain lock: the session does not protect what it seems to.
		right += st.Err.Render("⚿! ")
	case t.BTSP:
		right += st.Warn.Render("⚿ ")
	}
	if t.Level > 0 {
		right += st.Dim.Render(fmt.Sprintf("L%d ", t.Level))
	}
	switch {
	case t.Kind == "tarpc":
		right += st.Dim.Render("  tarpc")
	case t.Health == HealthLive:
		right += st.Dim.Render(fmt.Sprintf("%7s", fmtDur(t.Latency)))
	case t.Health == HealthUnknown:
		right += st.Dim.Render("    …  ")
	default:
		right += st.Warn.Render(fmt.Sprintf("%7s", t.Health))
	}
	name := render.Sanitize(t.Name)
	if t.Family != "" {
		name += st.Dim.Render("@" + render.Sanitize(shortFamily(t.Family)))
	}
	if t.Pool != "" && !strings.HasSuffix(t.Name, "/"+t.Pool) {
		name += st.Dim.Render("/" + render.Sanitize(t.Pool))
	}
	if len(t.Aliases) > 0 {
		name += st.Dim.Render(" " + render.Sanitize(strings.Join(t.Aliases, " ")))
	}
	cur := " "
	if sel {
		cur = st.Accent.Render("›")
	}
	left := cur + healthDot(st, t.Health) + " "
	nw := w - ansi.StringWidth(left) - ansi.StringWidth(right) - 1
	if nw < 4 {
		nw = 4
	}
	if sel && focused {
		name = st.Selected.Render(ansi.Strip(ansi.Truncate(name, nw, "…")))
	}
	return left + fit(name, nw) + " " + right
}

// ---- capability tree ----

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

// capsPane is the selected target's capability tree.
type capsPane struct {
	key       string
	open      map[string]bool
	rows      []capRow
	sel, off  int
	filter    lineEdit
	filtering bool
	consumed  bool // consumed section unfolded
	canBTSP   bool // a family seed is available
}

func newCapsPane() capsPane { return capsPane{open: map[string]bool{}} }

// rebuild recomputes the rows of t's tree.
func (p *capsPane) rebuild(t *Target, providers func(method string) []string) {
	keepKind, keepText := rowDomain, ""
	if p.sel >= 0 && p.sel < len(p.rows) {
		keepKind, keepText = p.rows[p.sel].kind, p.rowName(t, p.rows[p.sel])
	}
	p.rows = p.rows[:0]
	if t == nil {
		return
	}
	pat := strings.TrimSpace(p.filter.String())
	for di, d := range t.Tree {
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
	if t.Caps != nil && len(t.Caps.Consumed) > 0 && pat == "" {
		p.rows = append(p.rows, capRow{kind: rowConsumedHeader})
		if p.consumed {
			for _, c := range t.Caps.Consumed {
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

func (p *capsPane) rowName(t *Target, r capRow) string {
	if t == nil {
		return ""
	}
	switch r.kind {
	case rowDomain:
		if r.domain < len(t.Tree) {
			return t.Tree[r.domain].Name
		}
	case rowMethod:
		if r.domain < len(t.Tree) && r.method < len(t.Tree[r.domain].Methods) {
			return t.Tree[r.domain].Methods[r.method].Name
		}
	}
	return r.text
}

// selectedMethod returns the method under the cursor, if any.
func (p *capsPane) selectedMethod(t *Target) *capability.Method {
	if t == nil || p.sel < 0 || p.sel >= len(p.rows) {
		return nil
	}
	r := p.rows[p.sel]
	if r.kind != rowMethod || r.domain >= len(t.Tree) || r.method >= len(t.Tree[r.domain].Methods) {
		return nil
	}
	return &t.Tree[r.domain].Methods[r.method]
}

func (p *capsPane) move(n int) {
	p.sel = min(max(p.sel+n, 0), len(p.rows)-1)
}

// title is the identity line of the pane.
func capsTitle(st *styles, t *Target) (string, string) {
	if t == nil {
		return "Capabilities", ""
	}
	parts := []string{render.Sanitize(t.Name)}
	if v := t.Version(); v != "" {
		parts[0] += " " + render.Sanitize(v)
	}
	if t.Identity != nil && t.Identity.Domain != "" {
		parts = append(parts, render.Sanitize(t.Identity.Domain))
	}
	if t.Level > 0 {
		parts = append(parts, fmt.Sprintf("L%d", t.Level))
	}
	if t.Caps != nil {
		switch t.Caps.Signature.State {
		case capability.Verified:
			parts = append(parts, "signed ✓")
		case "", "unsigned", "absent":
		default:
			parts = append(parts, "signature "+render.Sanitize(string(t.Caps.Signature.State))+" ✗")
		}
	}
	weak := t.weakSession()
	switch ts := (*capability.TransportSecurity)(nil); {
	case weak != "" && !t.Session.BTSP:
		parts = append(parts, "cleartext, BTSP skipped")
	case weak != "":
		parts = append(parts, "BTSP "+weak)
	case t.BTSP:
		parts = append(parts, "BTSP")
	case t.Caps != nil && t.Caps.TransportSecurity != nil:
		ts = t.Caps.TransportSecurity
		if ts.BTSPServerAvailable != nil && *ts.BTSPServerAvailable {
			parts = append(parts, "BTSP optional")
		} else {
			parts = append(parts, "cleartext")
		}
	}
	var right []string
	if weak != "" {
		// The title (which says the word) is drawn in the title's style:
		// the styled marker is here.
		right = append(right, st.Err.Render("⚿!"))
	}
	if t.Caps != nil {
		right = append(right, st.Dim.Render(fmt.Sprintf("%d methods", len(t.Caps.Methods))))
	}
	return strings.Join(parts, " · "), strings.Join(right, " ")
}

func costText(c *capability.Cost) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.CPU != "" {
		parts = append(parts, "cpu "+c.CPU)
	}
	if c.LatencyMS != nil {
		parts = append(parts, fmt.Sprintf("~%g ms", *c.LatencyMS))
	}
	if c.MemoryBytes != nil {
		parts = append(parts, fmt.Sprintf("mem %s", fmtBytesF(*c.MemoryBytes)))
	}
	if c.GPUEligible != nil && *c.GPUEligible {
		parts = append(parts, "gpu")
	}
	return strings.Join(parts, " ")
}

func fmtBytesF(f float64) string {
	switch {
	case f >= 1<<20:
		return fmt.Sprintf("%.0f MiB", f/(1<<20))
	case f >= 1<<10:
		return fmt.Sprintf("%.0f KiB", f/(1<<10))
	}
	return fmt.Sprintf("%.0f B", f)
}

func (p *capsPane) View(st *styles, t *Target, w, h int, focused bool) []string {
	var out []string
	if p.filtering || !p.filter.Empty() {
		out = append(out, st.Accent.Render("/ ")+p.filter.View(w-2, p.filtering, st, -1))
	}
	if t == nil {
		return append(out, "", st.Dim.Render("  Select a target (⏎ in Targets)."))
	}
	if t.Tree == nil {
		out = append(out, "")
		switch {
		case t.Kind == "tarpc":
			out = append(out, st.Dim.Render("  A binary tarpc sidecar: listed, never spoken to."))
		case t.BTSP && p.canBTSP && t.Err == "":
			out = append(out, st.Info.Render("  This socket demands a BTSP handshake: asking it with the family seed…"))
		case t.BTSP && p.canBTSP:
			out = append(out, st.Warn.Render("  This socket demands a BTSP handshake, which failed."))
		case t.BTSP:
			out = append(out, st.Warn.Render("  This socket demands a BTSP handshake before JSON-RPC."),
				st.Dim.Render("  Set FAMILY_SEED (or --family-seed-file) to reach it."))
		case t.Health == HealthUnknown:
			out = append(out, st.Dim.Render("  Probing…"))
		default:
			out = append(out, st.Dim.Render("  No capabilities known."))
		}
		if t.Err != "" {
			out = append(out, "  "+st.Err.Render(render.Sanitize(t.Err)))
		}
		if t.Endpoint != "" {
			out = append(out, "", st.Dim.Render("  endpoint ")+render.Sanitize(t.Endpoint))
		}
		return out
	}
	// Details of the selected method at the bottom.
	var detail []string
	if m := p.selectedMethod(t); m != nil && h >= 8 {
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
	}
	avail := h - len(out) - len(detail)
	p.off = scrollInto(p.off, p.sel, avail, len(p.rows))
	for i := p.off; i < len(p.rows) && i < p.off+avail; i++ {
		out = append(out, p.row(st, t, p.rows[i], w, i == p.sel, focused))
	}
	for len(out) < h-len(detail) {
		out = append(out, "")
	}
	return append(out, detail...)
}

func (p *capsPane) row(st *styles, t *Target, r capRow, w int, sel, focused bool) string {
	cur := " "
	if sel {
		cur = st.Accent.Render("›")
	}
	var left, right string
	switch r.kind {
	case rowDomain:
		d := t.Tree[r.domain]
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
		m := t.Tree[r.domain].Methods[r.method]
		left = "    " + render.Sanitize(m.Short)
		if sel && focused {
			left = "    " + st.Selected.Render(render.Sanitize(m.Short))
		}
		right = st.Dim.Render(costText(m.Cost))
		if len(m.Prerequisites) > 0 {
			right = st.Dim.Render("⤷ ") + right
		}
	case rowConsumedHeader:
		arrow := "▸ "
		if p.consumed {
			arrow = "▾ "
		}
		left = arrow + st.Title.Render("consumed capabilities")
		right = st.Dim.Render(fmt.Sprint(len(t.Caps.Consumed)))
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
