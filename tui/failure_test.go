package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// TestFailureWrapped: at 80 columns the reason a call failed is wrapped in
// the response pane, whole, and the Message key shows it whole too.
func TestFailureWrapped(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: demoTargets()})
	m.update(winSize(80, 24))
	a := demoFailure()
	run(t, m, m.update(callDoneMsg{ans: a, doc: textDoc(nil)}))
	m.setFocus(pResponse)
	scr := ansi.Strip(m.render())
	if !strings.Contains(squeeze(scr), squeeze("failed "+a.errText)) {
		t.Fatalf("the response pane does not show the whole reason:\n%s", scr)
	}
	status := strings.Split(scr, "\n")[23]
	if !strings.Contains(status, "! message") {
		t.Fatalf("the status line does not say how to read the message whole: %q", status)
	}
	keyMsgs(t, m, "!")
	scr = ansi.Strip(m.render())
	if !strings.Contains(scr, "Error") || !strings.Contains(squeeze(scr), squeeze("failed: "+a.errText)) {
		t.Fatalf("! does not show the whole message:\n%s", scr)
	}
	keyMsgs(t, m, "x")
	if m.msgBox.shown {
		t.Fatal("a key did not close the message")
	}
	// The status line moved on; ! still shows the last error.
	m.pc.setInfo("copied")
	keyMsgs(t, m, "!")
	if scr := ansi.Strip(m.render()); !strings.Contains(squeeze(scr), squeeze(a.errText)) {
		t.Fatalf("! after the line moved on:\n%s", scr)
	}
	keyMsgs(t, m, "esc")
	// A click on the status line opens it too.
	m.update(tea.MouseClickMsg{X: 3, Y: 23, Button: tea.MouseLeft})
	if !m.msgBox.shown {
		t.Fatal("a click on the status line did not open the message")
	}
}

// TestLongFailureBounded: a peer's megabyte of reason, control characters
// and all, takes at most the response pane's rows, escaped, and the cut
// says how to read it whole.
func TestLongFailureBounded(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(80, 24))
	a := demoFailure()
	a.errText = strings.Repeat("no \x1b[31mred\x07 ", 100000)
	run(t, m, m.update(callDoneMsg{ans: a, doc: textDoc(nil)}))
	m.setFocus(pResponse)
	out := m.render()
	checkScreen(t, out, 80, 24)
	scr := ansi.Strip(out)
	if strings.Contains(out, "\x1b[31mred") || !strings.Contains(scr, `\x1b[31mred`) {
		t.Fatalf("the reason's escapes reached the terminal:\n%s", scr)
	}
	if !strings.Contains(scr, "… ! message") {
		t.Fatalf("the cut reason does not say how to read it whole:\n%s", scr)
	}
}
