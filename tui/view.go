package tui

import (
	"fmt"
	"runtime/debug"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

const composerH = 5

// layout computes where each visible pane is drawn, and tells those panes
// their size.
func (m *model) layout() {
	m.pc.screenW, m.pc.screenH = m.w, m.h
	m.rects = map[paneID]rect{}
	w, h := m.w, m.h
	if w < 20 || h < 8 {
		return
	}
	defer func() {
		for p, r := range m.rects {
			m.panes[p].SetSize(r.w, r.h)
		}
		m.overlay.SetSize(w, h-2)
		m.msgBox.SetSize(w, h-2)
	}()
	bodyY, bodyH := 1, h-2
	full := rect{0, bodyY, w, bodyH}
	focus := m.pc.focus
	if m.zoom || m.specs[focus].whole {
		m.rects[focus] = full
		return
	}
	if m.pc.narrow() {
		switch focus {
		case pComposer, pResponse:
			m.rects[pComposer] = rect{0, bodyY, w, composerH}
			m.rects[pResponse] = rect{0, bodyY + composerH, w, bodyH - composerH}
		default:
			m.rects[focus] = full
		}
		return
	}
	// Wide: the targets run down the left, as wide as their rows want
	// (within a third of the screen, so names are whole); the capability
	// tree and the side pane share the top right; the composer and the
	// response fill the rest below them; while the composer or the
	// response has the keyboard, the response takes more of the height.
	// From 180 columns the side pane runs down the right edge instead, as
	// long as the screen.
	tw := m.list().wantWidth()
	if tw == 0 {
		tw = 46 // the empty state's words
	}
	tw = min(max(tw, 28), min(w/3, 60))
	share := 40
	if focus == pComposer || focus == pResponse {
		share = 30
	}
	topH := max((bodyH-composerH)*share/100, 8)
	respH := bodyH - composerH - topH
	x, rw := tw, w-tw
	sw := min(max(rw*2/5, 28), 56)
	m.rects[pTargets] = rect{0, bodyY, tw, bodyH}
	if w >= 180 {
		rw -= sw
		m.rects[m.side] = rect{w - sw, bodyY, sw, bodyH}
		m.rects[pCaps] = rect{x, bodyY, rw, topH}
	} else {
		m.rects[pCaps] = rect{x, bodyY, rw - sw, topH}
		m.rects[m.side] = rect{x + rw - sw, bodyY, sw, topH}
	}
	m.rects[pComposer] = rect{x, bodyY + topH, rw, composerH}
	m.rects[pResponse] = rect{x, bodyY + topH + composerH, rw, respH}
}

// View draws the screen.
func (m *model) View() (v tea.View) {
	defer func() {
		if r := recover(); r != nil {
			m.crashed = writeCrash(m.pc.cfg.CrashDir, r, debug.Stack())
			if m.quit != nil {
				go m.quit()
			}
			v = tea.NewView("primalscope crashed; report: " + m.crashed)
		}
	}()
	v = tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "primalscope"
	return v
}

// render draws the whole screen as a string (View wraps it): the header,
// the panes in their places (or the help overlay), the status bar.
func (m *model) render() string {
	m.pc.drawing = true
	defer func() { m.pc.drawing = false }()
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.w < 20 || m.h < 8 {
		return fit("primalscope: terminal too small", m.w)
	}
	if m.rects == nil {
		m.layout()
	}
	lines := make([]string, m.h)
	lines[0] = m.header()
	lines[m.h-1] = m.statusBar()
	if m.overlay.shown {
		copy(lines[1:], strings.Split(m.overlay.View(), "\n"))
		return joinLines(lines)
	}
	if m.msgBox.shown {
		copy(lines[1:], strings.Split(m.msgBox.View(), "\n"))
		return joinLines(lines)
	}
	// Draw each pane into its rectangle; panes never overlap.
	type drawn struct {
		r     rect
		lines []string
	}
	ds := make([]drawn, 0, len(m.rects))
	for p, r := range m.rects {
		ds = append(ds, drawn{r, strings.Split(m.panes[p].View(), "\n")})
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].r.x < ds[j].r.x })
	for y := 1; y < m.h-1; y++ {
		var sb strings.Builder
		x := 0
		for _, d := range ds {
			if y < d.r.y || y >= d.r.y+d.r.h {
				continue
			}
			if d.r.x > x {
				sb.WriteString(strings.Repeat(" ", d.r.x-x))
			}
			sb.WriteString(d.lines[y-d.r.y])
			x = d.r.x + d.r.w
		}
		if x < m.w {
			sb.WriteString(strings.Repeat(" ", m.w-x))
		}
		lines[y] = sb.String()
	}
	return joinLines(lines)
}

type tab struct {
	p      paneID
	label  string
	x0, x1 int // columns on the header line
}

