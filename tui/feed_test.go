package tui

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// feedTaken is what the feed holds, taken as a feedMsg it did not make
// (tests that read the feed themselves).
func feedTaken(f *feed) feedMsg {
	b := f.take()
	return feedMsg{items: b.items, lines: b.lines, frames: b.frames}
}

// TestFeedFrameBuffers: the feed hands a frame's items over in one
// message, in order, capped at its max (the rest wait for the next frame),
// and reuses the buffers the model gave back, cleared, instead of growing
// new ones each frame; a feedMsg the feed did not make is never reused or
// cleared (tests and benchmarks apply their own slices again).
func TestFeedFrameBuffers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFeed(64, 20*time.Millisecond)
	f.max = 5
	for i := 0; i < 7; i++ {
		if !f.push(i) || !f.push(noteLine(fixedNow(), "p", fmt.Sprint(i), "")) {
			t.Fatal("the feed refused an item with room")
		}
	}
	first := f.next(ctx)().(feedMsg)
	titles := func(ls []line) (s []string) {
		for _, l := range ls {
			s = append(s, l.title)
		}
		return s
	}
	if !first.fromFeed || fmt.Sprint(first.items) != "[0 1 2 3 4]" || fmt.Sprint(titles(first.lines)) != "[0 1 2 3 4]" {
		t.Fatalf("first frame %v %v (fromFeed %v), want [0 1 2 3 4] twice from the feed", first.items, titles(first.lines), first.fromFeed)
	}
	buf, lbuf := &first.items[:1][0], &first.lines[:1][0]
	f.giveBack(first)
	// Given back, the buffers hold what waited (5 and 6), moved in, and
	// nothing of their batch.
	if first.items[0] != 5 || first.items[2] != nil || first.lines[0].title != "5" || first.lines[2].title != "" {
		t.Fatalf("a buffer given back holds %v", first.items)
	}
	second := f.next(ctx)().(feedMsg)
	if fmt.Sprint(second.items) != "[5 6]" || fmt.Sprint(titles(second.lines)) != "[5 6]" {
		t.Fatalf("second frame %v %v, want [5 6] twice", second.items, titles(second.lines))
	}
	if &second.items[0] != buf || &second.lines[0] != lbuf {
		t.Fatal("the second frame did not reuse the buffers given back")
	}

	m := benchModel(t, 120, 35)
	own := []any{TraceFrame{Source: "p", Dir: ipc.In, Data: []byte(`{}`)}}
	m.update(feedMsg{items: own})
	if own[0] == nil {
		t.Fatal("update cleared a feedMsg the feed did not make")
	}
}

// TestFeedPushAllocatesNothing: a tail line or a trace frame pushed into
// the feed is copied into a buffer of its type: once the buffers have
// grown, a push allocates nothing (the `chan any` it replaces boxed each
// one: two allocations a notification under bench/flood), and a new feed
// does not allocate its 65,536 places up front (1 MiB of the chan's).
func TestFeedPushAllocatesNothing(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f := newFeed(65536, time.Millisecond)
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<10 {
		t.Errorf("a new feed allocated %d bytes", d)
	}
	l := tailLine(fixedNow(), "aflood", "", EvNotification, "tick", []byte(`{}`), nil)
	fr := TraceFrame{Time: fixedNow(), Source: "aflood", Dir: ipc.In, Size: 2, Data: []byte(`{}`)}
	batch := func() {
		for i := 0; i < 100; i++ {
			f.pushLine(l)
			f.pushFrame(fr)
		}
		f.giveBack(feedTaken(f))
	}
	batch()
	if a := testing.AllocsPerRun(20, batch); a != 0 {
		t.Fatalf("%v allocations for a batch of 100 lines and 100 frames through the feed, want none", a)
	}
	// A source's notifications: their payloads are copied into shared
	// allocations (4 KiB for about 80 of these), not one each.
	s := streamMsg{key: "k", ev: events.Event{Time: fixedNow(), Source: "aflood", Kind: events.KindNotification, Name: "telemetry.tick",
		Payload: []byte(`{"seq":12345,"source":"aflood","value":42}`)}}
	streams := func() {
		for i := 0; i < 100; i++ {
			f.pushStream(s)
		}
		b := feedTaken(f)
		if string(b.lines[99].data) != string(s.ev.Payload) || cap(b.lines[99].data) != len(s.ev.Payload) {
			t.Fatalf("a notification's line holds %q (capacity %d)", b.lines[99].data, cap(b.lines[99].data))
		}
		f.giveBack(b)
	}
	streams()
	if a := testing.AllocsPerRun(20, streams); a > 2 {
		t.Fatalf("%v allocations for 100 notifications through the feed, want 2 at most", a)
	}
}

