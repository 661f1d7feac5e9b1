package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
)

// TestTargetsShownAsJudged watches a directory of answering sockets and
// silent ones (which accept and never answer) through the TUI's
// DiscoveryWatcher and feed, frame by frame as the program does: the
// targets are listed (as probing) before any is judged, and the first
// live one is on screen while every silent one is still being waited for.
// The whole sweep used to reach the pane only at its end, after the
// silent ones' stale timeout, with "No targets found" until then.
func TestTargetsShownAsJudged(t *testing.T) {
	const live, silent = 40, 20
	// Long: the silent ones are still waited for while the test looks
	// (the test ends well before, with the first live one).
	d := crowdDiscoverer(t, live, silent, discovery.ProbeOptions{StaleTimeout: 20 * time.Second})
	w := &DiscoveryWatcher{D: d, Opts: discovery.WatchOptions{Interval: time.Minute, MaxInterval: time.Minute, PollInterval: time.Minute}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, goldenConfig("dark"))
	m.manualFeed = true
	m.update(winSize(120, 35))

	out := make(chan discovery.Event, 256)
	watched := make(chan error, 1)
	go func() { watched <- w.Watch(ctx, out) }()
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		for {
			select {
			case te := <-out:
				m.feed.pushWait(ctx, te)
			case <-ctx.Done():
				return
			}
		}
	}()
	defer func() { cancel(); <-watched; <-pumped }()

	count := func(prefix string, h discovery.State) int {
		n := 0
		for _, tg := range m.pc.targets {
			if strings.HasPrefix(tg.Name, prefix) && tg.health() == h {
				n++
			}
		}
		return n
	}
	listed := false
	deadline := time.After(60 * time.Second) // a hang guard, not a timing
	for {
		msgc := make(chan tea.Msg, 1)
		go func() { msgc <- m.feed.next(ctx)() }()
		select {
		case msg := <-msgc:
			m.update(msg)
		case <-deadline:
			t.Fatalf("no live target on screen after 60 s (%d listed)", len(m.pc.targets))
		}
		scr := ansi.Strip(m.render())
		if judged := silent - count("mute", discovery.StateUnknown); judged > 0 {
			t.Fatalf("%d silent targets judged before any live one was on screen (%d of %d listed)", judged, len(m.pc.targets), live+silent)
		}
		if len(m.pc.targets) == live+silent && count("live", discovery.StateLive) == 0 {
			listed = true // every one found, none judged yet: all probing
			rows := targetRowCells(scr)
			if len(rows) == 0 {
				t.Fatalf("found targets not listed:\n%s", scr)
			}
			for _, r := range rows {
				if !strings.Contains(r, "…") { // the latency column of a target being probed
					t.Fatalf("a target not judged yet is not shown as probing (…):\n%s", r)
				}
			}
		}
		if strings.Contains(scr, "No targets found") && len(m.pc.targets) > 0 {
			t.Fatalf("%d targets known, the pane says none:\n%s", len(m.pc.targets), scr)
		}
		if count("live", discovery.StateLive) > 0 {
			for _, r := range targetRowCells(scr) {
				if strings.Contains(r, "live0") && strings.Contains(r, " ms") {
					if !listed {
						t.Log("the first live target came in the frame that listed them")
					}
					if n := count("mute", discovery.StateUnknown); n != silent {
						t.Fatalf("%d of %d silent targets still probing", n, silent)
					}
					return
				}
			}
		}
	}
}

// targetRowCells returns the targets pane's rows on screen, each cut at
// the pane's right border.
func targetRowCells(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if targetRowRE.MatchString(l) {
			if k := strings.Index(l[len("│"):], "│"); k >= 0 {
				l = l[:len("│")+k]
			}
			out = append(out, l)
		}
	}
	return out
}

// BenchmarkJudgedToScreen measures, with 2,000 targets listed and probing,
// the time from a target's verdict (discovery's Changed event, live)
// entering the feed to the frame that shows it live: the feed gathers one
// frame's worth (1/30 s), the model applies it, the screen is drawn.
func BenchmarkJudgedToScreen(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, goldenConfig("dark"))
	m.manualFeed = true
	m.update(winSize(120, 35))
	var probing []any
	for i := 0; i < 2000; i++ {
		name := fmt.Sprintf("t%04d", i)
		d := discovered("unix:///s/"+name, name, "unix:///s/"+name+".sock", discovery.StateLive)
		d.Probe = nil // found, not judged yet
		probing = append(probing, added(d)...)
	}
	m.update(feedMsg{items: probing})
	m.setFocus(pTargets)
	_ = m.render()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := *probing[0].(discovery.Event).Target
		d.Probe = &discovery.Probe{State: discovery.StateLive, Latency: time.Duration(i%9+1) * time.Millisecond}
		if i%2 == 1 {
			d.Probe = nil
		}
		m.feed.push(changed(&d))
		m.update(m.feed.next(ctx)())
		scr := ansi.Strip(m.render())
		if live := strings.Contains(scr, "● t0000"); live != (i%2 == 0) {
			b.Fatalf("frame %d: t0000 live on screen %v", i, live)
		}
	}
}

// TestFoundTargetsShowProbing lists targets found and not judged yet, and
// one judged live: the unjudged rows show the probing mark (…) in the
// latency column, the judged one its latency; what TestTargetsShownAsJudged
// asserts in the frames where a sweep has found all and judged none.
func TestFoundTargetsShowProbing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, goldenConfig("dark"))
	m.manualFeed = true
	m.update(winSize(120, 35))
	var items []any
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("t%04d", i)
		d := discovered("unix:///s/"+name, name, "unix:///s/"+name+".sock", discovery.StateLive)
		if i > 0 {
			d.Probe = nil // found, not judged yet
		} else {
			d.Probe = &discovery.Probe{State: discovery.StateLive, Latency: 3 * time.Millisecond}
		}
		items = append(items, added(d)...)
	}
	m.update(feedMsg{items: items})
	rows := targetRowCells(ansi.Strip(m.render()))
	if len(rows) != 5 {
		t.Fatalf("%d rows: %q", len(rows), rows)
	}
	for _, r := range rows {
		judged := strings.Contains(r, "t0000")
		if judged != strings.Contains(r, " ms") || judged == strings.Contains(r, "…") {
			t.Fatalf("row %q: judged %v", r, judged)
		}
	}
}
