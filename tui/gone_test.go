package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
)

// TestGoneTargetKeepsItsPlace: when the target the user works on leaves
// discovery (primals come and go), the caps pane and the composer stay on
// it, shown as gone, instead of jumping to another target; when the user
// moves, they follow; when it comes back, it is simply live again.
func TestGoneTargetKeepsItsPlace(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: sampleTargets()})
	keyMsgs(t, m, "enter", "l", "j") // beardog; open its first domain; on its first method
	beardog := sampleTarget(0)
	if m.pc.current != beardog.ID || m.pc.focus != pCaps {
		t.Fatalf("current %q, focus %s", m.pc.current, tabName(m.pc.focus))
	}
	caps := m.cp()
	sel, rows := caps.sel, len(caps.rows)
	if caps.rows[sel].kind != rowMethod {
		t.Fatalf("not on a method: %+v", caps.rows[sel])
	}
	method := caps.rowName(m.pc.target(), caps.rows[sel])
	keyMsgs(t, m, "enter") // into the composer
	if m.comp().method.String() != method {
		t.Fatalf("composer has %q, want %q", m.comp().method.String(), method)
	}

	m.update(feedMsg{items: []any{removed(beardog)}})
	if m.pc.current != beardog.ID || m.pc.target() == nil || !m.pc.target().gone {
		t.Fatalf("after beardog left: current %q, target %+v", m.pc.current, m.pc.target())
	}
	if caps.sel != sel || len(caps.rows) != rows || m.comp().method.String() != method {
		t.Fatalf("the caps pane or the composer moved: sel %d→%d, rows %d→%d, method %q", sel, caps.sel, rows, len(caps.rows), m.comp().method.String())
	}
	scr := ansi.Strip(m.render())
	for _, want := range []string{"beardog 0.9.0 · crypto · L2", "gone", "✕ beardog gone  method " + method} {
		if !strings.Contains(scr, want) {
			t.Errorf("the screen does not say %q:\n%s", want, scr)
		}
	}
	if _, listed := m.pc.targets[beardog.ID]; listed {
		t.Fatal("the gone target is still among the targets")
	}

	// It comes back: live again, still current.
	m.update(feedMsg{items: added(sampleTarget(0))})
	if tg := m.pc.target(); tg == nil || tg.gone || m.pc.current != beardog.ID || m.pc.gone != nil {
		t.Fatalf("after beardog came back: %+v", tg)
	}
	if scr := ansi.Strip(m.render()); strings.Contains(scr, "beardog gone") {
		t.Fatalf("it came back but is shown gone:\n%s", scr)
	}

	// It leaves again; the user moves in the targets pane: the panes follow.
	m.update(feedMsg{items: []any{removed(beardog)}})
	m.setFocus(pTargets)
	keyMsgs(t, m, "j")
	if m.pc.current == beardog.ID || m.pc.gone != nil || m.pc.target() == nil || m.pc.target().health() == discovery.StateUnknown {
		t.Fatalf("after a move: current %q, gone %v", m.pc.current, m.pc.gone != nil)
	}
	if title, _ := capsTitle(m.pc.st, m.pc.target()); strings.Contains(title, "gone") || strings.Contains(title, "beardog") {
		t.Fatalf("the caps pane did not follow the move: %q", title)
	}
}
