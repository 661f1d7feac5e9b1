package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/ipc"
)

// respState is what the response pane's View must not change.
func respState(r *responsePane) string {
	return fmt.Sprintf("cur %d off %d xoff %d lastH %d atEnd %v folds %d/%v highlighted %d", r.cur, r.off, r.xoff, r.lastH, r.atEnd, r.foldGen, r.folding, r.hlN)
}

// viewTwice draws the pane twice (and the whole screen, m not nil) and
// fails when state says it changed the pane.
func viewTwice(t *testing.T, m *model, p pane, state func() string, when string) {
	t.Helper()
	before := state()
	first := p.View()
	if got := state(); got != before {
		t.Fatalf("%s: View changed the pane: %s, was %s", when, got, before)
	}
	if p.View() != first {
		t.Fatalf("%s: View drew something else the second time", when)
	}
	if m == nil {
		return
	}
	_ = m.render()
	if got := state(); got != before {
		t.Fatalf("%s: drawing the screen changed the pane: %s, was %s", when, got, before)
	}
}

// TestResponseViewChangesNothing: the response pane's View is a function
// of the pane: drawing it (twice, after a resize, with the search field
// open) moves neither cursor nor scroll nor fills the highlight cache,
// and the cursor's row still shows, fitted by SetSize and Update. View
// used to fit the scroll to the rows it had (follow), and highlight.
func TestResponseViewChangesNothing(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(120, 35))
	m.setFocus(pResponse)
	d := itemsDoc(2000)
	m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: named("big"), req: ipc.Request{Method: "big.list"}, outcome: "ok"}, doc: d})
	r := m.resp()
	state := func() string { return respState(r) }
	shows := func(when string) {
		t.Helper()
		if row, want := cursorRow(m), strings.TrimSpace(d.line(r.cur)); row != want {
			t.Fatalf("%s: the cursor's row shows %q, want %q (cur %d off %d lastH %d)", when, row, want, r.cur, r.off, r.lastH)
		}
	}
	keyMsgs(t, m, "G")
	viewTwice(t, m, r, state, "at the end")
	shows("at the end")

	m.update(winSize(80, 24)) // SetSize: fewer rows
	viewTwice(t, m, r, state, "after a resize")
	shows("after a resize")

	keyMsgs(t, m, "/") // the search field takes a row
	viewTwice(t, m, r, state, "search field open")
	shows("search field open")
	keyMsgs(t, m, "esc")

	r.SetSize(r.w, r.h-5) // the pane alone, not the screen's layout
	viewTwice(t, nil, r, state, "after SetSize")
	if !strings.Contains(ansi.Strip(r.View()), "› "+strings.TrimSpace(d.line(r.cur))) {
		t.Fatalf("after SetSize the cursor's row is not shown (cur %d off %d lastH %d)", r.cur, r.off, r.lastH)
	}
}

// TestTailViewsChangeNothing: the events and trace panes' View is a
// function of the pane: drawing them (twice, after a resize, with the
// filter field open) moves neither view nor cursor nor starts a new
// generation of matches, and the cursor's row still shows. View used to
// sync the filters (syncFilter, matcher), settle the view and the cursor
// over the rows it had room for, and count them.
func TestTailViewsChangeNothing(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: append(sampleTargets(), sampleEvents()...)})
	m.update(feedMsg{items: sampleTrace()})
	ev, tr := m.events(), m.trace()
	tailState := func(t *tail) string {
		return fmt.Sprintf("back %d cur %d avail %d shown %d head %d paused %v newer %d", t.back, t.cur, t.avail, t.shown, t.head, t.paused, t.newer)
	}
	for _, c := range []struct {
		name, key string
		p         pane
		state     func() string
	}{
		{"events", "e", ev, func() string { return fmt.Sprintf("%s mgen %d", tailState(&ev.tail), ev.mgen) }},
		{"trace", "t", tr, func() string { return fmt.Sprintf("%s mgen %d", tailState(&tr.tail), tr.mgen) }},
	} {
		m.update(winSize(240, 60))
		keyMsgs(t, m, c.key, "k", "k", "k", "k", "k", "k", "k", "k")
		cursorShown := func(when string) {
			t.Helper()
			if !strings.Contains(ansi.Strip(c.p.View()), "›") {
				t.Fatalf("%s, %s: the cursor's row is not shown: %s\n%s", c.name, when, c.state(), ansi.Strip(c.p.View()))
			}
		}
		viewTwice(t, m, c.p, c.state, c.name+", scrolled")
		cursorShown("scrolled")

		m.update(winSize(120, 30)) // the side pane: a few rows
		viewTwice(t, m, c.p, c.state, c.name+", after a resize")
		cursorShown("after a resize")

		keyMsgs(t, m, "/", "beardog") // the filter takes a row
		viewTwice(t, m, c.p, c.state, c.name+", filter open")
		cursorShown("filter open")
		keyMsgs(t, m, "esc")
		viewTwice(t, m, c.p, c.state, c.name+", filter left")
	}
}

