package tui

import (
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func eventsSpec() paneSpec {
	return paneSpec{action: "events", tab: "events", focus: b([]string{"e", "5"}, "e", "events"),
		make: func(id paneID, pc *programContext) pane { return newEventsPane(id, pc, pc.cfg.EventBuffer) }}
}

// tail is the scroll state shared by the events and trace panes: back is how
// many (matching) rows above the newest the view ends; 0 follows the stream.
type tail struct {
	back      int
	paused    bool
	pauseMark uint64 // total when paused
	filter    field
}

// tailAction is what a key asks of a live pane beyond moving its tail.
type tailAction int

const (
	tailNone tailAction = iota
	tailClear
	tailInspect
	tailUnknown // not a key the tails share
)

// onKey handles the keys the live panes share over n matching rows; total
// is how many rows the pane has received so far.
func (t *tail) onKey(kp tea.KeyPressMsg, k *KeyMap, n int, total uint64) tailAction {
	switch {
	case key.Matches(kp, k.Up):
		t.back = min(t.back+1, n)
	case key.Matches(kp, k.Down):
		tailScroll(t, 1)
	case key.Matches(kp, k.PageUp):
		t.back = min(t.back+10, n)
	case key.Matches(kp, k.PageDown):
		tailScroll(t, 10)
	case key.Matches(kp, k.Top):
		t.back = n
	case key.Matches(kp, k.Bottom):
		t.back = 0
		t.paused = false
	case key.Matches(kp, k.Pause):
		t.paused = !t.paused
		if t.paused {
			t.pauseMark = total
		} else {
			t.back = 0
		}
	case key.Matches(kp, k.Filter):
		t.filter.active = true
	case key.Matches(kp, k.Clear):
		t.back = 0
		return tailClear
	case key.Matches(kp, k.Select):
		return tailInspect
	default:
		return tailUnknown
	}
	return tailNone
}

// typeFilter edits the tail's filter; a new filter shows the newest rows.
func (t *tail) typeFilter(msg tea.Msg, k *KeyMap) {
	if e := t.filter.Update(msg, k, true); e == editChanged || e == editBack {
		t.back = 0
	}
}

// walk calls f with the items of r that match, newest first, after
// skipping the skip newest of them, until f returns false.
func walk[T any](r *ring[T], match func(*T) bool, skip int, f func(i int, x *T) bool) {
	for i := r.Len() - 1; i >= 0; i-- {
		x := r.At(i)
		if !match(x) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		if !f(i, x) {
			return
		}
	}
}

// nth returns the skip-th newest item of r that matches, or nil.
func nth[T any](r *ring[T], match func(*T) bool, skip int) (found *T) {
	walk(r, match, skip, func(_ int, x *T) bool { found = x; return false })
	return found
}

// tailView draws a live pane's body over r in w×h: the filter, then the
// rows that match, newest at the bottom, ending t.back rows above the
// newest (only those that show are drawn); row draws the i-th item. none
// and filtered say why there is no row.
func tailView[T any](st *styles, t *tail, r *ring[T], w, h int, match func(*T) bool, row func(i int, x *T) string, none, filtered string) []string {
	var head []string
	if t.filter.active || !t.filter.Empty() {
		head = append(head, t.filter.view(st, "/ ", w))
	}
	avail := h - len(head)
	if avail <= 0 {
		return head
	}
	rows := make([]string, 0, avail)
	walk(r, match, t.back, func(i int, x *T) bool {
		rows = append(rows, row(i, x))
		return len(rows) < avail
	})
	return tailRows(st, head, rows, r.Len() == 0, t.back == 0, none, filtered)
}

// wheel scrolls the tail by d rows over n.
func (t *tail) wheel(d, n int) {
	if d < 0 {
		t.back = min(t.back-d, n)
	} else {
		tailScroll(t, d)
	}
}

// inspectKey is Select as the tails describe it.
func inspectKey(k *KeyMap) key.Binding {
	b := k.Select
	b.SetHelp(b.Help().Key, "inspect")
	return b
}

// eventsPane is the events/notifications/heartbeats tail over a bounded ring.
type eventsPane struct {
	paneBase
	tail
	ring    *ring[line]
	kind    EventKind // 0: all
	source  string    // "": all
	sources map[string]bool
	// dropped counts items lost before the ring (feed overflow, peers).
	dropped uint64
}

func newEventsPane(id paneID, pc *programContext, size int) *eventsPane {
	return &eventsPane{paneBase: paneBase{id: id, pc: pc}, ring: newRing[line](size), sources: map[string]bool{}}
}

// Typing reports whether the filter has the keyboard.
func (p *eventsPane) Typing() bool { return p.filter.active }

// KeyMap is the status bar's keys.
func (p *eventsPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Pause, k.KindCycle, k.SrcCycle, k.Filter, inspectKey(k), k.focusKey(pTrace), k.Quit}
}

