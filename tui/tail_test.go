package tui

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// tailText is what a live pane shows, one row a line.
func tailText(p pane) string { return ansi.Strip(p.View()) }

// TestTailFilterPauseTop: a filtered tail, paused while rows that do not
// match arrive, keeps its rows; g goes to the oldest row, never to an
// empty list; the same on the trace pane and after the ring drops rows.
func TestTailFilterPauseTop(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: append(sampleTargets(), sampleEvents()...)})
	m.update(winSize(240, 60))   // the side pane wide enough for the payloads
	keyMsgs(t, m, "e", "K", "p") // heartbeats only, paused
	ev := m.events()
	before := tailText(ev)
	var more []any
	for i := 0; i < 40; i++ {
		more = append(more, tailLine(t0.Add(time.Minute), "nestgate", "", EvEvent, "Other", []byte(`{}`), nil))
	}
	m.update(feedMsg{items: more})
	after := tailText(ev)
	if !strings.Contains(after, `{"seq":28}`) || strings.Count(after, "health.heartbeat") != strings.Count(before, "health.heartbeat") {
		t.Fatalf("paused and filtered, the rows went:\nbefore\n%s\nafter\n%s", before, after)
	}
	m.update(feedMsg{items: []any{tailLine(t0.Add(time.Minute), "beardog", "", EvHeartbeat, "health.heartbeat", []byte(`{"seq":99}`), nil)}})
	v := tailText(ev)
	if !strings.Contains(v, "paused +1") || strings.Split(v, "\n")[12] != strings.Split(before, "\n")[12] {
		t.Fatalf("paused: the new heartbeat is not counted, or the rows moved:\n%s", v)
	}
	if e := ev.at(ev.sel()); e == nil || string(e.data) != `{"seq":28}` {
		t.Fatalf("paused: the cursor left its row for %+v", e)
	}
	keyMsgs(t, m, "g")
	v = tailText(ev)
	if !strings.Contains(v, `{"seq":0}`) || !strings.Contains(v, `›`) {
		t.Fatalf("g emptied the list or lost the cursor:\n%s", v)
	}
	if e := ev.at(ev.sel()); e == nil || string(e.data) != `{"seq":0}` {
		t.Fatalf("g: the cursor is on %+v, not the oldest heartbeat", e)
	}
	keyMsgs(t, m, "G")
	if e := ev.at(ev.sel()); e == nil || string(e.data) != `{"seq":99}` || ev.paused {
		t.Fatalf("G: the cursor is on %+v (paused %v), not the newest", e, ev.paused)
	}

	// The trace, filtered by text.
	m.update(feedMsg{items: sampleTrace()})
	keyMsgs(t, m, "t", "/", "result", "enter", "p", "g")
	tr := tailText(m.trace())
	if strings.Count(tr, "←") != 6 || strings.Contains(tr, "→") || !strings.Contains(tr, "›12:01:03.010") {
		t.Fatalf("trace, filtered, paused, g:\n%s", tr)
	}

	// A ring that drops rows under a view scrolled to its top.
	p := newEventsPane(pEvents, m.pc, 10)
	p.SetSize(60, 8)
	beats := func(from, to int) liveMsg {
		var ls []line
		for i := from; i < to; i++ {
			ls = append(ls, tailLine(t0, "s", "", EvHeartbeat, "health.heartbeat", []byte(fmt.Sprintf(`{"n":%d}`, i)), nil))
		}
		return liveMsg{lines: ls}
	}
	p.Update(beats(0, 10))
	p.Update(press("g")[0])
	p.Update(beats(10, 25))
	if v := tailText(p); !strings.Contains(v, `{"n":15}`) || strings.Count(v, `"n"`) != 6 {
		t.Fatalf("after the ring dropped the rows shown:\n%s", v)
	}
}

// TestEventsCursor: the events pane has a cursor the move keys and the
// mouse move; ⏎ opens the event under it whole, as JSON, its peer text
// escaped.
func TestEventsCursor(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	evil := "evil\x1b[2J\x1b]52;c;aGk=\x07"
	m.update(feedMsg{items: sampleTargets()}) // their notes first
	items := append(sampleEvents(), tailLine(t0.Add(9*time.Second), evil, "", EvNotification, "bad."+evil, []byte(`{"text":"`+strings.ReplaceAll(evil, "\x1b", `\u001b`)+`"}`), nil))
	m.update(feedMsg{items: items})
	m.update(winSize(240, 60))
	keyMsgs(t, m, "e", "k", "k", "k") // past the evil one, the request and a note
	ev := m.events()
	if ev.sel() != 3 {
		t.Fatalf("k k: the cursor is %d rows up", ev.sel())
	}
	keyMsgs(t, m, "enter")
	screen := ansi.Strip(m.render())
	for _, want := range []string{"Response · heartbeat health.heartbeat · songbird", `"source": "songbird"`, `"kind": "notification"`, `"name": "health.heartbeat"`, `"seq": 28`} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the inspected event lacks %q:\n%s", want, screen)
		}
	}
	if m.pc.focus != pEvents {
		t.Fatal("inspecting moved the focus on a wide screen")
	}
	// The newest, a peer's control characters in it: escaped everywhere.
	keyMsgs(t, m, "j", "j", "j", "enter")
	out := m.render()
	for _, bad := range []string{"\x1b[2J", "\x1b]52", "\x07"} {
		if strings.Contains(out, bad) {
			t.Fatalf("raw %q reached the screen", bad)
		}
	}
	if !strings.Contains(ansi.Strip(out), `"source": "evil\u001b[2J`) {
		t.Fatalf("the inspected event's source is not shown escaped:\n%s", ansi.Strip(out))
	}
	// A click puts the cursor on the row clicked.
	m.render()
	m.setFocus(pEvents)
	r := m.rects[pEvents]
	m.update(tea.MouseClickMsg{X: r.x + 3, Y: r.y + 1, Button: tea.MouseLeft})
	if top := ev.sel(); top != ev.shown-1 {
		t.Fatalf("a click on the top row put the cursor %d rows up (%d shown)", top, ev.shown)
	}
	// A payload cut at the bound is shown as the text kept, and says so.
	big := tailLine(t0, "s", "", EvEvent, "Big", []byte(`{"x":"`+strings.Repeat("a", maxEventData)+`"}`), nil)
	var doc struct {
		Payload string `json:"payload"`
		Cut     bool   `json:"payload_cut"`
	}
	if err := json.Unmarshal(eventJSON(&big), &doc); err != nil || !doc.Cut || len(doc.Payload) != maxEventData {
		t.Fatalf("a cut payload: %v cut=%v len=%d", err, doc.Cut, len(doc.Payload))
	}
}