// TestFeedLetsBurstBuffersGo: the buffers a burst grew are not kept once
// the batches are small again (the feed holds two sets of them: 248
// bytes a line); a batch's own size is kept.
func TestFeedLetsBurstBuffersGo(t *testing.T) {
	f := newFeed(65536, time.Millisecond)
	l := tailLine(fixedNow(), "aflood", "", EvNotification, "tick", []byte(`{}`), nil)
	batch := func(n int) feedMsg {
		for range n {
			f.pushLine(l)
			f.pushFrame(TraceFrame{Source: "p"})
		}
		b := f.take()
		msg := feedMsg{items: b.items, lines: b.lines, frames: b.frames, fromFeed: true}
		f.giveBack(msg)
		return msg
	}
	steady := batch(2000)
	batch(2000)
	if again := batch(2000); &again.lines[0] != &steady.lines[0] || &again.frames[0] != &steady.frames[0] {
		t.Fatal("a steady stream's buffers were not reused")
	}
	batch(8000)
	batch(8000)
	batch(10)
	batch(10)
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := cap(f.q.lines) + cap(f.q.frames); c > 2*keptSpare {
		t.Fatalf("after a burst of 8,000 and small batches the feed keeps %d places", c)
	}
}

// TestFeedHoldsOneSetOfBuffers: while a batch is applied, what is pushed
// waits in new buffers, and once the batch's are given back it is moved
// into them: the feed then holds one set of a batch's size, not the last
// batch's as a spare beside those the next one fills (1.4 MB at 10,000
// notifications a second). Nothing is lost or reordered on the way.
func TestFeedHoldsOneSetOfBuffers(t *testing.T) {
	f := newFeed(65536, time.Millisecond)
	push := func(from, n int) {
		for i := from; i < from+n; i++ {
			f.pushLine(noteLine(fixedNow(), "p", fmt.Sprint(i), ""))
			f.pushFrame(TraceFrame{Source: fmt.Sprint(i)})
		}
	}
	push(0, 2000)
	b := f.take()
	push(2000, 30) // pushed while the batch is applied
	msg := feedMsg{items: b.items, lines: b.lines, frames: b.frames, fromFeed: true}
	big := &b.lines[:1][0]
	f.giveBack(msg)
	f.mu.Lock()
	held := cap(f.q.lines)
	moved := len(f.q.lines) > 0 && &f.q.lines[:1][0] == big
	f.mu.Unlock()
	if !moved || held > 2*2000 {
		t.Fatalf("after giveBack the feed's lines are in another buffer (moved %v), holding %d places", moved, held)
	}
	push(2030, 10)
	next := f.take()
	if len(next.lines) != 40 || len(next.frames) != 40 {
		t.Fatalf("the next batch has %d lines and %d frames, want 40 and 40", len(next.lines), len(next.frames))
	}
	for i := range next.lines {
		if next.lines[i].title != fmt.Sprint(2000+i) || next.frames[i].Source != fmt.Sprint(2000+i) {
			t.Fatalf("place %d holds line %s and frame %s", i, next.lines[i].title, next.frames[i].Source)
		}
	}
}

// TestFeedFullDropsAndWaits: a full feed drops what is pushed without
// waiting and counts it (lines as lost events too), while pushWait waits
// for the next take and then goes in; nothing is counted twice.
func TestFeedFullDropsAndWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f := newFeed(2, time.Millisecond)
	l := tailLine(fixedNow(), "aflood", "", EvNotification, "tick", []byte(`{}`), nil)
	if !f.pushLine(l) || !f.pushFrame(TraceFrame{Source: "p"}) {
		t.Fatal("refused with room")
	}
	if f.pushLine(l) || f.pushFrame(TraceFrame{Source: "p"}) || f.push(1) {
		t.Fatal("a full feed took more")
	}
	if f.dropped.Load() != 3 || f.droppedEvents.Load() != 1 {
		t.Fatalf("dropped %d (events %d), want 3 (1)", f.dropped.Load(), f.droppedEvents.Load())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.pushWait(ctx, "must arrive")
	}()
	select {
	case <-done:
		t.Fatal("pushWait did not wait on a full feed")
	case <-time.After(20 * time.Millisecond):
	}
	if b := f.take(); len(b.lines) != 1 || len(b.frames) != 1 {
		t.Fatalf("took %d lines and %d frames, want 1 and 1", len(b.lines), len(b.frames))
	}
	<-done
	if b := f.take(); fmt.Sprint(b.items) != "[must arrive]" {
		t.Fatalf("after the wait the feed held %v", b.items)
	}
	if f.waiting() != 0 {
		t.Fatalf("%d still waiting", f.waiting())
	}
}

