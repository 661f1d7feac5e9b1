package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// feed carries everything live sources produce to the program: target
// events, tail events and trace frames. Producers never block on it for
// high-volume items (they are dropped and counted); the program reads it
// through one outstanding command that coalesces a frame's worth of items.
//
// The two kinds a flood is made of, tail lines and trace frames, wait in
// slices of their own type, so pushing one copies it in and allocates
// nothing once the slices have grown (a `chan any` boxed each: two
// allocations a notification, and its 65,536 slots were allocated whole,
// 1 MiB before the first item). The rest (targets, the listener's ends, a
// crash) wait in order in items. Lines keep their order among lines and
// frames among frames; the program applies a batch's items, then its
// lines, then its frames, which go to different panes.
type feed struct {
	mu sync.Mutex
	// q is what waits, not yet taken. Its buffers are those of the last
	// batch, given back (giveBack): the feed holds one set of a batch's
	// size, not two.
	q feedBatch
	// n is how many items, lines and frames wait; size bounds it.
	n, size int
	// wake holds a token once something waits (the reader's wake-up).
	wake chan struct{}
	// room, when not nil, is closed by the next take: pushWait waits on it
	// while the feed is full.
	room    chan struct{}
	dropped atomic.Uint64
	// droppedEvents counts the events tail's lines among dropped: events
	// received that the program could not keep up with.
	droppedEvents atomic.Uint64
	frame         time.Duration
	max           int
	// payloads is where the lines of sources' events keep their payloads.
	payloads payloadGroups
}

// feedBatch is what waits in the feed, or a batch taken from it.
type feedBatch struct {
	items  []any
	lines  []line
	frames []TraceFrame
}

func (b *feedBatch) len() int { return len(b.items) + len(b.lines) + len(b.frames) }

func newFeed(size int, frame time.Duration) *feed {
	return &feed{size: size, wake: make(chan struct{}, 1), frame: frame, max: 8192}
}

