package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/events"
)

// TestEventsLostApartFromWindow floods the events tail past its ring (as
// 10,000 notifications a second do) while some events are really lost:
// the feed could not keep up with 7, and a peer's connection says it
// dropped 5 pushes. The title says how many were lost (12) apart from
// the window the ring keeps (the last 10,000 of all received), every
// figure whole at 120×35 and 80×24; it used to add both into one
// "dropped" figure, cut at 120×35.
func TestEventsLostApartFromWindow(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{120, 35}, {80, 24}, {200, 50}} {
		cfg := goldenConfig("dark")
		cfg.EventBuffer = 10000
		m, _ := testModel(t, cfg)
		m.update(winSize(sz.w, sz.h))
		m.setFocus(pEvents)
		const flood = 335014
		batch := make([]line, 0, 10000)
		for i := 0; i < flood; {
			batch = batch[:0]
			for ; i < flood && len(batch) < 10000; i++ {
				batch = append(batch, tailLine(t0, "primal", "", EvNotification, "dag.event", []byte(`{"seq":1}`), nil))
			}
			m.update(liveMsg{lines: batch, feedDropped: 7})
		}
		note := newLine("k", events.Event{Time: t0, Source: "primal", Kind: events.KindDropped, Payload: []byte(`{"dropped":5}`)})
		m.update(liveMsg{lines: []line{note}, feedDropped: 7})
		scr := ansi.Strip(m.render())
		var top string
		for _, l := range strings.Split(scr, "\n") {
			if strings.Contains(l, "Events") {
				top = l
				break
			}
		}
		window := fmt.Sprintf("last 10000 of %d", flood+1)
		if sz.w == 120 {
			window = "10k/335k" // a 32-cell pane: the window in short
		}
		for _, want := range []string{"lost 12", window} {
			if !strings.Contains(top, want) {
				t.Errorf("%dx%d: the events title does not say %q whole: %q", sz.w, sz.h, want, top)
			}
		}
		if strings.Contains(top, "dropped") {
			t.Errorf("%dx%d: the title still counts the window as dropped: %q", sz.w, sz.h, top)
		}
	}
}

// TestTraceWindowNotDropped: frames older than the trace's ring are its
// window, not a loss: the title says "last N of M", not "dropped".
func TestTraceWindowNotDropped(t *testing.T) {
	cfg := goldenConfig("dark")
	cfg.TraceBuffer = 10
	m, _ := testModel(t, cfg)
	m.setFocus(pTrace)
	var frames []TraceFrame
	for i := 0; i < 25; i++ {
		frames = append(frames, TraceFrame{Time: t0, Source: "p", Size: 2, Data: []byte("{}")})
	}
	m.update(liveMsg{frames: frames})
	_, right := m.trace().titles(m.pc.st)
	if r := ansi.Strip(right); !strings.Contains(r, "last 10 of 25") || strings.Contains(r, "dropped") {
		t.Fatalf("trace title %q", r)
	}
}
