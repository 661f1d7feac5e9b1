package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
)

// The targets, caps, history, requests panes and the message box: View
// is a function of the pane (it moves no scroll, fills no cache), and
// Update and SetSize keep the cursor's row on screen: after every moving
// key, a smaller pane, and fewer rows.

// wideTarget is a live target with n methods over four domains (dom0 …
// dom3), each method's short name unique (c000 …); every third has a
// cost, so the rows of details under the tree change with the cursor.
func wideTarget(n int) *discovery.Target {
	addr := "unix:///run/biomeos/wide.sock"
	d := discovered(addr, "wide", addr, discovery.StateLive)
	d.Sources, d.Probe.Wire = []discovery.SourceRef{{Source: "socket-dir"}}, "jsonrpc"
	var methods []string
	costs := map[string]any{}
	for i := range n {
		m := fmt.Sprintf("dom%d.c%03d", i%4, i)
		methods = append(methods, m)
		if i%3 == 0 {
			costs[m] = map[string]any{"cpu": "low", "latency_ms": 0.5}
		}
	}
	raw, _ := json.Marshal(map[string]any{"primal": "wide", "version": "1.0.0", "methods": methods, "cost_estimates": costs})
	c, err := capability.Parse(raw)
	if err != nil {
		panic(err)
	}
	d.Probe.Capabilities = c
	d.Probe.Identity = &capability.Identity{Primal: "wide", Version: "1.0.0", Domain: "test"}
	return d
}

// listCase is a pane under test: how to fill and focus it, what View
// must not change, and what row i of its list shows.
type listCase struct {
	name  string
	setup func(t *testing.T, m *model) pane
	// state is what View must leave as it is.
	state func() string
	// at is the scroll and the cursor (the message box: its scroll
	// twice), n the rows; label(i) is a word row i alone shows.
	at    func() (off, sel, n int)
	label func(i int) string
	// moves are the moving keys the pane takes.
	moves []string
	// shrink takes rows away (nil: the pane's rows do not shrink).
	shrink func(t *testing.T, m *model)
}

// shownRight checks the pane shows the rows its scroll says: the cursor's
// row (marked ›, but in the message box), the first row the scroll
// shows, and not the one above it; so View draws from the scroll fit
// left, and that scroll shows the cursor.
func shownRight(t *testing.T, c listCase, p pane, when string) {
	t.Helper()
	off, sel, n := c.at()
	v := ansi.Strip(p.View())
	has := func(s string) (string, bool) {
		for _, l := range strings.Split(v, "\n") {
			if strings.Contains(l, s) {
				return l, true
			}
		}
		return "", false
	}
	if n == 0 {
		return
	}
	if l, ok := has(c.label(sel)); !ok || (c.name != "message" && !strings.Contains(l, "›")) {
		t.Fatalf("%s, %s: the cursor's row (%d, %q) is not shown marked (off %d of %d):\n%s", c.name, when, sel, c.label(sel), off, n, v)
	}
	if _, ok := has(c.label(off)); !ok {
		t.Fatalf("%s, %s: the scroll's first row (%d, %q) is not shown (cursor %d of %d):\n%s", c.name, when, off, c.label(off), sel, n, v)
	}
	if off > 0 {
		if _, ok := has(c.label(off - 1)); ok {
			t.Fatalf("%s, %s: the row above the scroll (%d, %q) is shown: View drew from elsewhere (cursor %d of %d):\n%s", c.name, when, off-1, c.label(off-1), sel, n, v)
		}
	}
}