// admitLocked reports whether one more item fits, counting it as waiting
// and waking the reader when it is the first. Called with f.mu held.
func (f *feed) admitLocked() bool {
	if f.n >= f.size {
		return false
	}
	f.n++
	if f.n == 1 {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// push offers x without blocking; a full feed drops it and counts. It
// reports whether x went in. A line, a streamMsg (made a line here, off
// the program's goroutine) or a TraceFrame goes where pushLine or
// pushFrame puts it.
func (f *feed) push(x any) bool {
	switch x := x.(type) {
	case line:
		return f.pushLine(x)
	case streamMsg:
		return f.pushStream(x)
	case TraceFrame:
		return f.pushFrame(x)
	}
	return offer(f, &f.q.items, x, false)
}

// offer appends x to q (one of f.q's queues) when the feed has room, or
// counts it dropped (as an event too when event is set). It reports
// whether x went in. q is the address of a field of f.q, which take
// empties in place.
func offer[T any](f *feed, q *[]T, x T, event bool) bool {
	f.mu.Lock()
	ok := f.admitLocked()
	if ok {
		*q = append(*q, x)
	}
	f.mu.Unlock()
	if !ok {
		f.dropped.Add(1)
		if event {
			f.droppedEvents.Add(1)
		}
	}
	return ok
}

// pushLine offers a tail line without blocking (see push).
func (f *feed) pushLine(l line) bool { return offer(f, &f.q.lines, l, true) }

// pushStream offers a source's event as its tail line (see push).
func (f *feed) pushStream(s streamMsg) bool { return f.pushLine(f.lineOf(s)) }

// lineOf is a source's event as its tail line, its payload copied into
// the feed's shared blocks (off the program's goroutine).
func (f *feed) lineOf(s streamMsg) line {
	l := newLineIn(s.key, s.ev, &f.payloads)
	l.reply, l.conn = s.reply, s.conn
	return l
}

// pushFrame offers a trace frame without blocking (see push).
func (f *feed) pushFrame(t TraceFrame) bool { return offer(f, &f.q.frames, t, false) }

// pushWait offers x, waiting while ctx lives (for items that must arrive).
func (f *feed) pushWait(ctx context.Context, x any) {
	if s, ok := x.(streamMsg); ok {
		x = f.lineOf(s)
	}
	for {
		f.mu.Lock()
		if f.admitLocked() {
			switch x := x.(type) {
			case line:
				f.q.lines = append(f.q.lines, x)
			case TraceFrame:
				f.q.frames = append(f.q.frames, x)
			default:
				f.q.items = append(f.q.items, x)
			}
			f.mu.Unlock()
			return
		}
		if f.room == nil {
			f.room = make(chan struct{})
		}
		room := f.room
		f.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return
		}
	}
}

// waiting is how many items wait in the feed.
func (f *feed) waiting() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// take hands over what waits, at most max of each kind (the rest wait
// for the next batch), in the buffers given back after the last batch;
// what is pushed meanwhile waits in new ones, until giveBack.
func (f *feed) take() feedBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.q
	f.q = feedBatch{}
	if len(b.items) > f.max {
		f.q.items = append(f.q.items, b.items[f.max:]...)
		clear(b.items[f.max:])
		b.items = b.items[:f.max]
	}
	if len(b.lines) > f.max {
		f.q.lines = append(f.q.lines, b.lines[f.max:]...)
		clear(b.lines[f.max:])
		b.lines = b.lines[:f.max]
	}
	if len(b.frames) > f.max {
		f.q.frames = append(f.q.frames, b.frames[f.max:]...)
		clear(b.frames[f.max:])
		b.frames = b.frames[:f.max]
	}
	f.n = f.q.len()
	if f.n > 0 {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	if f.room != nil {
		close(f.room)
		f.room = nil
	}
	return b
}

// feedMsg is a frame's worth of live items. fromFeed says its buffers are
// the feed's own, given back once they are applied.
type feedMsg struct {
	items    []any
	lines    []line
	frames   []TraceFrame
	fromFeed bool
}

// next waits for the first item, gathers what else arrives within one frame,
// and returns them together. It blocks (costing nothing) while idle. While
// the frame lasts it sleeps and then takes what came: one wake-up a frame,
// not one an item (a flood pushes thousands a second). The items go out in
// the buffers the model gave back after the last frame (giveBack).
func (f *feed) next(ctx context.Context) tea.Cmd { return f.nextIn(ctx, f.frame) }

// nextIn is next gathering for window rather than one frame.
func (f *feed) nextIn(ctx context.Context, window time.Duration) tea.Cmd {
	return func() tea.Msg {
		for f.waiting() == 0 {
			select {
			case <-f.wake:
			case <-ctx.Done():
				return nil
			}
		}
		t := time.NewTimer(window)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		b := f.take()
		return feedMsg{items: b.items, lines: b.lines, frames: b.frames, fromFeed: true}
	}
}

// giveBack takes a batch's buffers back, once the model is done with
// them (they are cleared: they hold nothing alive), and moves what was
// pushed since the batch was taken (a few milliseconds' worth) into them:
// the next batch fills them. Only one set of a batch's size is held
// (keeping the last batch's as a spare while the next filled its own
// held two: 1.4 MB at 10,000 notifications a second, a line being 248
// bytes and a frame 104). A buffer much bigger than its batch (grown by
// a burst) is let go.
func (f *feed) giveBack(msg feedMsg) {
	clear(msg.items)
	clear(msg.lines)
	clear(msg.frames)
	f.mu.Lock()
	f.q.items = refill(kept(msg.items), f.q.items)
	f.q.lines = refill(kept(msg.lines), f.q.lines)
	f.q.frames = refill(kept(msg.frames), f.q.frames)
	f.mu.Unlock()
}

// refill is q, what waits, moved into b, an empty buffer given back
// (q itself when b is nil or too small).
func refill[T any](b, q []T) []T {
	if b == nil || len(q) > cap(b) {
		return q
	}
	return append(b, q...)
}

// keptSpare is how many places a buffer given back keeps whatever its
// batch held (past it, at most twice its batch).
const keptSpare = 256

// kept is b emptied, or nil when its capacity is much more than its
// batch needed.
func kept[T any](b []T) []T {
	if cap(b) > max(keptSpare, 2*len(b)) {
		return nil
	}
	return b[:0]
}

// client owns the connections the TUI calls through. It is used only from
// commands (never from Update) and is safe for concurrent use.
type client struct {
	ctx context.Context
	// dialer is the one dialer the CLI shares (internal/dial): it decides
	// the security, the wire and the endpoint of every connection.
	dialer *dial.Dialer
	// dial, when set, stands in for the connection step (tests).
	dial Dialer
	feed *feed

	mu     sync.Mutex
	conns  map[string]*ipc.Conn
	closed bool // after close, no connection is kept (commands may still dial)
	wg     sync.WaitGroup
}

// newClient returns a client dialling with sec and maxFrame (a dialer of
// its own: useDialer gives it the run's).
func newClient(ctx context.Context, dialFn Dialer, f *feed, maxFrame int64, sec ipc.Security) *client {
	d, err := dial.New(dial.Settings{Security: sec, Family: sec.Family, MaxFrame: maxFrame})
	if err != nil { // cannot happen: no wire is named
		panic(err)
	}
	return &client{ctx: ctx, dialer: d, dial: dialFn, feed: f, conns: map[string]*ipc.Conn{}}
}

// useDialer makes the client dial through d (the run's one dialer, which
// the CLI's commands use too); nil keeps its own.
func (c *client) useDialer(d *dial.Dialer) {
	if d != nil {
		c.dialer = d
	}
}

// dialTarget is the one dialer's view of a discovered target.
func dialTarget(t *discovery.Target) (dial.Target, error) {
	dt := dial.FromDiscovery(t)
	if dt.Endpoint.Transport == "" {
		ep, err := ipc.ParseEndpoint(t.Address)
		if err != nil {
			return dial.Target{}, &ipc.DialError{Endpoint: t.Address, Err: err}
		}
		dt.Endpoint = ep
	}
	return dt, nil
}

// secured says whether the one dialer sends t nothing in cleartext (it
// requires BTSP, or its name or directory shows it is family-scoped).
func (c *client) secured(t *discovery.Target) bool {
	if t.BTSP() {
		return true
	}
	dt, err := dialTarget(t)
	if err != nil {
		return false
	}
	sec := c.dialer.Security(dt)
	return sec.RequireBTSP || sec.FamilyScoped
}

// seedRefusal is the one dialer's judgement of t (dial.SeedRefusal): the
// refusal a call to t meets for want of a seed offered to it, nil when it
// gets one. It reads t's directory: run it in a command, never in Update.
func (c *client) seedRefusal(t *discovery.Target) *ipc.BTSPRequiredError {
	dt, err := dialTarget(t)
	if err != nil {
		return nil // not dialled at all: the call says why
	}
	return c.dialer.SeedRefusal(dt)
}

// record is the history entry of a call made on t (recordFor), with what
// the connection it went on says of its transport ("unix+ribocipher",
// "unix+btsp(…)"), as the CLI records it: a replay or an exported command
// then knows the prefix and the BTSP session the call needed.
func (c *client) record(t *discovery.Target, req ipc.Request, start time.Time, resp *ipc.Response, err error) history.Entry {
	e := recordFor(t, req, start, resp, err)
	c.mu.Lock()
	cn := c.conns[t.ID]
	c.mu.Unlock()
	if cn != nil {
		if d := cn.Transport(); d != "" {
			e.Transport = d
		}
	}
	e.Prefix = strings.Contains(e.Transport, "ribocipher")
	return e
}

// conn returns the open connection to t, dialling it when needed.
func (c *client) conn(ctx context.Context, t *discovery.Target) (*ipc.Conn, error) {
	c.mu.Lock()
	if cn, ok := c.conns[t.ID]; ok {
		select {
		case <-cn.Done():
			delete(c.conns, t.ID)
			// Release the socket of a connection that ended by itself, off
			// the lock (closing a stdio peer can wait for the process).
			defer cn.Close()
		default:
			c.mu.Unlock()
			return cn, nil
		}
	}
	c.mu.Unlock()
	src := t.Name
	dctx := ctx
	if tr := t.Endpoint.Transport; tr == ipc.WS || tr == ipc.WSS {
		// A holon session lives as long as the context it was opened with
		// (it reconnects inside), so it gets the client's, not the call's.
		dctx = c.ctx
	}
	cn, err := c.open(dctx, t, nil, nil)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cn.Close()
		return nil, &ipc.ClosedError{Cause: errors.New("primalscope is quitting")}
	}
	if old, ok := c.conns[t.ID]; ok {
		c.mu.Unlock()
		cn.Close()
		return old, nil
	}
	c.conns[t.ID] = cn
	c.wg.Add(1) // under the lock, so close never waits on a group that grows after it
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		var reported uint64
		for m := range cn.Incoming() {
			if d := cn.Dropped(); d > reported {
				// Pushes the connection dropped while this reader was
				// behind are said, not lost quietly.
				l := noteLine(time.Now(), src, fmt.Sprintf("%d pushed message(s) dropped (arriving faster than shown)", d-reported), "")
				l.key, l.lost = t.ID, d-reported
				if c.feed.pushLine(l) {
					reported = d
				}
			}
			l := messageLine(src, t.ID, m)
			if l.kind == EvRequest {
				// Answered on this connection, never on a later one.
				l.conn, l.reply = requestOn(cn, l.id)
			}
			c.feed.pushLine(l)
		}
		// The connection ended (by the peer, or a broken frame): close it so
		// its socket is released, not only forgotten.
		cn.Close()
		c.mu.Lock()
		if c.conns[t.ID] == cn {
			delete(c.conns, t.ID)
		}
		c.mu.Unlock()
		why := ""
		if err := cn.Err(); err != nil {
			why = err.Error()
		}
		note := noteLine(time.Now(), src, "connection closed", why)
		note.key = t.ID
		c.feed.pushWait(c.ctx, note)
	}()
	return cn, nil
}