// Update appends what live targets push, and handles the pane's keys and
// wheel.
func (p *eventsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg := msg.(type) {
	case liveMsg:
		for _, l := range msg.lines {
			p.Append(l)
		}
		p.dropped = msg.feedDropped
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.filter.active {
			p.typeFilter(msg, p.keys())
			return p, nil
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p, p.onKey(kp)
		}
	case wheelMsg:
		p.wheel(msg.delta, p.ring.Len())
	}
	return p, nil
}

func (p *eventsPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	switch p.tail.onKey(kp, k, p.ring.Len(), p.ring.total) {
	case tailClear:
		p.ring.Clear()
	case tailInspect:
		return p.inspect()
	case tailUnknown:
		switch {
		case key.Matches(kp, k.KindCycle):
			p.cycleKind()
		case key.Matches(kp, k.SrcCycle):
			p.cycleSource()
		}
	}
	return nil
}

// inspect opens the bottom row (the newest, or the one scrolled to) in the
// response viewer.
func (p *eventsPane) inspect() tea.Cmd {
	e := p.at(p.back)
	if e == nil {
		return nil
	}
	a := &answer{title: fmt.Sprintf("%s %s · %s · %s", e.kind, e.title, e.Source, e.Time.Format("15:04:05.000")), result: e.data, outcome: "ok", size: len(e.data)}
	return openAnswer(p.pc, a)
}

// openAnswer shows a in the response viewer (focusing it on narrow
// screens, where it would not show).
func openAnswer(pc *programContext, a *answer) tea.Cmd {
	a.seq = pc.nextSeq()
	var cmd tea.Cmd
	if pc.narrow() {
		cmd = pc.do(focusMsg{pResponse})
	}
	return tea.Batch(cmd, pc.safe(func() tea.Msg { return answerMsg(a) }))
}

// Append adds an event; while paused and scrolled, the view stays put.
func (p *eventsPane) Append(e line) {
	p.ring.Append(e)
	p.sources[e.Source] = true
	if p.paused || p.back > 0 {
		p.back++
	}
}

func (p *eventsPane) match(e *line) bool {
	if p.kind != 0 && e.kind != p.kind {
		return false
	}
	if p.source != "" && e.Source != p.source {
		return false
	}
	if f := p.filter.String(); f != "" {
		d := e.data
		if len(d) > 512 {
			d = d[:512]
		}
		return containsFold(e.Source, f) || containsFold(e.kind.String(), f) || containsFold(e.title, f) || containsFold(string(d), f)
	}
	return true
}

// containsFold reports whether sub is in s, ignoring ASCII case, without
// allocating (the tail filter runs over the ring on every frame).
func containsFold(s, sub string) bool {
	n := len(sub)
	if n == 0 {
		return true
	}
	for i := 0; i+n <= len(s); i++ {
		if strings.EqualFold(s[i:i+n], sub) {
			return true
		}
	}
	return false
}

// at returns the back-th newest event that matches the filters.
func (p *eventsPane) at(back int) *line { return nth(p.ring, p.match, back) }

