package tui

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
)

// TestBusyStreamOneViewPerBusyFrame: bubbletea draws a whole View after
// every message it hands the model, so what the feed hands over decides
// how many Views a stream costs. A stream of 2,000 events a second (two
// a millisecond) for one second arrives in batches of busyFrame once it
// is busy: about 5 batches and Views, not one a frame (30: what it cost
// before busyFrame, 10 at a busyFrame of 100 ms; this test fails with
// either), and every event reaches the
// events pane. Once the stream is quiet again, the next event is handed
// over within a frame, not busyFrame.
func TestBusyStreamOneViewPerBusyFrame(t *testing.T) {
	m, _ := testModel(t, Config{Theme: "dark", Now: fixedNow, NoListen: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := func(i int) streamMsg {
		p, _ := json.Marshal(map[string]int{"seq": i})
		return streamMsg{key: "aflood", ev: events.Event{Time: fixedNow(), Source: "aflood", Kind: events.KindNotification, Name: "telemetry.tick", Payload: p}}
	}
	const perMS, run = 2, time.Second
	sent := make(chan int, 1)
	go func() {
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		start, n := time.Now(), 0
		for time.Since(start) < run {
			<-tk.C
			for due := int(time.Since(start)/time.Millisecond) * perMS; n < due; n++ {
				m.feed.pushWait(ctx, ev(n))
			}
		}
		sent <- n
	}()
	p := m.events()
	base := p.ring.total
	views, total := 0, -1
	wasBusy := false // the last batch may be small: busy is judged during the run
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case total = <-sent:
		default:
		}
		if total >= 0 && int(p.ring.total-base+p.feedLost) >= total {
			break
		}
		m.update(m.feedCmd()())
		wasBusy = wasBusy || m.busy
		_ = m.View()
		views++
	}
	if total < 0 || int(p.ring.total-base+p.feedLost) < total {
		t.Fatalf("%d of %d events reached the events pane", p.ring.total-base, total)
	}
	if p.feedLost != 0 {
		t.Errorf("%d events lost", p.feedLost)
	}
	// At most 5 batches a second once busy (10 at 100 ms: a third of the
	// TUI's CPU under bench/flood went to the Views and flushes that
	// follow them), plus the first batches (a frame each) and the last.
	want := int(run/(200*time.Millisecond)) + 4
	t.Logf("%d events in %d batches and Views over %v", total, views, run)
	if views > want {
		t.Errorf("%d events took %d Views; a busy stream is handed over every %v (at most %d)", total, views, busyFrame, want)
	}
	if !wasBusy {
		t.Error("a second of 2,000 events a second never made the stream busy")
	}
	// Quiet again: one batch of busyFrame empties the stream's state.
	m.feed.push(ev(-1))
	m.update(m.feedCmd()())
	if m.busy {
		t.Fatal("a batch of one event left the stream busy")
	}
	m.feed.push(ev(-2))
	t0 := time.Now()
	m.update(m.feedCmd()())
	if d := time.Since(t0); d >= busyFrame {
		t.Errorf("a quiet stream's event was handed over after %v (a frame is %v)", d, m.feed.frame)
	}
}

// TestBusyRateCountsArrivals: the header's events a second counts each
// event in the second it arrived in, not the one its batch was applied
// in. A steady 10,000 a second handed over every 230 ms (busyFrame and
// the program's own delay) falls four or five batches to a second:
// counted when applied, the header read 9,200 or 11,500; counted when
// they arrived, 10,000. A peer's clock (an event stream's time, past
// now) counts at now, and cannot stop the count.
func TestBusyRateCountsArrivals(t *testing.T) {
	start := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	clock := start
	m, _ := testModel(t, Config{Theme: "dark", Now: func() time.Time { return clock }, NoListen: true})
	const rate, period = 10000, 230 * time.Millisecond
	per := int(rate * period / time.Second)
	for b := 1; clock.Sub(start) < 5*time.Second; b++ {
		from := clock
		clock = start.Add(time.Duration(b) * period)
		lines := make([]line, per)
		for i := range lines {
			at := from.Add(time.Duration(i) * period / time.Duration(per))
			lines[i] = tailLine(at, "aflood", "aflood", EvNotification, "telemetry.tick", []byte(`{}`), nil)
		}
		m.update(feedMsg{lines: lines})
		if clock.Sub(start) < 2*time.Second {
			continue
		}
		if got := m.rate.rate(clock); got < rate*98/100 || got > rate*102/100 {
			t.Fatalf("at %v the header says %d events a second, want %d", clock.Sub(start), got, rate)
		}
	}
	// A line stamped an hour ahead (a peer's clock) counts now, and the
	// next second's count goes on.
	m.update(feedMsg{lines: []line{tailLine(clock.Add(time.Hour), "sse", "sse", EvEvent, "e", []byte(`{}`), nil)}})
	clock = clock.Add(time.Second)
	m.update(feedMsg{lines: []line{tailLine(clock, "aflood", "aflood", EvNotification, "t", []byte(`{}`), nil)}})
	if got := m.rate.rate(clock); got < 1 {
		t.Fatalf("after a line from a peer's future the header says %d events a second", got)
	}
}
