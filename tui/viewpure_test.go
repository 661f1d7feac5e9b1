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
	return fmt.Sprintf("cur %d off %d xoff %d lastH %d atEnd %v folds %d/%v", r.cur, r.off, r.xoff, r.lastH, r.atEnd, r.foldGen, r.folding)
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
// open) moves neither cursor nor scroll, and the cursor's row still
// shows, fitted by SetSize and Update. View used to fit the scroll to
// the rows it had (follow).
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