// tabs are the pane tabs the header shows on narrow screens, with where
// they are drawn (for mouse clicks): each pane's focus key and its word.
func (m *model) tabs() []tab {
	x := 1 + len("primalscope")
	if m.pc.cfg.Title != "" {
		x += 1 + ansi.StringWidth(m.pc.st.InfoBadge.Render(render.Sanitize(m.pc.cfg.Title)))
	}
	x++ // the space before the first tab
	var out []tab
	for _, p := range m.tabOrder() {
		label := m.specs[p].tab
		if k := helpKey(m.pc.keys.focusKey(p)); k != "" {
			label = k + " " + label
		}
		w := ansi.StringWidth(label)
		out = append(out, tab{p: p, label: label, x0: x, x1: x + w})
		x += w + 1
	}
	return out
}

func (m *model) header() string {
	st, pc := m.pc.st, m.pc
	live, stale, down := m.list().counts()
	compact := pc.narrow() && !m.zoom && m.w < 100
	sep := st.Dim.Render(" · ")
	words := [...]string{"live", "stale", "down", "asking"}
	if compact { // ● 13 ◌ 2 ✕ 1 ? 1
		sep = " "
		words = [...]string{"●", "◌", "✕", "?"}
	}
	count := func(n int, w string) string {
		if compact {
			return w + fmt.Sprint(n)
		}
		return fmt.Sprintf("%d %s", n, w)
	}
	right := st.OK.Render(count(live, words[0]))
	if stale > 0 {
		right += sep + st.Warn.Render(count(stale, words[1]))
	}
	if down > 0 {
		right += sep + st.Err.Render(count(down, words[2]))
	}
	if !compact {
		right += st.Dim.Render(fmt.Sprintf(" · %d ev/s", m.rate.rate(pc.now())))
	}
	asking := 0
	for _, p := range m.panes {
		if a, ok := p.(asker); ok {
			asking += a.pending()
		}
	}
	if asking > 0 {
		right += sep + st.Warn.Render(count(asking, words[3]))
	}
	right += " "
	rw := ansi.StringWidth(right)
	if rw > m.w/2 {
		right, rw = "", 0
	}
	// room is what the left side may take: it never runs into the counts.
	room := m.w - rw
	if rw > 0 {
		room -= 2
	}
	left := " " + st.Header.Render("primalscope")
	if pc.cfg.Title != "" {
		left += " " + st.InfoBadge.Render(render.Sanitize(pc.cfg.Title))
	}
	if pc.narrow() && !m.zoom {
		var tabs []string
		for _, tb := range m.tabs() {
			if tb.p == pc.focus || (tb.p == pResponse && pc.focus == pComposer) {
				tabs = append(tabs, st.Selected.Render(tb.label))
			} else {
				tabs = append(tabs, st.Dim.Render(tb.label))
			}
		}
		left += " " + strings.Join(tabs, " ")
	} else {
		left += m.whereFrom(room - ansi.StringWidth(left))
	}
	return fit(fit(left, room)+strings.Repeat(" ", m.w-room-rw)+right, m.w)
}

// whereFrom is the header's " · sockets: DIRS · family: F" in at most
// room cells: the family whole first, the directories cut to what is left
// (or left out).
func (m *model) whereFrom(room int) string {
	st, pc := m.pc.st, m.pc
	dirs := pc.cfg.SocketDirsShown
	if len(dirs) == 0 {
		dirs = []string{"(none)"}
	}
	fam := pc.cfg.Family
	if fam == "" {
		fam = "default"
	}
	famPart := st.Dim.Render(" · family: ") + render.Sanitize(fam)
	sockLabel := st.Dim.Render(" · sockets: ")
	sock := render.Sanitize(strings.Join(dirs, ", "))
	wd := ansi.StringWidth
	if n := room - wd(famPart) - wd(sockLabel); n >= min(wd(sock), 12) {
		return sockLabel + human.Truncate(sock, n) + famPart
	}
	return famPart
}

// statusBar is the status line and the focused pane's keys. A message too
// long for the line is cut, and says which key shows it whole.
func (m *model) statusBar() string {
	st, pc := m.pc.st, m.pc
	left := ""
	if pc.status != "" {
		// Only what the line can show is sanitized (on every frame).
		msg, style := " "+render.Sanitize(human.Clip(pc.status, m.w*4+16)), st.OK
		if pc.statusErr {
			msg, style = " ✗"+msg, st.Err
		}
		if ansi.StringWidth(msg)+1 > m.w {
			hint := ""
			if k := pc.keys.Message; k.Enabled() {
				hint = st.HelpKey.Render(k.Help().Key) + " " + st.HelpDesc.Render(k.Help().Desc)
			}
			msg = human.Truncate(msg, m.w-ansi.StringWidth(hint)-2)
			return fit(style.Render(msg)+"  "+hint, m.w)
		}
		left = style.Render(msg) + " "
	}
	m.bar.SetWidth(max(m.w-ansi.StringWidth(left)-1, 10))
	var km help.KeyMap = pc.keys
	if p := m.panes[pc.focus]; p != nil {
		km = p.KeyMap()
	}
	return fit(left+" "+m.bar.ShortHelpView(km.ShortHelp()), m.w)
}

// messageHint names the key that shows a message whole ("" when it is
// disabled).
func messageHint(k *KeyMap) string {
	if !k.Message.Enabled() {
		return ""
	}
	return k.Message.Help().Key + " " + k.Message.Help().Desc
}
