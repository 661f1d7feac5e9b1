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
	wg     sync.WaitGroup
}

func newClient(ctx context.Context, dial Dialer, f *feed, maxFrame int64, sec ipc.Security) *client {
	if dial == nil {
		dial = defaultDialer
	}
	return &client{ctx: ctx, dial: dial, feed: f, max: maxFrame, sec: sec, conns: map[string]*ipc.Conn{}}
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
	if strings.HasPrefix(t.Address, "ws://") || strings.HasPrefix(t.Address, "wss://") {
		// A holon session lives as long as the context it was opened with
		// (it reconnects inside), so it gets the client's, not the call's.
		dctx = c.ctx
	}
	cn, err := c.dialTarget(dctx, t, nil)
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
		c.mu.Unlock()
		note := Event{Time: time.Now(), Source: src, TargetKey: t.ID, Kind: EvNote, Name: "connection closed"}
		if err := cn.Err(); err != nil {
			note.Data = []byte(err.Error())
		}
		c.feed.pushWait(c.ctx, note)
	}()
	return cn, nil
}

// dialTarget opens a new connection to t (not kept: conn keeps the ones
// calls use) that traces every frame into the trace pane, and then into
// trace when it is not nil.
func (c *client) dialTarget(ctx context.Context, t *discovery.Target, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
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
			if trace != nil {
				trace(ev)
			}
		},
	}
	return c.dial(ctx, t, opts)
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