// listCases are the five panes, each filled with more rows than show.
func listCases() []listCase {
	var cs []listCase
	var tp *targetsPane
	cs = append(cs, listCase{
		name: "targets",
		setup: func(t *testing.T, m *model) pane {
			m.update(feedMsg{items: crowdTargets(60)})
			keyMsgs(t, m, "1")
			tp = m.tp()
			return tp
		},
		state: func() string {
			s := fmt.Sprintf("sel %d off %d drawn %d:", tp.sel, tp.off, len(tp.drawn))
			for _, d := range tp.drawn {
				s += fmt.Sprintf(" %p/%v/%v/%d", d.t, d.sel, d.focused, len(d.s))
			}
			return s
		},
		at: func() (int, int, int) { return tp.off, tp.sel, len(tp.rows) },
		label: func(i int) string {
			if tp.rows[i].header != "" {
				return tp.rows[i].header
			}
			return tp.pc.targets[tp.rows[i].key].Name
		},
		moves: []string{"j", "j", "pgdown", "pgdown", "G", "k", "pgup", "pgup", "g", "G"},
		shrink: func(t *testing.T, m *model) {
			var gone []*discovery.Target
			for _, it := range crowdTargets(60)[20:] {
				gone = append(gone, it.(discovery.Event).Target)
			}
			m.update(feedMsg{items: removedAll(gone)})
		},
	})
	var cp *capsPane
	cs = append(cs, listCase{
		name: "caps",
		setup: func(t *testing.T, m *model) pane {
			m.update(feedMsg{items: added(wideTarget(60))})
			keyMsgs(t, m, "2", "Z") // every domain unfolded
			cp = m.cp()
			return cp
		},
		state: func() string {
			return fmt.Sprintf("sel %d off %d rows %d dirty %v tree %s/%p", cp.sel, cp.off, len(cp.rows), cp.known.dirty, cp.known.treeKey, cp.known.tree)
		},
		at: func() (int, int, int) { return cp.off, cp.sel, len(cp.rows) },
		label: func(i int) string {
			r := cp.rows[i]
			tr := cp.tree(cp.pc.target())
			if r.kind == rowMethod {
				return tr[r.domain].Methods[r.method].Short
			}
			return tr[r.domain].Name
		},
		moves: []string{"j", "j", "pgdown", "pgdown", "G", "k", "pgup", "pgup", "g", "G"},
		shrink: func(t *testing.T, m *model) {
			keyMsgs(t, m, "/", "c05", "enter") // the filter: a few rows
		},
	})
	var hp *historyPane
	cs = append(cs, listCase{
		name: "history",
		setup: func(t *testing.T, m *model) pane {
			keyMsgs(t, m, "H")
			hp = m.histp()
			return hp
		},
		state: func() string {
			return fmt.Sprintf("sel %d off %d entries %d", hp.sel, hp.off, len(hp.entries))
		},
		at: func() (int, int, int) { return hp.off, hp.sel, len(hp.entries) },
		label: func(i int) string { // the id and time (the method may be cut)
			return fmt.Sprintf("%4d %s", hp.entries[i].ID, hp.entries[i].Time.Format("15:04:05"))
		},
		moves: []string{"j", "j", "pgdown", "pgdown", "G", "k", "pgup", "pgup", "g", "G"},
		shrink: func(t *testing.T, m *model) {
			keyMsgs(t, m, "/", "call.n01", "enter") // the search: 10 calls of 60
		},
	})
	var rp *requestsPane
	cs = append(cs, listCase{
		name: "requests",
		setup: func(t *testing.T, m *model) pane {
			var ls []any
			for i := range 40 {
				ls = append(ls, requestAt(t0.Add(-time.Duration(40-i)*time.Second), "holon", fmt.Sprintf("ask.n%03d", i), &fakeLink{up: true}))
			}
			m.update(feedMsg{items: ls})
			keyMsgs(t, m, "R")
			rp = m.reqs()
			return rp
		},
		state: func() string {
			return fmt.Sprintf("sel %d off %d reqs %d pending %d", rp.sel, rp.off, len(rp.reqs), rp.pendN)
		},
		at:    func() (int, int, int) { return rp.off, rp.sel, len(rp.reqs) },
		label: func(i int) string { return rp.reqs[i].title },
		moves: append(rep("k", 30), rep("j", 25)...), // the newest is selected as it comes
	})
	var mb *messagePane
	cs = append(cs, listCase{
		name: "message",
		setup: func(t *testing.T, m *model) pane {
			var words []string
			for i := range 1000 {
				words = append(words, fmt.Sprintf("w%03d", i))
			}
			m.pc.setErr(strings.Join(words, " "))
			keyMsgs(t, m, "!")
			mb = m.msgBox
			if !mb.shown {
				t.Fatal("the message box did not open")
			}
			return mb
		},
		state: func() string {
			return fmt.Sprintf("off %d lines %d wrapped at %d", mb.off, len(mb.lines), mb.wrapW)
		},
		at:    func() (int, int, int) { return mb.off, mb.off, len(mb.lines) },
		label: func(i int) string { return strings.Fields(mb.lines[i])[0] },
		moves: []string{"j", "j", "pgdown", "pgdown", "G", "k", "pgup", "g", "G"},
	})
	return cs
}

