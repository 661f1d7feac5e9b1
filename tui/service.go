package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// feed carries everything live sources produce to the program: target
// events, tail events and trace frames. Producers never block on it for
// high-volume items (they are dropped and counted); the program reads it
// through one outstanding command that coalesces a frame's worth of items.
type feed struct {
	ch      chan any
	dropped atomic.Uint64
	frame   time.Duration
	max     int
}

func newFeed(size int, frame time.Duration) *feed {
	return &feed{ch: make(chan any, size), frame: frame, max: 8192}
}

// push offers x without blocking; a full feed drops it and counts.
func (f *feed) push(x any) {
	select {
	case f.ch <- x:
	default:
		f.dropped.Add(1)
	}
}

// pushWait offers x, waiting while ctx lives (for items that must arrive).
func (f *feed) pushWait(ctx context.Context, x any) {
	select {
	case f.ch <- x:
	case <-ctx.Done():
	}
}

// feedMsg is a frame's worth of live items.
type feedMsg struct{ items []any }

// next waits for the first item, gathers what else arrives within one frame,
// and returns them together. It blocks (costing nothing) while idle.
func (f *feed) next(ctx context.Context) tea.Cmd {
	return func() tea.Msg {
		var first any
		select {
		case first = <-f.ch:
		case <-ctx.Done():
			return nil
		}
		items := []any{first}
		t := time.NewTimer(f.frame)
		defer t.Stop()
		for len(items) < f.max {
			select {
			case x := <-f.ch:
				items = append(items, x)
				continue
			case <-t.C:
			case <-ctx.Done():
			}
			break
		}
		return feedMsg{items: items}
	}
}

// client owns the connections the TUI calls through. It is used only from
// commands (never from Update) and is safe for concurrent use.
type client struct {
	ctx  context.Context
	dial Dialer
	feed *feed
	max  int64
	sec  ipc.Security
	// scope decides which targets are family-scoped.
	scope discovery.FamilyScope

	mu     sync.Mutex
	conns  map[string]*ipc.Conn
	closed bool // after close, no connection is kept (commands may still dial)
	// dropping marks connections closed on purpose by drop: their end is
	// not reported as a "connection closed" note.
	dropping map[*ipc.Conn]bool
	wg       sync.WaitGroup
}

func newClient(ctx context.Context, dial Dialer, f *feed, maxFrame int64, sec ipc.Security) *client {
	if dial == nil {
		dial = defaultDialer
	}
	return &client{ctx: ctx, dial: dial, feed: f, max: maxFrame, sec: sec, conns: map[string]*ipc.Conn{}, dropping: map[*ipc.Conn]bool{}}
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
	sec := c.sec
	sec.RequireBTSP = sec.RequireBTSP || t.BTSP()
	// The same decision as the CLI's and the prober's, made here at every
	// dial: a call or a listen made before the target's probe has finished
	// (or when it failed) sends nothing in cleartext to a family-scoped name.
	if ep, err := ipc.ParseEndpoint(t.Address); err == nil {
		sec.FamilyScoped = sec.FamilyScoped || c.scope.Scoped(ep, t.Family, sec.Family)
	}
	opts := ipc.Options{
		Endpoint: t.Address,
		MaxFrame: c.max,
		Security: sec,
		Trace: func(ev ipc.TraceEvent) {
			c.feed.push(TraceFrame{Time: ev.Time, Source: src, Dir: ev.Dir, Size: ev.Size, Data: boundedCopy(ev.Data), Warning: ev.Warning})
		},
	}
	dctx := ctx
	if strings.HasPrefix(t.Address, "ws://") || strings.HasPrefix(t.Address, "wss://") {
		// A holon session lives as long as the context it was opened with
		// (it reconnects inside), so it gets the client's, not the call's.
		dctx = c.ctx
	}
	cn, err := c.dial(dctx, t, opts)
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
				c.feed.push(Event{Time: time.Now(), Source: src, TargetKey: t.ID, Kind: EvNote,
					Name: fmt.Sprintf("%d pushed message(s) dropped (arriving faster than shown)", d-reported)})
				reported = d
			}
			c.feed.push(eventFromMessage(src, t.ID, m))
		}
		// The connection ended (by the peer, or a broken frame): close it so
		// its socket is released, not only forgotten.
		cn.Close()
		c.mu.Lock()
		if c.conns[t.ID] == cn {
			delete(c.conns, t.ID)
		}
		onPurpose := c.dropping[cn]
		delete(c.dropping, cn)
		c.mu.Unlock()
		if onPurpose {
			return
		}
		note := Event{Time: time.Now(), Source: src, TargetKey: t.ID, Kind: EvNote, Name: "connection closed"}
		if err := cn.Err(); err != nil {
			note.Data = []byte(err.Error())
		}
		// The model frees the target's listening place on this note: it
		// must arrive even when a flood has filled the feed.
		c.feed.pushWait(c.ctx, note)
	}()
	return cn, nil
}

// watchStream reads an events source (the biomeOS API's server-sent
// events) into the feed until ctx ends or the source gives up.
func (c *client) watchStream(ctx context.Context, t *discovery.Target, src events.Source) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		err := src.Run(ctx, func(e events.Event) { c.feed.push(eventFromStream(t.ID, e)) })
		note := Event{Time: time.Now(), Source: t.Name, TargetKey: t.ID, Kind: EvNote, Name: "connection closed"}
		if err != nil {
			note.Data = []byte(err.Error())
		}
		if ctx.Err() == nil {
			c.feed.pushWait(ctx, note) // it frees the listening place: never dropped
		}
	}()
}

// send makes one call on t.
func (c *client) send(ctx context.Context, t *discovery.Target, req ipc.Request) (*ipc.Response, error) {
	cn, err := c.conn(ctx, t)
	if err != nil {
		return nil, err
	}
	return cn.Send(ctx, req)
}

// reply answers a server-initiated request that came in on t's connection.
func (c *client) reply(ctx context.Context, key string, id json.RawMessage, result json.RawMessage, rpcErr *ipc.RPCError) error {
	c.mu.Lock()
	cn := c.conns[key]
	c.mu.Unlock()
	if cn == nil {
		return fmt.Errorf("reply: the connection that asked is closed")
	}
	return cn.Reply(ctx, id, result, rpcErr)
}

// drop closes the connection to key, if there is one, without reporting
// its end (the TUI stopped listening to it). New calls to key dial afresh
// at once; calls already in flight on it are given up to grace (the call
// timeout) to finish before it closes.
func (c *client) drop(key string, grace time.Duration) {
	c.mu.Lock()
	cn := c.conns[key]
	if cn != nil {
		delete(c.conns, key)
		c.dropping[cn] = true
	}
	c.mu.Unlock()
	if cn == nil {
		return
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for cn.InFlight() > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			cn.Close()
			return
		case <-cn.Done():
			return
		case <-c.ctx.Done():
			cn.Close()
			return
		}
	}
	cn.Close()
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
