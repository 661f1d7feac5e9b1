package tui

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// tail is the scroll state shared by the events and trace panes: back is how
// many (matching) rows above the newest the view ends; 0 follows the stream.
type tail struct {
	back      int
	paused    bool
	pauseMark uint64 // total when paused
	filter    lineEdit
	filtering bool
}

// eventsPane is the events/notifications/heartbeats tail over a bounded ring.
type eventsPane struct {
	tail
	ring    *ring[Event]
	kind    EventKind // 0: all
	source  string    // "": all
	sources map[string]bool
	// dropped counts items lost before the ring (feed overflow, peers).
	dropped uint64
}

func newEventsPane(size int) eventsPane {
	return eventsPane{ring: newRing[Event](size), sources: map[string]bool{}}
}

// Append adds an event; while paused and scrolled, the view stays put.
func (p *eventsPane) Append(e Event) {
	p.ring.Append(e)
	p.sources[e.Source] = true
	if p.paused || p.back > 0 {
		p.back++
	}
}

func (p *eventsPane) match(e *Event) bool {
	if p.kind != 0 && e.Kind != p.kind {
		return false
	}
	if p.source != "" && e.Source != p.source {
		return false
	}
	if f := p.filter.String(); f != "" {
		d := e.Data
		if len(d) > 512 {
			d = d[:512]
		}
		return containsFold(e.Source, f) || containsFold(e.Kind.String(), f) || containsFold(e.Name, f) || containsFold(string(d), f)
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
func (p *eventsPane) at(back int) *Event {
	for i := p.ring.Len() - 1; i >= 0; i-- {
		if e := p.ring.At(i); p.match(e) {
			if back == 0 {
				return e
			}
			back--
		}
	}
	return nil
}

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

// View renders the visible rows only: it walks back from the newest event.
func (p *eventsPane) View(st *styles, w, h int) []string {
	var head []string
	if p.filtering || !p.filter.Empty() {
		head = append(head, st.Accent.Render("/ ")+p.filter.View(w-2, p.filtering, st, -1))
	}
	avail := h - len(head)
	if avail <= 0 {
		return head
	}
	rows := make([]string, 0, avail)
	skip := p.back
	for i := p.ring.Len() - 1; i >= 0 && len(rows) < avail; i-- {
		e := p.ring.At(i)
		if !p.match(e) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		rows = append(rows, p.row(st, e, w))
	}
	return tailRows(st, head, rows, p.ring.Len() == 0, p.back == 0,
		" waiting for events…", " nothing matches the filter (K kind, S source, / text)")
}

func (p *eventsPane) row(st *styles, e *Event, w int) string {
	ts := st.Dim.Render(e.Time.Format("15:04:05"))
	src := render.Sanitize(e.Source)
	var mark, body string
	switch e.Kind {
	case EvHeartbeat:
		mark = st.Heartbeat.Render("♥")
		body = st.Heartbeat.Render(render.Sanitize(e.Name))
		if e.Latency > 0 {
			body += st.Dim.Render(" " + fmtDur(e.Latency))
		}
	case EvNotification:
		mark = st.Notify.Render("◆")
		body = st.Notify.Render(render.Sanitize(e.Name))
	case EvEvent:
		mark = st.Event.Render("◇")
		body = st.Event.Render(render.Sanitize(e.Name))
	case EvRequest:
		mark = st.Warn.Render("?")
		body = st.Warn.Render(render.Sanitize(e.Name))
		if e.Answered {
			body += st.Dim.Render(" (answered)")
		}
	case EvNote:
		mark = st.Dim.Render("·")
		body = st.Dim.Render(render.Sanitize(e.Name))
	default:
		mark = st.Err.Render("!")
		body = st.Err.Render(render.Sanitize(e.Name))
	}
	line := ts + " " + mark + " " + st.Accent.Render(src) + " " + body
	if len(e.Data) > 0 && len(e.Data) < maxEventData && w > 40 {
		line += " " + st.Dim.Render(render.Sanitize(string(cutUTF8(e.Data, 512))))
	}
	return line
}

// cutUTF8 keeps at most n bytes of p, ending on a character boundary (a
// cut through a character would show as a replacement mark).
func cutUTF8(p []byte, n int) []byte {
	if len(p) <= n {
		return p
	}
	// Back up at most to the start of one character; bytes that start
	// none (invalid UTF-8 from a peer) are cut where they are.
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			return p[:i]
		}
	}
	return p[:n]
}