// TestAbsorbLendsFeedBuffers: a batch of lines and trace frames from the
// feed reaches the panes in the feed's own buffers (given back after),
// not copied into buffers of the model's, which would keep a third set
// of a batch's size (260 bytes a line) and copy every line once more;
// what reaches the panes is the same.
func TestAbsorbLendsFeedBuffers(t *testing.T) {
	m := benchModel(t, 120, 35)
	ev := m.events()
	for i := 0; i < 300; i++ {
		m.feed.pushLine(tailLine(fixedNow(), "aflood", "", EvNotification, "tick", []byte(`{}`), nil))
		m.feed.pushFrame(TraceFrame{Time: fixedNow(), Source: "aflood", Dir: ipc.In, Size: 2, Data: []byte(`{}`)})
	}
	base := ev.ring.total
	msg := feedTaken(m.feed)
	msg.fromFeed = true
	m.update(msg)
	if cap(m.lineBuf) != 0 || cap(m.frameBuf) != 0 {
		t.Fatalf("the model copied the batch into buffers of its own (%d lines, %d frames)", cap(m.lineBuf), cap(m.frameBuf))
	}
	if got := ev.ring.total - base; got != 300 {
		t.Fatalf("%d lines reached the events pane, want 300", got)
	}
	if msg.lines[0].title != "" || msg.frames[0].Data != nil {
		t.Fatal("the feed's buffers still hold the batch once given back")
	}
}

// TestAbsorbReusesFrameBuffers: a frame of trace frames and lines is
// handed to the panes in buffers the model keeps: once they have grown,
// applying another frame of the same size allocates nothing for them
// (they grew anew every frame: 480 bytes a notification under a flood).
func TestAbsorbReusesFrameBuffers(t *testing.T) {
	m := benchModel(t, 120, 35)
	items := make([]any, 0, 600)
	for i := 0; i < 300; i++ {
		items = append(items, TraceFrame{Time: fixedNow(), Source: "p", Dir: ipc.In, Size: 2, Data: []byte(`{}`)})
	}
	m.absorb(items)
	frames := &m.frameBuf[:1][0]
	m.absorb(items)
	if &m.frameBuf[:1][0] != frames {
		t.Fatal("the trace frames' buffer was not reused from one frame to the next")
	}
	if m.frameBuf[:1][0].Data != nil {
		t.Fatal("the kept buffer still holds the last frame's trace frames")
	}
}

// TestListenConnectionsArePaced: the connections the TUI listens on read
// at most once per listenReadPace while the peer sends little (a flood of
// small notifications is read in batches), and hand what is pushed on as
// they read it (ipc.Options.Push: no queue of unread messages, no
// goroutine to read one); the connections calls use read at once (an
// answer waits for nothing) and keep ipc's queue.
func TestListenConnectionsArePaced(t *testing.T) {
	_, tg := startPrimal(t)
	paces := make(chan time.Duration, 8)
	pushed := make(chan bool, 8)
	cfg := goldenConfig("dark")
	cfg.NoListen, cfg.MaxListen = false, 4
	cfg.Dial = func(ctx context.Context, d *discovery.Target, opts ipc.Options) (*ipc.Conn, error) {
		paces <- opts.ReadPace
		pushed <- opts.Push != nil && opts.Reader != nil
		return defaultDialer(ctx, d, opts)
	}
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: added(tg)})
	select {
	case p := <-paces:
		if p != listenReadPace || p <= 0 {
			t.Fatalf("the listener dialled with ReadPace %v, want %v", p, listenReadPace)
		}
		if !<-pushed {
			t.Fatal("the listener dialled without Push or Reader: what it hears waits in a queue of its own, read by goroutines of its own")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not dial")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.pc.client.send(ctx, tg, ipc.Request{Method: "crypto.sign_ed25519", Params: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if p, push := <-paces, <-pushed; p != 0 || push {
		t.Fatalf("a call's connection was dialled with ReadPace %v and Push %v, want 0 and none (the defaults)", p, push)
	}
}