func (p *eventsPane) cycleKind() {
	p.kind++
	if p.kind > EvInvalid {
		p.kind = 0
	}
	p.back = 0
}

func (p *eventsPane) cycleSource() {
	var ss []string
	for s := range p.sources {
		ss = append(ss, s)
	}
	sort.Strings(ss)
	ss = append([]string{""}, ss...)
	for i, s := range ss {
		if s == p.source {
			p.source = ss[(i+1)%len(ss)]
			break
		}
	}
	p.back = 0
}

func (p *eventsPane) titles(st *styles) (string, string) {
	f := "all"
	if p.kind != 0 {
		f = p.kind.String()
	}
	if p.source != "" {
		f += " · " + render.Sanitize(p.source)
	}
	t := "Events · " + f
	var right []string
	if p.paused {
		right = append(right, st.Warn.Render(fmt.Sprintf("paused +%d", p.ring.total-p.pauseMark)))
	}
	if d := p.ring.dropped + p.dropped; d > 0 {
		right = append(right, st.Warn.Render(fmt.Sprintf("dropped %d", d)))
	}
	right = append(right, st.Dim.Render(fmt.Sprint(p.ring.Len())))
	return t, strings.Join(right, " ")
}

// View draws the visible rows only: it walks back from the newest event.
func (p *eventsPane) View() string {
	title, right := p.titles(p.pc.st)
	w, h := p.inner()
	return p.box(title, right, p.rows(p.pc.st, w, h))
}

func (p *eventsPane) rows(st *styles, w, h int) []string {
	k := p.keys()
	return tailView(st, &p.tail, p.ring, w, h, p.match, func(_ int, e *line) string { return p.row(st, e, w) },
		" waiting for events…", " nothing matches the filter ("+joinHints(", ", hint(k.KindCycle, "kind"), hint(k.SrcCycle, "source"), hint(k.Filter, "text"))+")")
}

func (p *eventsPane) row(st *styles, e *line, w int) string {
	ts := st.Dim.Render(e.Time.Format("15:04:05"))
	src := render.Sanitize(e.Source)
	var mark, body string
	switch e.kind {
	case EvHeartbeat:
		mark = st.Heartbeat.Render("♥")
		body = st.Heartbeat.Render(render.Sanitize(e.title))
	case EvNotification:
		mark = st.Notify.Render("◆")
		body = st.Notify.Render(render.Sanitize(e.title))
	case EvEvent:
		mark = st.Event.Render("◇")
		body = st.Event.Render(render.Sanitize(e.title))
	case EvRequest:
		mark = st.Warn.Render("?")
		body = st.Warn.Render(render.Sanitize(e.title))
		if e.answered {
			body += st.Dim.Render(" (answered)")
		}
	case EvNote:
		mark = st.Dim.Render("·")
		body = st.Dim.Render(render.Sanitize(e.title))
	default:
		mark = st.Err.Render("!")
		body = st.Err.Render(render.Sanitize(e.title))
	}
	out := ts + " " + mark + " " + st.Accent.Render(src) + " " + body
	if len(e.data) > 0 && len(e.data) < maxEventData && w > 40 {
		out += " " + st.Dim.Render(render.Sanitize(human.Clip(string(e.data), 512)))
	}
	return out
}

func tailScroll(t *tail, n int) {
	t.back -= n
	if t.back < 0 {
		t.back = 0
	}
}

// tailRows finishes a live pane: rows were collected newest first and are
// shown newest at the bottom; with none, the pane says why (nothing yet, or
// nothing matching the filter at the live end).
func tailRows(st *styles, head, rows []string, empty, atLiveEnd bool, none, filtered string) []string {
	switch {
	case len(rows) > 0:
	case empty:
		rows = append(rows, st.Dim.Render(none))
	case atLiveEnd:
		rows = append(rows, st.Dim.Render(filtered))
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return append(head, rows...)
}