// TestMapViewChangesNothing: the map pane's View is a function of the
// pane: drawing the tree, the drawing and an opened edge (twice, after a
// move, a resize, a sideways scroll) moves none of their scrolls, and the
// cursor still shows. View used to scroll the tree (off), the drawing
// (ox, oy, shownSel) and the edge's calls.
func TestMapViewChangesNothing(t *testing.T) {
	m := mapModel(t, mapHistory(), 80, 24)
	p := m.mapp()
	state := func() string {
		s := fmt.Sprintf("sel %d off %d ox %d oy %d shown %+v scrolled %v", p.sel, p.off, p.ox, p.oy, p.shownSel, p.scrolled)
		if p.edge != nil {
			s += fmt.Sprintf(" edge sel %d off %d", p.edge.sel, p.edge.off)
		}
		return s
	}
	cursorShown := func(when string) {
		t.Helper()
		v := ansi.Strip(p.View())
		if p.drawingFits() && p.edge == nil {
			// The drawing marks the cursor's node by its colours; its
			// name is on screen.
			if n := p.selNode(); n == nil || !strings.Contains(v, nodeLabel(n)[:min(len(nodeLabel(n)), 8)]) {
				t.Fatalf("%s: the cursor's node is not drawn: %s\n%s", when, state(), v)
			}
			return
		}
		if !strings.Contains(v, "›") {
			t.Fatalf("%s: the cursor's row is not shown: %s\n%s", when, state(), v)
		}
	}
	m.update(winSize(60, 14)) // a tree longer than the pane
	keyMsgs(t, m, "G")
	viewTwice(t, m, p, state, "tree, at the bottom")
	cursorShown("tree, at the bottom")
	if p.off == 0 {
		t.Fatal("the tree did not scroll: the test shows nothing")
	}
	m.update(winSize(60, 11))
	viewTwice(t, m, p, state, "tree, after a resize")
	cursorShown("tree, after a resize")

	m.update(winSize(120, 35)) // the drawing
	viewTwice(t, m, p, state, "drawing")
	cursorShown("drawing")
	keyMsgs(t, m, "g")
	viewTwice(t, m, p, state, "drawing, at the top")
	cursorShown("drawing, at the top")
	keyMsgs(t, m, ">", ">")
	viewTwice(t, m, p, state, "drawing, scrolled sideways")

	goTo(t, m, mapKey{node: "you", from: "you", to: id("nestgate"), capy: "storage.put", edge: true})
	keyMsgs(t, m, "enter")
	if p.edge == nil {
		t.Fatal("the edge did not open")
	}
	for range 20 {
		keyMsgs(t, m, "j")
	}
	viewTwice(t, m, p, state, "edge, calls down")
	cursorShown("edge, calls down")
	m.update(winSize(80, 24))
	viewTwice(t, m, p, state, "edge, after a resize")
	cursorShown("edge, after a resize")
	if p.edge.off == 0 {
		t.Fatal("the edge's calls did not scroll: the test shows nothing")
	}
}