// open dials a new connection to t (not kept: conn keeps the ones calls
// use) through the one dialer, which decides its security and wire; every
// frame goes to the trace pane, and then to trace when it is not nil.
// listen, when set, says the connection only listens: it reads at most
// once per listenReadPace while the peer sends little, on its source's
// goroutine, and hands what the peer pushes to the source as it reads it
// (listenPush); a connection that calls reads at once.
func (c *client) open(ctx context.Context, t *discovery.Target, trace func(ipc.TraceEvent), listen *events.PushDial) (*ipc.Conn, error) {
	dt, err := dialTarget(t)
	if err != nil {
		return nil, err
	}
	src := t.Name
	// The same decisions as the CLI's, made by the same dialer at every
	// dial: a call or a listen made before the target's probe has finished
	// (or when it failed) sends nothing in cleartext to a family-scoped name.
	o := dial.Options{
		Persistent: true,
		Trace: func(ev ipc.TraceEvent) {
			c.feed.pushFrame(TraceFrame{Time: ev.Time, Source: src, Dir: ev.Dir, Size: ev.Size, Data: traceData(ev), Warning: ev.Warning})
			if trace != nil {
				trace(ev)
			}
		},
	}
	if listen != nil {
		// A listening connection: what it pushes goes to its source as it
		// is read, on the source's goroutine (see listenPush).
		o.ReadPace, o.Push, o.Reader = listenReadPace, listen.Push, listen.Reader
	}
	if c.dial != nil {
		return c.dial(ctx, t, c.dialer.IPCOptions(dt, o))
	}
	return c.dialer.Dial(ctx, dt, o)
}

// send makes one call on t.
func (c *client) send(ctx context.Context, t *discovery.Target, req ipc.Request) (*ipc.Response, error) {
	cn, err := c.conn(ctx, t)
	if err != nil {
		return nil, err
	}
	return cn.Send(ctx, req)
}

// close closes every connection and waits for their readers.
func (c *client) close() {
	c.mu.Lock()
	conns := c.conns
	c.conns = map[string]*ipc.Conn{}
	c.closed = true
	c.mu.Unlock()
	for _, cn := range conns {
		cn.Close()
	}
	c.wg.Wait()
}