// removedAll is discovery's news that ds left.
func removedAll(ds []*discovery.Target) []any {
	out := make([]any, len(ds))
	for i, d := range ds {
		out[i] = removed(d)
	}
	return out
}

// listModel is a model at w×h with 60 calls in its history.
func listModel(t *testing.T, w, h int) *model {
	hist := NewMemHistory(0)
	for i := range 60 {
		hist.Record(history.Entry{Time: t0.Add(time.Duration(i) * time.Second), Target: "beardog", Method: fmt.Sprintf("call.n%03d", i), Outcome: history.OutcomeOK})
	}
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(winSize(w, h))
	return m
}

// TestListViewsChangeNothing: drawing the targets, caps, history and
// requests panes and the message box (twice, the whole screen too) with
// the cursor past the rows that showed before changes neither scroll nor
// cursor nor what the panes keep (the targets' drawn rows, the caps'
// known tree). View used to scroll each of them (scrollInto), and the
// targets pane kept the rows it drew, the message box the lines it
// wrapped, the requests pane the count it made.
func TestListViewsChangeNothing(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 35}} {
		for _, c := range listCases() {
			when := fmt.Sprintf("%dx%d", size[0], size[1])
			m := listModel(t, size[0], size[1])
			p := c.setup(t, m)
			m.update(winSize(size[0], size[1]+10)) // a larger screen, then back: the rows moved on a screen drawn last larger
			_ = m.render()
			for _, k := range c.moves {
				keyMsgs(t, m, k)
			}
			m.update(winSize(size[0], size[1]))
			viewTwice(t, m, p, c.state, c.name+", "+when+", moved")
			shownRight(t, c, p, when+", moved")
		}
	}
}

// TestListCursorShownAfterEachMove: at 80×24 and 120×35, after every
// moving key, after the pane shrinks (SetSize alone, and the screen) and
// after its rows do (targets leave, a filter, a search), the cursor's row
// shows, the scroll Update left is the one View draws from, and View
// changes nothing.
func TestListCursorShownAfterEachMove(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 35}} {
		for _, c := range listCases() {
			when := fmt.Sprintf("%dx%d", size[0], size[1])
			m := listModel(t, size[0], size[1])
			p := c.setup(t, m)
			viewTwice(t, m, p, c.state, c.name+", "+when+", opened")
			if _, _, n := c.at(); n < 30 {
				t.Fatalf("%s: %d rows: the test shows nothing", c.name, n)
			}
			scrolled := false
			for i, k := range c.moves {
				keyMsgs(t, m, k)
				at := fmt.Sprintf("%s, key %d (%s)", when, i, k)
				viewTwice(t, m, p, c.state, c.name+", "+at)
				shownRight(t, c, p, at)
				off, _, _ := c.at()
				scrolled = scrolled || off > 0
			}
			if !scrolled {
				t.Fatalf("%s, %s: the keys never scrolled: the test shows nothing", c.name, when)
			}
			// Down to the last rows again, then a smaller pane.
			for _, k := range c.moves[len(c.moves)-4:] {
				keyMsgs(t, m, k)
			}
			pw, ph := paneSize(p)
			p.SetSize(pw, ph-4) // the pane alone
			viewTwice(t, nil, p, c.state, c.name+", "+when+", SetSize smaller")
			shownRight(t, c, p, when+", SetSize smaller")
			m.update(winSize(size[0], size[1]-6)) // the screen
			viewTwice(t, m, p, c.state, c.name+", "+when+", screen smaller")
			shownRight(t, c, p, when+", screen smaller")
			m.update(winSize(size[0], size[1]))
			if c.shrink != nil {
				c.shrink(t, m)
				viewTwice(t, m, p, c.state, c.name+", "+when+", fewer rows")
				shownRight(t, c, p, when+", fewer rows")
				if _, _, n := c.at(); n >= 30 {
					t.Fatalf("%s, %s: %d rows after shrinking: the test shows nothing", c.name, when, n)
				}
			}
		}
	}
}