// tracePane shows every frame both ways.
type tracePane struct {
	tail
	ring *ring[TraceFrame]
}

func newTracePane(size int) tracePane { return tracePane{ring: newRing[TraceFrame](size)} }

// Append adds a frame.
func (p *tracePane) Append(f TraceFrame) {
	p.ring.Append(f)
	if p.paused || p.back > 0 {
		p.back++
	}
}

// at returns the back-th newest frame that matches the filter.
func (p *tracePane) at(back int) *TraceFrame {
	f := p.filter.String()
	for i := p.ring.Len() - 1; i >= 0; i-- {
		fr := p.ring.At(i)
		if f != "" && !containsFold(fr.Source, f) && !containsFold(fr.Warning, f) && !containsFold(string(fr.Data[:min(len(fr.Data), 1024)]), f) {
			continue
		}
		if back == 0 {
			return fr
		}
		back--
	}
	return nil
}

func (p *tracePane) titles(st *styles) (string, string) {
	var right []string
	if p.paused {
		right = append(right, st.Warn.Render(fmt.Sprintf("paused +%d", p.ring.total-p.pauseMark)))
	}
	if p.ring.dropped > 0 {
		right = append(right, st.Warn.Render(fmt.Sprintf("dropped %d", p.ring.dropped)))
	}
	right = append(right, st.Dim.Render(fmt.Sprint(p.ring.Len())))
	return "Trace", strings.Join(right, " ")
}

func (p *tracePane) View(st *styles, w, h int) []string {
	var head []string
	if p.filtering || !p.filter.Empty() {
		head = append(head, st.Accent.Render("/ ")+p.filter.View(w-2, p.filtering, st, -1))
	}
	avail := h - len(head)
	if avail <= 0 {
		return head
	}
	f := p.filter.String()
	rows := make([]string, 0, avail)
	skip := p.back
	for i := p.ring.Len() - 1; i >= 0 && len(rows) < avail; i-- {
		fr := p.ring.At(i)
		if f != "" && !containsFold(fr.Source, f) && !containsFold(fr.Warning, f) && !containsFold(string(fr.Data[:min(len(fr.Data), 1024)]), f) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		var prev *TraceFrame
		if i > 0 {
			prev = p.ring.At(i - 1)
		}
		rows = append(rows, p.row(st, fr, prev))
	}
	return tailRows(st, head, rows, p.ring.Len() == 0, p.back == 0,
		" no frames yet: every frame sent and received shows here", " nothing matches the filter")
}

func (p *tracePane) row(st *styles, f *TraceFrame, prev *TraceFrame) string {
	ts := st.Dim.Render(f.Time.Format("15:04:05.000"))
	delta := ""
	if prev != nil && !prev.Time.IsZero() {
		if d := f.Time.Sub(prev.Time); d >= 0 && d < time.Hour {
			delta = "+" + fmtDur(d)
		}
	}
	ts += st.Dim.Render(fmt.Sprintf(" %9s", delta))
	var arrow string
	switch f.Dir {
	case ipc.Out:
		arrow = st.Sent.Render("→")
	case ipc.In:
		arrow = st.Received.Render("←")
	case ipc.Stderr:
		arrow = st.Warn.Render("⚠")
	default:
		arrow = st.Dim.Render("·")
	}
	line := ts + " " + arrow + " " + st.Accent.Render(render.Sanitize(f.Source)) + " " + st.Dim.Render(ipc.FormatBytes(int64(f.Size)))
	if f.Warning != "" {
		line += " " + st.Warn.Render("⚠ "+render.Sanitize(f.Warning))
	}
	return line + " " + render.Sanitize(string(cutUTF8(f.Data, 512)))
}

