package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestCursorSettlesBeforeSelecting: stepping through the targets does not
// make every target on the way current (for a BTSP target that is a dial
// and a handshake each): the one under the cursor becomes current when
// the cursor rests (the settle tick of the last move), once.
func TestCursorSettlesBeforeSelecting(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.pc.ticks = func() bool { return true } // as in the program
	m.update(feedMsg{items: sampleTargets()})
	m.setFocus(pTargets)
	first := m.pc.current
	for _, k := range press("j", "j", "j") {
		m.update(k) // the settle ticks are not run yet
		if m.pc.current != first {
			t.Fatalf("a step made %s current before the cursor rested", m.pc.targets[m.pc.current].Name)
		}
	}
	m.update(settleMsg{n: m.tp().settling - 1}) // an earlier step's tick
	if m.pc.current != first {
		t.Fatal("an earlier step's tick made its target current")
	}
	m.update(settleMsg{n: m.tp().settling})
	if got := m.pc.targets[m.pc.current].Name; got != "rhizocrypt" {
		t.Fatalf("after the cursor rested %s is current, want rhizocrypt", got)
	}
	// ⏎ does not wait.
	m.update(press("k")[0])
	m.update(press("enter")[0])
	if got := m.pc.targets[m.pc.current].Name; got != "nestgate" {
		t.Fatalf("⏎ made %s current, want nestgate", got)
	}
	// Nor does leaving the pane: what comes next is about that target.
	m.setFocus(pTargets)
	m.update(press("j")[0])
	m.update(press("tab")[0])
	if got := m.pc.targets[m.pc.current].Name; got != "rhizocrypt" || m.pc.focus == pTargets {
		t.Fatalf("after a step and tab %s is current, want rhizocrypt", got)
	}
	m.update(settleMsg{n: m.tp().settling}) // its tick comes late: nothing to do
	if got := m.pc.targets[m.pc.current].Name; got != "rhizocrypt" {
		t.Fatalf("a late tick made %s current", got)
	}
}

// TestHistoryNotSearchedWhileHidden: an answer has the history searched
// again only while the history pane shows; hidden, it is searched when
// next focused (it was searched after every answer once loaded).
func TestHistoryNotSearchedWhileHidden(t *testing.T) {
	cfg := goldenConfig("dark")
	cfg.History = NewMemHistory(0)
	m, _ := testModel(t, cfg)
	m.update(winSize(80, 24)) // one pane at a time
	run(t, m, m.setFocus(pHistory))
	if !m.histp().loaded {
		t.Fatal("history not loaded when focused")
	}
	m.setFocus(pTargets)
	a := &answer{seq: m.pc.nextSeq(), target: named("x"), req: ipc.Request{Method: "m"}, outcome: "ok"}
	if _, cmd := m.histp().Update(callDoneMsg{ans: a, doc: textDoc(nil)}); cmd != nil {
		t.Fatal("a hidden history pane searches the history after an answer")
	}
	m.setFocus(pHistory)
	if _, cmd := m.histp().Update(callDoneMsg{ans: a, doc: textDoc(nil)}); cmd == nil {
		t.Fatal("the history pane on screen does not take the answer in")
	}
}

// TestCapsNotDirtyForever: a method seen on a Holon-RPC target marks its
// tree to be drawn again; once another target is current, that mark no
// longer has the capability pane rebuilt on every frame of traffic.
func TestCapsNotDirtyForever(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	holon := discovered("ws://127.0.0.1:9/rpc", "holon", "ws://127.0.0.1:9/rpc", discovery.StateLive)
	m.update(feedMsg{items: append(added(holon), sampleTargets()...)})
	m.update(selectMsg{key: holon.ID})
	_ = m.render()
	m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: holon, req: ipc.Request{Method: "greeting.Say"}, outcome: "ok"}, doc: textDoc(nil)})
	m.update(selectMsg{key: sampleTarget(0).ID})
	m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: holon, req: ipc.Request{Method: "greeting.Other"}, outcome: "ok"}, doc: textDoc(nil)})
	m.update(liveMsg{})
	if m.cp().known.dirty {
		t.Fatal("the known-methods tree stays dirty while another target is current: the pane rebuilds every frame")
	}
	// Back on the holon: both methods seen are there.
	m.update(selectMsg{key: holon.ID})
	m.setFocus(pCaps)
	keyMsgs(t, m, "Z")
	scr := ansi.Strip(m.render())
	for _, want := range []string{"Say", "Other"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the holon's tree lacks %q:\n%s", want, scr)
		}
	}
}

// TestTailMatchesOnce: a filtered events tail matches each event once
// for its filters, not on every frame (a frame walked the whole ring
// through the filter): an event's verdict stands until the filters change.
func TestTailMatchesOnce(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pEvents)
	var lines []line
	for i := 0; i < 50; i++ {
		name := "other.event"
		if i%10 == 0 {
			name = "wanted.event"
		}
		lines = append(lines, tailLine(t0.Add(time.Duration(i)*time.Second), "p", "", EvNotification, name, nil, nil))
	}
	m.update(liveMsg{lines: lines})
	keyMsgs(t, m, "/", "wanted", "enter")
	if n := strings.Count(ansi.Strip(m.render()), "wanted.event"); n != 5 {
		t.Fatalf("%d matching rows, want 5", n)
	}
	// Were every line matched again at each frame, a verdict would
	// follow the line's text; matched once, it stands.
	p := m.events()
	for i := 0; i < p.ring.Len(); i++ {
		if e := p.ring.At(i); e.title == "wanted.event" {
			e.title = "renamed.event"
		}
	}
	if n := strings.Count(ansi.Strip(m.render()), "renamed.event"); n != 5 {
		t.Fatalf("the next frame matched the ring again: %d rows of the 5 matched", n)
	}
	keyMsgs(t, m, "/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "wanted", "enter")
	if n := strings.Count(ansi.Strip(m.render()), "renamed.event"); n != 0 {
		t.Fatalf("a new filter kept the old verdicts: %d rows", n)
	}
}

// TestTraceMatchesOnce: a filtered trace matches each frame once for its
// filter, as the events tail does: a frame's verdict stands until the
// filter changes.
func TestTraceMatchesOnce(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pTrace)
	var frames []TraceFrame
	for i := 0; i < 40; i++ {
		data := `{"method":"other"}`
		if i%10 == 0 {
			data = `{"method":"wanted"}`
		}
		frames = append(frames, TraceFrame{Time: t0, Source: "p", Dir: ipc.Out, Size: len(data), Data: []byte(data)})
	}
	m.update(liveMsg{frames: frames})
	keyMsgs(t, m, "/", "wanted", "enter")
	rows := func() int { return strings.Count(ansi.Strip(m.trace().View()), "12:01:03.000") }
	if n := rows(); n != 4 {
		t.Fatalf("%d matching rows, want 4", n)
	}
	p := m.trace()
	for i := 0; i < p.ring.Len(); i++ {
		if fr := p.ring.At(i); string(fr.Data) == `{"method":"wanted"}` {
			fr.Data = []byte(`{"method":"renamed"}`)
		}
	}
	if n := rows(); n != 4 {
		t.Fatalf("the next frame matched the ring again: %d rows of the 4 matched", n)
	}
}
