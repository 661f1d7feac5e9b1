package tui

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func eventsSpec() paneSpec {
	return paneSpec{action: "events", tab: "events", focus: b([]string{"e", "5"}, "e", "events"),
		make: func(id paneID, pc *programContext) pane { return newEventsPane(id, pc, pc.cfg.EventBuffer) }}
}

// tail is the scroll state and the cursor shared by the events and trace
// panes. Rows are counted among those that match the filters, from the
// newest: back is how many are below the view's bottom, cur is the
// cursor's row counted up from the view's bottom. Unpaused with both 0,
// the view follows the stream with the cursor on the newest row; else it
// stays on the rows it shows as new ones arrive.
type tail struct {
	back, cur int
	paused    bool
	// newer counts the matching rows that arrived since the pause.
	newer int
	// avail and shown are the rows the view had room for and showed last
	// (keys move by them before the next frame); head is the rows above.
	avail, shown, head int
	filter             field
}

// tailAction is what a key asks of a live pane beyond moving its tail.
type tailAction int

const (
	tailNone tailAction = iota
	tailClear
	tailInspect
	tailUnknown // not a key the tails share
)

// far is further back than any ring holds (Top moves there; settle brings
// it back to the oldest row).
const far = 1 << 40

// following reports whether the view follows the stream.
func (t *tail) following() bool { return !t.paused && t.back == 0 && t.cur == 0 }

// sel is the cursor's row: how many matching rows are newer.
func (t *tail) sel() int { return t.back + t.cur }

// appended accounts for a new row (match says whether it passes the
// filters, asked only when the view does not follow): a view that does not
// follow keeps its rows, and the cursor its row.
func (t *tail) appended(match func() bool) {
	if t.following() || !match() {
		return
	}
	t.back++
	if t.paused {
		t.newer++
	}
}

// select puts the cursor on row s (counted from the newest), scrolling
// the view to show it.
func (t *tail) moveTo(s int) {
	s = max(s, 0)
	avail := max(t.avail, 1)
	switch {
	case s < t.back:
		t.back, t.cur = s, 0
	case s >= t.back+avail:
		t.back, t.cur = s-avail+1, avail-1
	default:
		t.cur = s - t.back
	}
}

// live goes back to the newest row and follows the stream.
func (t *tail) live() { t.back, t.cur, t.paused = 0, 0, false }

// onKey handles the keys the live panes share: the moving keys move the
// cursor (the pane settles it over its rows after).
func (t *tail) onKey(kp tea.KeyPressMsg, k *KeyMap) tailAction {
	if d, ok := moveBy(kp, k, far); ok {
		if key.Matches(kp, k.Bottom) {
			t.live()
		} else {
			t.moveTo(t.sel() - d) // rows count up from the newest
		}
		return tailNone
	}
	switch {
	case key.Matches(kp, k.Pause):
		t.paused = !t.paused
		if t.paused {
			t.newer = 0
		} else {
			t.live()
		}
	case key.Matches(kp, k.Filter):
		t.filter.active = true
	case key.Matches(kp, k.Clear):
		t.live()
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
		t.back, t.cur = 0, 0
	}
}

// click puts the cursor on the row drawn y rows below the top.
func (t *tail) click(y int) {
	if i := y - t.head; i >= 0 && i < t.shown {
		t.cur = t.shown - 1 - i
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

// settle fits the view and the cursor to the rows r holds that match: the
// view ends no further back than shows a full page of the oldest rows, and
// the cursor stays on its row, or the nearest one shown. It walks no
// further back than the view. n is the matching rows it counted (at most
// the view's bottom row back plus a page).
func settle[T any](t *tail, r *ring[T], match func(*T) bool) (n int) {
	avail := max(t.avail, 1)
	need := t.back + avail
	walk(r, match, 0, func(int, *T) bool { n++; return n < need })
	if n < need { // the oldest row is in the view (or above it)
		s := t.sel()
		t.back = max(n-avail, 0)
		t.cur = s - t.back
	}
	t.cur = max(min(t.cur, min(n-t.back, avail)-1), 0)
	return n
}

// fitTail fits a live pane's view to a body h rows high: the filter's
// row (when shown) above the rows, the view and the cursor settled over
// what matches (settle), and the rows that show counted (for keys and
// clicks before the next frame). Update and SetSize call it; tailView
// only draws what it left.
func fitTail[T any](t *tail, r *ring[T], h int, match func(*T) bool) {
	t.head = 0
	if t.filter.active || !t.filter.Empty() {
		t.head = 1
	}
	avail := h - t.head
	if avail <= 0 {
		t.shown = 0
		return
	}
	t.avail = avail
	n := settle(t, r, match)
	t.shown = max(min(n-t.back, avail), 0)
}

// tailView draws a live pane's body over r in w×h: the filter, then the
// rows that match, newest at the bottom, ending t.back rows above the
// newest (only those that show are drawn); row draws the i-th item, and
// cursor marks the cursor's row (the focused pane's). none and filtered
// say why there is no row. It changes nothing (fitTail fitted t).
func tailView[T any](st *styles, t *tail, r *ring[T], w, h int, match func(*T) bool, row func(i int, x *T) string, cursor bool, none, filtered string) []string {
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
		s := row(i, x)
		if cursor {
			mark := " "
			if len(rows) == t.cur {
				mark = st.Accent.Render("›")
			}
			s = mark + s
		}
		rows = append(rows, s)
		return len(rows) < avail
	})
	return tailRows(st, head, rows, r.Len() == 0, t.back == 0, none, filtered)
}