// paneSize is the size SetSize gave p.
func paneSize(p pane) (int, int) {
	switch p := p.(type) {
	case *targetsPane:
		return p.w, p.h
	case *capsPane:
		return p.w, p.h
	case *historyPane:
		return p.w, p.h
	case *requestsPane:
		return p.w, p.h
	case *messagePane:
		return p.w, p.h
	}
	panic(fmt.Sprintf("paneSize: %T", p))
}

// TestHistoryClickUnderSearch: a click on a call's row selects that call
// while the search field shows above the list (a row the list does not
// have). It selected the call below it: the click's row was counted
// from the top of the pane, not of the list.
func TestHistoryClickUnderSearch(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 35}} {
		m := listModel(t, size[0], size[1])
		keyMsgs(t, m, "H", "/", "call.n01", "enter")
		hp := m.histp()
		if hp.search.Empty() || len(hp.entries) != 10 {
			t.Fatalf("%dx%d: the search shows %d calls", size[0], size[1], len(hp.entries))
		}
		r := m.rects[pHistory]
		want := 3
		label := fmt.Sprintf("%4d %s", hp.entries[want].ID, hp.entries[want].Time.Format("15:04:05"))
		y := -1
		for i, l := range strings.Split(ansi.Strip(m.render()), "\n") {
			if i > r.y && i < r.y+r.h && strings.Contains(l, label) {
				y = i
			}
		}
		if y < 0 {
			t.Fatalf("%dx%d: call %q not on screen", size[0], size[1], label)
		}
		m.update(tea.MouseClickMsg{X: r.x + 3, Y: y, Button: tea.MouseLeft})
		if hp.sel != want {
			t.Errorf("%dx%d: a click on call %d selected call %d", size[0], size[1], want, hp.sel)
		}
	}
}

// TestRequestsClickTwoRows: a request takes two rows (what it asks, then
// where it stands); a click on either selects it. A click on the second
// row selected the request after it, and one on the second request's
// first row the third.
func TestRequestsClickTwoRows(t *testing.T) {
	m := listModel(t, 120, 35)
	var ls []any
	for i := range 6 {
		ls = append(ls, requestAt(t0.Add(-time.Duration(6-i)*time.Second), "holon", fmt.Sprintf("ask.n%03d", i), &fakeLink{up: true}))
	}
	m.update(feedMsg{items: ls})
	keyMsgs(t, m, "R", "k", "k", "k", "k", "k") // the first
	rp := m.reqs()
	r := m.rects[pRequests]
	for _, c := range []struct{ y, want int }{{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}} {
		m.update(tea.MouseClickMsg{X: r.x + 3, Y: r.y + 1 + c.y, Button: tea.MouseLeft})
		if rp.sel != c.want {
			t.Errorf("a click on the list's row %d selected request %d, want %d", c.y, rp.sel, c.want)
		}
	}
}
