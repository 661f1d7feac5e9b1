package tui

import (
	"strings"
	"testing"
)

// TestCursorStaysWhenSelectedLeaves: when the target under the cursor
// leaves discovery (the demo's churn), the cursor stays where it was, on
// the target that took its row, not at the top of the list; the caps pane
// keeps the one that left (shown gone) until the user moves.
func TestCursorStaysWhenSelectedLeaves(t *testing.T) {
	for _, c := range []struct {
		name   string
		keys   []string
		leaves int // index in sampleTargets
		want   string
	}{
		// sorted: beardog, lostprimal, nestgate, rhizocrypt, songbird
		{"middle", []string{"j", "j"}, 2, "rhizocrypt"}, // nestgate leaves
		{"last", []string{"G"}, 1, "rhizocrypt"},        // songbird leaves
	} {
		m, _ := testModel(t, goldenConfig("dark"))
		m.update(feedMsg{items: sampleTargets()})
		m.setFocus(pTargets)
		keyMsgs(t, m, c.keys...)
		sel := m.tp().sel
		left := sampleTarget(c.leaves)
		if got := m.pc.targets[m.tp().selectedKey()].Name; got != left.Name {
			t.Fatalf("%s: the cursor is on %q, want %q", c.name, got, left.Name)
		}
		m.update(feedMsg{items: []any{removed(left)}})
		got := ""
		if tg := m.pc.targets[m.tp().selectedKey()]; tg != nil {
			got = tg.Name
		}
		if got != c.want {
			t.Errorf("%s: after %s left the cursor is on %q (row %d, was %d), want %s", c.name, left.Name, got, m.tp().sel, sel, c.want)
		}
		if m.pc.current != left.ID || m.pc.target() == nil || !m.pc.target().gone {
			t.Errorf("%s: the current target is %q, want %s kept as gone", c.name, m.pc.current, left.Name)
		}
	}
}

// TestFilterCancelKeepsOneCurrent: typing a filter moves the cursor to
// the best match without making it current; cancelling the filter puts
// the cursor back on the current target, so the targets pane, the caps
// pane and the composer agree on one target.
func TestFilterCancelKeepsOneCurrent(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: sampleTargets()})
	m.setFocus(pTargets)
	keyMsgs(t, m, "j", "j", "j") // rhizocrypt
	cur := m.pc.current
	if m.pc.targets[cur].Name != "rhizocrypt" {
		t.Fatalf("current %q", m.pc.targets[cur].Name)
	}
	keyMsgs(t, m, "/", "song")
	if got := m.pc.targets[m.tp().selectedKey()].Name; got != "songbird" {
		t.Fatalf("filtering: cursor on %q, want the match songbird", got)
	}
	if m.pc.current != cur {
		t.Fatalf("typing the filter made %q current", m.pc.current)
	}
	keyMsgs(t, m, "esc")
	if m.tp().selectedKey() != m.pc.current {
		t.Errorf("after cancelling the filter the cursor is on %q, the current target is %q",
			m.pc.targets[m.tp().selectedKey()].Name, m.pc.targets[m.pc.current].Name)
	}
	if title, _ := capsTitle(m.pc.st, m.pc.target()); !strings.Contains(title, "rhizocrypt") {
		t.Errorf("caps pane shows %q, want rhizocrypt", title)
	}
}