func tailScroll(t *tail, n int) {
	t.back -= n
	if t.back < 0 {
		t.back = 0
	}
}

// requestsPane lists server-initiated requests, answerable.
type requestsPane struct {
	reqs     []Event
	sel, off int
}

func (p *requestsPane) Append(e Event) {
	p.reqs = append(p.reqs, e)
	if len(p.reqs) > 500 {
		p.reqs = p.reqs[len(p.reqs)-500:]
	}
	p.sel = len(p.reqs) - 1
}

func (p *requestsPane) pending() int {
	n := 0
	for _, r := range p.reqs {
		if !r.Answered {
			n++
		}
	}
	return n
}

func (p *requestsPane) View(st *styles, w, h int, focused bool) []string {
	if len(p.reqs) == 0 {
		return []string{"", st.Dim.Render(" No server-initiated requests yet."), st.Dim.Render(" Holons and buses that call back show up here; press a to answer.")}
	}
	p.off = scrollInto(p.off, p.sel, h, len(p.reqs))
	var out []string
	for i := p.off; i < len(p.reqs) && i < p.off+h; i++ {
		r := &p.reqs[i]
		cur := " "
		if i == p.sel {
			cur = st.Accent.Render("›")
		}
		state := st.Warn.Render("waiting ")
		if r.Answered {
			state = st.OK.Render("answered")
		}
		out = append(out, cur+st.Dim.Render(r.Time.Format("15:04:05"))+" "+state+" "+st.Accent.Render(render.Sanitize(r.Source))+" "+
			render.Sanitize(r.Name)+" "+st.Dim.Render(render.Sanitize(string(r.Data))))
	}
	return out
}

// historyPane lists past calls.
type historyPane struct {
	entries   []CallRecord
	sel, off  int
	search    lineEdit
	searching bool
	loaded    bool
	err       string
	naming    bool // typing a name to save the selected call under
	name      lineEdit
}

func (p *historyPane) selected() *CallRecord {
	if p.sel >= 0 && p.sel < len(p.entries) {
		return &p.entries[p.sel]
	}
	return nil
}

func (p *historyPane) View(st *styles, w, h int, focused bool, now time.Time) []string {
	var out []string
	if p.searching || !p.search.Empty() {
		out = append(out, st.Accent.Render("/ ")+p.search.View(w-2, p.searching, st, -1))
	}
	if p.naming {
		out = append(out, st.Accent.Render("save as ")+p.name.View(w-8, true, st, -1))
	}
	if p.err != "" {
		out = append(out, st.Err.Render(render.Sanitize(p.err)))
	}
	if len(p.entries) == 0 {
		msg := " No calls yet."
		if !p.loaded {
			msg = " loading…"
		}
		return append(out, st.Dim.Render(msg))
	}
	avail := h - len(out)
	p.off = scrollInto(p.off, p.sel, avail, len(p.entries))
	for i := p.off; i < len(p.entries) && i < p.off+avail; i++ {
		e := &p.entries[i]
		cur := " "
		if i == p.sel {
			cur = st.Accent.Render("›")
		}
		oc := st.OK.Render("ok ")
		if e.Outcome != OutcomeOK {
			oc = st.Err.Render(fmt.Sprintf("%-3.3s", string(e.Outcome)))
		}
		when := e.Time.Format("15:04:05")
		if now.Sub(e.Time) > 24*time.Hour {
			when = e.Time.Format("01-02 15:04")
		}
		line := cur + st.Dim.Render(fmt.Sprintf("%4d ", e.ID)) + st.Dim.Render(when) + " " + oc + " " +
			st.Accent.Render(render.Sanitize(e.Target)) + " " + render.Sanitize(e.Method) + " " +
			st.Dim.Render(render.Sanitize(string(e.Params)))
		out = append(out, line)
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
