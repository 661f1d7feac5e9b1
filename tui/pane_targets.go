package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func targetsSpec() paneSpec {
	return paneSpec{action: "targets", tab: "targets", focus: b([]string{"1"}, "1", "targets"),
		make: func(id paneID, pc *programContext) pane { return newTargetsPane(id, pc) }}
}

type targetRow struct {
	header string // a group header when not empty
	key    string
}

// targetsPane lists the targets (programContext.targets), filtered (fuzzy)
// and grouped. Moving the cursor makes the target under it current.
type targetsPane struct {
	paneBase
	rows     []targetRow
	sel, off int
	filter   field
	groupBy  int // 0 none, 1 source, 2 family
	// live, stale and down count the targets by health (set by rebuild).
	live, stale, down int
	// all is every target in list order, valid while allValid (see
	// sorted); matches is the filtered list (its memory is reused).
	all, matches []sortKey
	allValid     bool
	allGroup     int // the grouping all is sorted for
	// want is how wide the pane would like to be (set by count).
	want int
	// settling numbers the cursor's moves: the target under it becomes
	// current once it rests (settleMsg of the last move); unsettled says
	// one waits.
	settling  int
	unsettled bool
	// drawn is the rows that show, drawn by fit, by their place on
	// screen (see cachedRow): a frame (a flood on the events tail redraws
	// the screen 30 times a second) reuses them, and fit draws again only
	// the rows whose target, size, cursor or focus changed.
	drawn []drawnRow
}

// drawnRow is a row as drawn: row's output for these arguments.
type drawnRow struct {
	t            *target
	st           *styles
	w            int
	sel, focused bool
	s            string
}

// selectSettle is how long the cursor rests on a target before it becomes
// the current one: stepping through a list does not make (and, for a BTSP
// target, dial and describe) every target on the way current.
const selectSettle = 150 * time.Millisecond

// settleMsg says the cursor may have come to rest after move n.
type settleMsg struct{ n int }

var groupNames = [...]string{"", "source", "family"}

func newTargetsPane(id paneID, pc *programContext) *targetsPane {
	return &targetsPane{paneBase: paneBase{id: id, pc: pc}}
}

// Typing reports whether the filter has the keyboard.
func (p *targetsPane) Typing() bool { return p.filter.active }

// KeyMap is the status bar's keys.
func (p *targetsPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Select, k.Filter, k.Group, k.NextPane, k.focusKey(pEvents), k.Quit}
}