// TestTraceDataKeepsReadFrames: a frame a connection read (Kept) and
// small is kept as it is, not copied again; one it may reuse (written
// frames) or a large one is copied, bounded.
func TestTraceDataKeepsReadFrames(t *testing.T) {
	frame := []byte(`{"jsonrpc":"2.0","method":"tick","params":{}}`)
	if d := traceData(ipc.TraceEvent{Dir: ipc.In, Data: frame, Kept: true}); &d[0] != &frame[0] || string(d) != string(frame) {
		t.Fatal("a kept frame read was copied")
	}
	if d := traceData(ipc.TraceEvent{Dir: ipc.Out, Data: frame}); &d[0] == &frame[0] || string(d) != string(frame) {
		t.Fatal("a frame that may be reused was not copied")
	}
	big := make([]byte, 10, maxEventData+1)
	if d := traceData(ipc.TraceEvent{Dir: ipc.In, Data: big, Kept: true}); &d[0] == &big[0] {
		t.Fatal("a frame in a large buffer was kept whole")
	}
}

// TestTargetsRowsDrawnOnceUntilChanged: a frame that changes nothing in
// the targets pane reuses its rows as drawn (a flood on the events tail
// redraws the screen 30 times a second); a target that changes, the
// cursor, the width and the theme each draw the rows they touch again.
func TestTargetsRowsDrawnOnceUntilChanged(t *testing.T) {
	m := benchModel(t, 120, 35)
	m.update(feedMsg{items: crowdTargets(50)})
	p := m.panes[pTargets].(*targetsPane)
	screen := m.render()
	if len(p.drawn) == 0 {
		t.Fatal("no rows kept as drawn")
	}
	first := unsafe.StringData(p.drawn[1].s)
	m.update(feedMsg{items: []any{tailLine(fixedNow(), "aflood", "", EvNotification, "tick", []byte(`{}`), nil)}})
	if m.render() == screen {
		t.Fatal("the event did not show")
	}
	if unsafe.StringData(p.drawn[1].s) != first {
		t.Fatal("a row nothing changed was drawn again")
	}
	// The target of row 1 changes: its latency shows.
	k := p.rows[1].key
	d := *m.pc.targets[k].Target
	pr := *d.Probe
	pr.Latency = 987 * time.Millisecond
	d.Probe = &pr
	m.update(feedMsg{items: []any{changed(&d)}})
	if !strings.Contains(m.render(), "987") {
		t.Fatal("a changed target's row was not drawn again")
	}
	m.setFocus(pTargets)
	before := p.sel
	m.update(press("j")[0])
	if p.sel == before {
		t.Fatal("j did not move the targets cursor")
	}
	name := m.pc.targets[p.rows[p.sel].key].Name
	for _, l := range strings.Split(ansi.Strip(m.render()), "\n") {
		if strings.Contains(l, "›") && !strings.Contains(l, name) {
			t.Fatalf("the cursor's row %q is not %s's", l, name)
		}
	}
	m.update(tea.WindowSizeMsg{Width: 100, Height: 30})
	for _, l := range strings.Split(m.render(), "\n") {
		if ansi.StringWidth(l) > 100 {
			t.Fatalf("a row drawn for the old width: %q", l)
		}
	}
}

// TestBoxEdgesKept: a box's borders are drawn once for what they show and
// reused; a new title, note, width or focus draws them anew, the same as
// drawing them fresh.
func TestBoxEdgesKept(t *testing.T) {
	st := newStyles(themes.Default(true))
	body := []string{"a", "b"}
	first := st.box(40, 4, "Events · all", "12 of 100", true, body)
	if len(st.edges) != 2 {
		t.Fatalf("%d borders kept after one box, want its top and bottom", len(st.edges))
	}
	again := st.box(40, 4, "Events · all", "12 of 100", true, body)
	if strings.Join(again, "\n") != strings.Join(first, "\n") {
		t.Fatal("a box drawn again from kept borders differs")
	}
	for _, c := range []struct {
		w            int
		title, right string
		focused      bool
	}{{40, "Events · all", "13 of 100", true}, {40, "Trace", "12 of 100", true}, {50, "Events · all", "12 of 100", true}, {40, "Events · all", "12 of 100", false}} {
		kept := st.box(c.w, 4, c.title, c.right, c.focused, body)
		fresh := newStyles(themes.Default(true)).box(c.w, 4, c.title, c.right, c.focused, body)
		if strings.Join(kept, "\n") != strings.Join(fresh, "\n") {
			t.Fatalf("%+v: drawn with kept borders %q, fresh %q", c, kept, fresh)
		}
	}
	for i := 0; i < 3*maxEdges; i++ {
		st.box(40, 4, fmt.Sprint(i), "", false, body)
	}
	if len(st.edges) > maxEdges {
		t.Fatalf("%d borders kept, more than %d", len(st.edges), maxEdges)
	}
}