// wheel moves the cursor by d rows (down is newer).
func (t *tail) wheel(d int) { t.moveTo(t.sel() - d) }

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
	// feedLost counts events received and never shown (the feed was
	// full: the program could not keep up); peerLost counts pushes the
	// peers or their connections dropped (said by notes), never received.
	feedLost, peerLost uint64
	// mgen numbers the filters (kind, source, text) as they are now; a
	// line keeps whether it matched them (line.mgen), so a frame walks
	// the ring without matching every line again.
	mgen       uint32
	mKind      EventKind
	mSrc, mTxt string
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
// wheel; then fits the view to the rows that match.
func (p *eventsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

func (p *eventsPane) update(msg tea.Msg) tea.Cmd {
	p.syncFilter()
	switch msg := msg.(type) {
	case liveMsg:
		for _, l := range msg.lines {
			p.peerLost += l.lost
			p.Append(l)
		}
		p.feedLost = msg.feedDropped
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.filter.active {
			p.typeFilter(msg, p.keys())
			return nil
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p.onKey(kp)
		}
	case wheelMsg:
		p.wheel(msg.delta)
	case clickMsg:
		p.click(msg.y)
	}
	return nil
}

// SetSize records the pane's size and fits the view to it.
func (p *eventsPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit brings the matches up to the filters as they are now and fits the
// view and the cursor to the pane's rows (View changes neither).
func (p *eventsPane) fit() {
	p.syncFilter()
	if _, h := p.inner(); h > 0 {
		fitTail(&p.tail, p.ring, h, p.match)
	}
}

func (p *eventsPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	switch p.tail.onKey(kp, k) {
	case tailClear:
		p.ring.Clear()
	case tailInspect:
		settle(&p.tail, p.ring, p.match)
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

// inspect opens the event under the cursor in the response viewer, whole:
// its envelope (time, source, kind, name) and payload as JSON.
func (p *eventsPane) inspect() tea.Cmd {
	e := p.at(p.sel())
	if e == nil {
		return nil
	}
	doc := eventJSON(e)
	a := &answer{title: fmt.Sprintf("%s %s · %s · %s", e.kind, e.title, e.Source, e.Time.Format("15:04:05.000")), result: doc, outcome: "ok", size: len(doc)}
	return openAnswer(p.pc, a)
}

// eventJSON is an event whole as JSON (the envelope tail --json prints:
// source, time, kind, name, payload), its payload as kept (bounded by
// maxEventData): a payload that is not JSON (cut, or sent so) is given as
// a string, with "payload_cut" when it was cut. Peer text is escaped by
// the encoder and sanitized where the viewer draws it.
func eventJSON(e *line) []byte {
	ev := e.Event
	var cut bool
	if len(ev.Payload) > 0 && !json.Valid(ev.Payload) {
		cut = len(ev.Payload) >= maxEventData
		s, _ := json.Marshal(string(ev.Payload))
		ev.Payload = s
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage("null")
	}
	out := struct {
		events.Event
		Cut bool `json:"payload_cut,omitempty"`
	}{ev, cut}
	b, err := json.Marshal(out)
	if err != nil { // not reached: every field is valid JSON
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	}
	return b
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

// Append adds an event; while paused or scrolled, the view stays put.
func (p *eventsPane) Append(e line) {
	p.ring.Append(e)
	p.sources[e.Source] = true
	p.appended(func() bool { return p.match(p.ring.At(p.ring.Len() - 1)) })
}

// syncFilter starts a new generation of matches when the filters changed.
func (p *eventsPane) syncFilter() {
	if t := p.filter.String(); p.mgen == 0 || t != p.mTxt || p.kind != p.mKind || p.source != p.mSrc {
		p.mgen++
		p.mTxt, p.mKind, p.mSrc = t, p.kind, p.source
	}
}

// match reports whether e passes the filters (as of the last syncFilter),
// matching it once per generation.
func (p *eventsPane) match(e *line) bool {
	if e.mgen != p.mgen || p.mgen == 0 {
		e.mgen, e.mres = p.mgen, p.matchNow(e)
	}
	return e.mres
}

// matchShown is match for View: it keeps nothing (the rows a frame shows
// were matched by fit already).
func (p *eventsPane) matchShown(e *line) bool {
	if e.mgen == p.mgen && p.mgen != 0 {
		return e.mres
	}
	return p.matchNow(e)
}

func (p *eventsPane) matchNow(e *line) bool {
	if p.kind != 0 && e.kind != p.kind {
		return false
	}
	if p.source != "" && e.Source != p.source {
		return false
	}
	if f := p.mTxt; f != "" {
		d := e.data
		if len(d) > 512 {
			d = d[:512]
		}
		return containsFold(e.Source, f) || containsFold(e.kind.String(), f) || containsFold(e.title, f) || containsFold(string(d), f)
	}
	return true
}

// at returns the back-th newest event that matches the filters.
func (p *eventsPane) at(back int) *line { return nth(p.ring, p.match, back) }

func (p *eventsPane) cycleKind() {
	p.kind++
	if p.kind > EvInvalid {
		p.kind = 0
	}
	p.back, p.cur = 0, 0
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
	p.back, p.cur = 0, 0
}

func (p *eventsPane) titles(st *styles) (string, string) {
	t, right := p.titlesIn(st, 1<<20)
	return t, right
}

// titlesIn is the title and its right-hand note for a pane w cells wide
// inside: the note says the figures as fully as the room allows (the
// title gives way first, to "Events"), never cut.
func (p *eventsPane) titlesIn(st *styles, w int) (string, string) {
	f := "all"
	if p.kind != 0 {
		f = p.kind.String()
	}
	if p.source != "" {
		f += " · " + render.Sanitize(p.source)
	}
	t := "Events · " + f
	var head []string
	if p.paused {
		head = append(head, st.Warn.Render(fmt.Sprintf("paused +%d", p.newer)))
	}
	// Lost: never received, or received and never shown. Not a loss:
	// events older than the ring's window, shown in their time and let go.
	if d := p.feedLost + p.peerLost; d > 0 {
		head = append(head, st.Warn.Render(fmt.Sprintf("lost %d", d)))
	}
	kept, total := p.ring.Len(), p.ring.total
	var windows []string
	if p.ring.dropped > 0 {
		windows = []string{fmt.Sprintf("last %d of %d", kept, total), fmt.Sprintf("%d of %d", kept, total),
			fmt.Sprintf("%d/%d", kept, total), shortCount(uint64(kept)) + "/" + shortCount(total), ""}
	} else {
		windows = []string{fmt.Sprint(kept), ""}
	}
	var right string
	for _, win := range windows {
		parts := head
		if win != "" {
			parts = append(append([]string(nil), head...), st.Dim.Render(win))
		}
		right = strings.Join(parts, " · ")
		if len("Events")+ansi.StringWidth(right)+titleGaps <= w {
			break
		}
	}
	if room := w - ansi.StringWidth(right) - titleGaps; ansi.StringWidth(t) > room {
		t = "Events"
		if room < len(t) {
			t = human.Truncate(t, max(room, 3))
		}
	}
	return t, right
}

// titleGaps is what a box's top border takes beside its title and note
// inside its corners: a rule before each, a space each side of both.
const titleGaps = 6

// shortCount is n in three figures at most: 950, 12k, 335k, 1.2M.
func shortCount(n uint64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	case n < 10_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%dM", n/1_000_000)
}

// View draws the visible rows only: it walks back from the newest event.
// It changes nothing: Update and SetSize fitted the view.
func (p *eventsPane) View() string {
	w, h := p.inner()
	title, right := p.titlesIn(p.pc.st, w)
	return p.box(title, right, p.rows(p.pc.st, w, h))
}

func (p *eventsPane) rows(st *styles, w, h int) []string {
	k := p.keys()
	return tailView(st, &p.tail, p.ring, w, h, p.matchShown, func(_ int, e *line) string { return p.row(st, e, w) }, p.focused(),
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