// Update handles the pane's keys, clicks and wheel, and rebuilds the rows
// when the targets change; then fits the scroll to the rows and draws
// those that show (View changes nothing).
func (p *targetsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

// SetSize records the pane's size and fits the scroll to it.
func (p *targetsPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit keeps the cursor's row among those the list has room for (the
// pane's less the filter's), and draws the rows that show (cachedRow).
func (p *targetsPane) fit() {
	w, h := p.inner()
	if h <= 0 || len(p.pc.targets) == 0 || len(p.rows) == 0 {
		return
	}
	avail := h - p.headRows()
	p.off = scrollInto(p.off, p.sel, avail, len(p.rows))
	if avail > len(p.drawn) {
		p.drawn = append(p.drawn, make([]drawnRow, avail-len(p.drawn))...)
	}
	st, focused := p.pc.st, p.focused()
	for i := p.off; i < len(p.rows) && i < p.off+avail; i++ {
		if k := p.rows[i].key; k != "" {
			t, sel := p.pc.targets[k], i == p.sel
			if d := &p.drawn[i-p.off]; t != nil && !d.is(t, st, w, sel, focused) { // nil: gone, its targetsMsg to come
				*d = drawnRow{t: t, st: st, w: w, sel: sel, focused: focused, s: p.row(st, t, w, sel, focused)}
			}
		}
	}
}

// headRows is how many rows are above the list: the filter's.
func (p *targetsPane) headRows() int {
	if p.filter.active || !p.filter.Empty() {
		return 1
	}
	return 0
}

func (p *targetsPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case targetsMsg:
		if msg.reorder || len(p.rows) == 0 {
			p.allValid = false
			p.rebuild()
		} else {
			p.count()
		}
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.filter.active {
			return p.typeFilter(msg)
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p.onKey(kp)
		}
	case clickMsg:
		row := msg.y - p.headRows()
		i := p.off + row
		if msg.button == tea.MouseLeft && row >= 0 && i < len(p.rows) && p.rows[i].key != "" {
			p.sel = i
			p.settling, p.unsettled = p.settling+1, false
			return p.pc.do(selectMsg{key: p.rows[i].key})
		}
	case wheelMsg:
		p.move(msg.delta)
		return p.moved()
	case settleMsg:
		if msg.n == p.settling && p.unsettled {
			p.unsettled = false
			return p.pc.do(selectMsg{key: p.selectedKey()})
		}
	}
	return nil
}

func (p *targetsPane) typeFilter(msg tea.Msg) tea.Cmd {
	switch p.filter.Update(msg, p.keys(), true) {
	case editChanged:
		// The cursor stays on its target while it matches, else goes
		// to the best match.
		p.rebuildOn(p.selectedKey(), false)
	case editBack:
		// Cancelled: the cursor goes back to the current target (typing
		// moved it to the first match without making that current).
		p.rebuildOn(p.pc.current, true)
	case editDone:
		// The filter is done: the target under the cursor becomes the
		// current one, as after a move (not on every keystroke, which
		// would describe targets the user is only typing past).
		p.settling, p.unsettled = p.settling+1, false
		return p.pc.do(selectMsg{key: p.selectedKey()})
	}
	return nil
}

func (p *targetsPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	if d, ok := moveBy(kp, k, len(p.rows)); ok {
		p.move(d)
		return p.moved()
	}
	switch {
	case key.Matches(kp, k.Select), key.Matches(kp, k.Unfold):
		p.settling, p.unsettled = p.settling+1, false
		cmd := p.pc.do(selectMsg{key: p.selectedKey(), listen: true})
		return tea.Batch(cmd, p.pc.do(focusMsg{pCaps}))
	case key.Matches(kp, k.Filter):
		p.filter.active = true
		return nil
	case key.Matches(kp, k.Group):
		p.groupBy = (p.groupBy + 1) % len(groupNames)
		p.rebuild()
		if p.groupBy > 0 {
			p.pc.setInfo("grouped by " + groupNames[p.groupBy])
		} else {
			p.pc.setInfo("not grouped")
		}
	}
	return nil
}

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

// order calls yield with the listed targets' keys, top down, until it
// returns false.
func (p *targetsPane) order(yield func(string) bool) {
	for _, r := range p.rows {
		if r.key != "" && !yield(r.key) {
			return
		}
	}
}

// sortKey is a target's place in the list: its group, how well it matches
// the filter, its name and key (copied: comparing through the targets'
// pointers costs a cache miss each, a million times a sort). It holds no
// target: the sorted list outlives the snapshots it was made of (a state
// change keeps it), and held each target's first (a crowd of 2,000: 1 MB).
type sortKey struct {
	group     string
	score     int // best matches first: prefix, substring, alias or family, subsequence
	name, key string
	w         *filterWords // the target's (which a state change leaves alone)
}

// sorted is every target in list order without a filter, kept while
// targets only change state (the list order does not change with it).
func (p *targetsPane) sorted() []sortKey {
	if p.allValid && p.allGroup == p.groupBy {
		return p.all
	}
	p.all = p.all[:0]
	for _, t := range p.pc.targets {
		k := sortKey{name: t.Name, key: t.ID, w: t.wordsRef()}
		switch p.groupBy {
		case 1:
			k.group = "unknown source"
			if src := t.firstSource(); src != "" {
				k.group = src
			}
		case 2:
			k.group = "no family"
			if t.Family != "" {
				k.group = "family " + t.Family
			}
		}
		p.all = append(p.all, k)
	}
	slices.SortFunc(p.all, func(a, b sortKey) int {
		if c := strings.Compare(a.group, b.group); c != 0 {
			return c
		}
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	p.allValid, p.allGroup = true, p.groupBy
	return p.all
}

// rebuild recomputes the rows, keeping the selection on the same target,
// and the health counts the header shows. The unfiltered order is sorted
// once (again only when targets come, go or are renamed, or the grouping
// changes); a filter keeps the matches in that order, best matches first
// in each group, so a list of 10,000 refilters within a frame.
func (p *targetsPane) rebuild() { p.rebuildOn(p.selectedKey(), true) }

// rebuildOn is rebuild with the cursor on the target keep. When keep is
// not listed (it left, or the filter hides it), the cursor goes to the
// first row, or with neighbour to the row that took its place (the one
// before it at the end of the list).
func (p *targetsPane) rebuildOn(keep string, neighbour bool) {
	was := p.sel
	pat := strings.ToLower(strings.TrimSpace(p.filter.String()))
	p.count()
	ts := p.sorted()
	if pat != "" {
		p.matches = p.matches[:0]
		for _, k := range ts {
			w := k.w
			if !w.set { // worked out when first filtered, through the target it is of
				if t := p.pc.targets[k.key]; t != nil {
					w = t.words()
				}
			}
			if !fuzzyLower(w.all, pat) {
				continue
			}
			switch {
			case strings.HasPrefix(w.name, pat):
				k.score = 0
			case strings.Contains(w.name, pat):
				k.score = 1
			case strings.Contains(w.aliasesFamily, pat):
				k.score = 2
			default:
				k.score = 3
			}
			p.matches = append(p.matches, k)
		}
		slices.SortStableFunc(p.matches, func(a, b sortKey) int {
			if c := strings.Compare(a.group, b.group); c != 0 {
				return c
			}
			return a.score - b.score
		})
		ts = p.matches
	}
	p.rows = p.rows[:0]
	last := "\x00"
	for _, k := range ts {
		if p.groupBy != 0 && k.group != last {
			p.rows = append(p.rows, targetRow{header: k.group})
			last = k.group
		}
		p.rows = append(p.rows, targetRow{key: k.key})
	}
	p.sel = -1
	for i, r := range p.rows {
		if r.key != "" && r.key == keep {
			p.sel = i
			return
		}
	}
	if len(p.rows) == 0 {
		return
	}
	// Not listed: its neighbour (a row of the list, not a group header).
	i := min(max(was, 0), len(p.rows)-1)
	if !neighbour {
		i = 0
	}
	for j := i; j < len(p.rows); j++ {
		if p.rows[j].key != "" {
			p.sel = j
			return
		}
	}
	for j := i; j >= 0; j-- {
		if p.rows[j].key != "" {
			p.sel = j
			return
		}
	}
}

// settleNow is the target a resting cursor would make current ("" when
// none waits); the wait ends. The root asks it when the keyboard leaves
// the pane: what the user does next is about that target.
func (p *targetsPane) settleNow() string {
	if !p.unsettled {
		return ""
	}
	p.unsettled = false
	return p.selectedKey()
}

// moved makes the target under the cursor current once the cursor rests
// (at once while no timer may run: a test driving the model by hand).
func (p *targetsPane) moved() tea.Cmd {
	p.settling++
	if p.pc.ticks == nil || !p.pc.ticks() {
		return p.pc.do(selectMsg{key: p.selectedKey()})
	}
	p.unsettled = true
	n := p.settling
	return tea.Tick(selectSettle, func(time.Time) tea.Msg { return settleMsg{n: n} })
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

// count counts the targets by health (when only their states changed, the
// rows stay as they are).
func (p *targetsPane) count() {
	p.live, p.stale, p.down = 0, 0, 0
	p.want = 0
	for _, t := range p.pc.targets {
		p.want = max(p.want, t.rowW)
		switch t.health() {
		case discovery.StateLive:
			p.live++
		case discovery.StateStale:
			p.stale++
		case discovery.StateDead:
			p.down++
		}
	}
}

// rowWant is about how many cells a target's row needs to show all but
// its aliases (byte lengths: cheap enough for every target on every
// rebuild, and close enough for choosing the pane's width).
func rowWant(t *target) int {
	n := 3 + len(t.Name) + 1 + 3 + 3 + 7 // cursor and dot, name, gap, lock, level, latency
	if t.Family != "" {
		n += 1 + len(t.Family)
	}
	if t.Pool != "" && !strings.HasSuffix(t.Name, "/"+t.Pool) {
		n += 1 + len(t.Pool)
	}
	return n
}

// wantWidth is how wide the pane would like to be, borders included, to
// show every target's row whole but for its aliases (as of the last
// rebuild; 0 when there are no targets).
func (p *targetsPane) wantWidth() int {
	if p.want == 0 {
		return 0
	}
	return p.want + 2
}

// counts reports how many targets are live, stale and down (as of the last
// rebuild).
func (p *targetsPane) counts() (live, stale, down int) { return p.live, p.stale, p.down }

func healthDot(st *styles, h discovery.State) string {
	switch h {
	case discovery.StateLive:
		return st.OK.Render("●")
	case discovery.StateStale:
		return st.Warn.Render("◌")
	case discovery.StateDead:
		return st.Err.Render("✕")
	}
	return st.Dim.Render("○")
}

// View draws the list: the visible rows only.
func (p *targetsPane) View() string {
	st := p.pc.st
	title := "Targets"
	if p.groupBy > 0 {
		title += " · by " + groupNames[p.groupBy]
	}
	return p.box(title, st.Dim.Render(fmt.Sprintf("%d", len(p.pc.targets))), p.body())
}

func (p *targetsPane) body() []string {
	st := p.pc.st
	w, h := p.inner()
	var out []string
	if p.filter.active || !p.filter.Empty() {
		out = append(out, p.filter.view(st, "/ ", w))
	}
	if len(p.pc.targets) == 0 {
		out = append(out, "", st.Warn.Render(" No targets found."), "", st.Dim.Render(" Looked in:"))
		dirs := p.pc.cfg.LookedIn
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
	// fit scrolled the list (off); clamped here for drawing only.
	off := scrollInto(p.off, p.sel, avail, len(p.rows))
	for i := off; i < len(p.rows) && i < off+avail; i++ {
		r := p.rows[i]
		if r.header != "" {
			out = append(out, st.Title.Render("▾ "+render.Sanitize(r.header)))
			continue
		}
		out = append(out, p.cachedRow(i-off, st, p.pc.targets[r.key], w, i == p.sel, p.focused()))
	}
	return out
}

// is reports whether d is row's output for these arguments (a target is
// a snapshot: a change makes a new one, so the same pointer draws the
// same row).
func (d *drawnRow) is(t *target, st *styles, w int, sel, focused bool) bool {
	return t != nil && d.t == t && d.st == st && d.w == w && d.sel == sel && d.focused == focused
}

// cachedRow is row as fit drew it at screen row at, else (what it draws
// from changed since: a theme, the focus) drawn now, and not kept: View
// keeps nothing.
func (p *targetsPane) cachedRow(at int, st *styles, t *target, w int, sel, focused bool) string {
	if at < len(p.drawn) && p.drawn[at].is(t, st, w, sel, focused) {
		return p.drawn[at].s
	}
	return p.row(st, t, w, sel, focused)
}

// row draws one target in w cells: the cursor and health dot, the name
// with its family, pool and aliases, and on the right the lock, the level
// and the latency (or the health word). The name gets the room: when the
// row is too narrow, the aliases go first, then the level, the latency,
// the pool and the family (cut, then dropped); the name itself is cut only
// when even the name and the lock do not fit.
func (p *targetsPane) row(st *styles, t *target, w int, sel, focused bool) string {
	lock := ""
	switch {
	case t.weakSession() != "":
		// Not the plain lock: the session does not protect what it seems to.
		lock = st.Err.Render("⚿! ")
	case t.BTSP() && t.refusal != nil:
		// Its calls are refused before anything is sent (no seed bound to
		// its family): not the lock a seed opens.
		lock = st.Err.Render("⚿✕ ")
	case t.BTSP():
		lock = st.Warn.Render("⚿ ")
	}
	if t.ForeignOwner() != nil {
		// Another local user serves it: probed only, calls are refused.
		lock = st.Err.Render("⚠ ") + lock
	}
	level := ""
	if t.Level > 0 {
		level = st.Dim.Render(fmt.Sprintf("L%d ", t.Level))
	}
	var lat string
	switch {
	case t.Kind == discovery.KindTarpc:
		lat = st.Dim.Render("  tarpc")
	case t.health() == discovery.StateLive:
		lat = st.Dim.Render(fmt.Sprintf("%7s", human.Duration(t.Latency())))
	case t.health() == discovery.StateUnknown:
		lat = st.Dim.Render("    …  ")
	default:
		lat = st.Warn.Render(fmt.Sprintf("%7s", healthWord(t.health())))
	}
	name := render.Sanitize(t.Name)
	var fam, pool, alias string
	if t.Family != "" {
		fam = "@" + render.Sanitize(t.Family)
	}
	if t.Pool != "" && !strings.HasSuffix(t.Name, "/"+t.Pool) {
		pool = "/" + render.Sanitize(t.Pool)
	}
	if len(t.Aliases) > 0 {
		alias = " " + render.Sanitize(strings.Join(t.Aliases, " "))
	}
	cur := " "
	if sel {
		cur = st.Accent.Render("›")
	}
	left := cur + healthDot(st, t.health()) + " "
	wd := ansi.StringWidth
	// over is how many cells the row is too wide by.
	over := func() int {
		right := wd(lock) + wd(level) + wd(lat)
		gap := 0
		if right > 0 {
			gap = 1
		}
		return wd(left) + wd(name) + wd(fam) + wd(pool) + wd(alias) + gap + right - w
	}
	alias = shrink(alias, over(), 4)
	if over() > 0 {
		level = ""
	}
	if over() > 0 {
		lat = ""
	}
	pool = shrink(pool, over(), 3)
	fam = shrink(fam, over(), 3)
	right := lock + level + lat
	nw := w - wd(left) - wd(right)
	if right != "" {
		nw--
	}
	if nw < 4 {
		right, nw = "", w-wd(left)
	}
	label := name
	if more := fam + pool + alias; more != "" {
		label += st.Dim.Render(more)
	}
	if sel && focused {
		label = st.Selected.Render(ansi.Strip(human.Truncate(label, nw)))
	}
	if right == "" {
		return left + fit(label, nw)
	}
	return left + fit(label, nw) + " " + right
}

// shrink cuts s by over cells (with an ellipsis), or drops it when fewer
// than keep cells would be left; s comes back whole when over <= 0.
func shrink(s string, over, keep int) string {
	if over <= 0 || s == "" {
		return s
	}
	n := ansi.StringWidth(s) - over
	if n < keep {
		return ""
	}
	return human.Truncate(s, n)
}
