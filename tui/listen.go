package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// listener decides which targets the TUI listens to, so that what they
// push (notifications, events, requests) reaches the events tail. Hearing
// one is the events package's engine, the same as tail's: a TargetSource
// (the biomeOS API's SSESource) per target, which holds a connection open,
// re-establishes it with backoff, and reports what arrives; they run in an
// events.Group bounded by Config.MaxListen. What the listener adds is which
// targets get the places: the current target first, then the order the
// targets pane lists them; the current target is heard past the bound until
// another becomes current, and the events tail says when live targets are
// left out. The root model calls it from Update only; the group's
// goroutines end with the program (Run closes it).
type listener struct {
	pc    *programContext
	feed  *feed
	group *events.Group
	// listening marks the targets whose sources run.
	listening map[string]bool
	// gaveUp marks targets whose source stopped by itself (a BTSP
	// handshake that cannot succeed): they are not heard again until they
	// leave and come back.
	gaveUp map[string]bool
	// notListened counts the live targets left out by Config.MaxListen;
	// extra is the current target when it is heard past that bound (one
	// at most: it is let go when another becomes current).
	notListened int
	extra       string
	// dirty says something that decides listening changed (targets, the
	// current one, a freed place); without it a pass does nothing.
	dirty bool
}

// listenEndedMsg says a target's source stopped by itself.
type listenEndedMsg struct{ key string }

// streamMsg is what a heard target's source reported.
type streamMsg struct {
	key string
	ev  events.Event
	// reply answers it when it is a request (nil otherwise), on conn.
	reply replyFunc
	conn  reqConn
}

// replyFunc answers a server request on the connection it came on.
type replyFunc func(ctx context.Context, result json.RawMessage, rpcErr *ipc.RPCError) error

func newListener(pc *programContext, f *feed) *listener {
	l := &listener{pc: pc, feed: f, listening: map[string]bool{}, gaveUp: map[string]bool{}, dirty: true}
	l.group = events.NewGroup(pc.ctx, func(e events.Event) { f.pushStream(streamMsg{ev: e}) }, events.GroupOptions{
		// Room for the current target past the bound.
		Max: pc.cfg.MaxListen + 1,
		Ended: func(key string, _ error) {
			// It frees the place: it must arrive even when a flood fills the feed.
			f.pushWait(pc.ctx, listenEndedMsg{key: key})
		},
	})
	return l
}

// close stops every source and waits for them.
func (l *listener) close() { l.group.Close() }

// ended frees the place of a target whose source stopped by itself.
func (l *listener) ended(key string) {
	if l.listening[key] {
		delete(l.listening, key)
		l.gaveUp[key] = true
		l.dirty = true
	}
	if l.extra == key {
		l.extra = ""
	}
}

// removed forgets a target that left, and stops hearing it.
func (l *listener) removed(key string) {
	l.stop(key)
	delete(l.gaveUp, key)
}

func (l *listener) stop(key string) {
	if l.listening[key] {
		delete(l.listening, key)
		l.group.Stop(key)
		l.dirty = true
	}
	if l.extra == key {
		l.extra = ""
	}
}

// wanted reports whether t should be heard: it is spoken to (not a tarpc
// sidecar, has an address, is not BTSP without a seed offered to it: see
// target.seeded), and is live, a holon, or the biomeOS API's event stream.
func (l *listener) wanted(t *target) bool {
	if t == nil || t.Kind == discovery.KindTarpc || t.endpoint() == "" || (t.BTSP() && !t.seeded()) || l.gaveUp[t.ID] {
		return false
	}
	holon := t.Endpoint.Transport == ipc.WS || t.Endpoint.Transport == ipc.WSS
	return t.health() == discovery.StateLive || holon || t.streamSpec() != nil
}

// pass starts hearing every wanted target not yet heard, in order (the
// current one, then the targets pane's order), up to the bound, and stops
// hearing the ones no longer wanted. It returns a note for the events tail
// when whether live targets are left out changed.
func (l *listener) pass(current string, targets map[string]*target, listed func(yield func(string) bool)) *line {
	cfg := l.pc.cfg
	if cfg.NoListen || !l.dirty {
		return nil
	}
	l.dirty = false
	for k := range l.listening {
		if !l.wanted(targets[k]) {
			l.stop(k)
		}
	}
	if l.extra != "" && l.extra != current {
		// The target heard past the bound is no longer current: let it go
		// if the bound is still full (else it keeps its place).
		if len(l.listening) > cfg.MaxListen {
			l.stop(l.extra)
		}
		l.extra = ""
	}
	order := make([]string, 0, len(targets)+1)
	if current != "" {
		order = append(order, current)
	}
	listed(func(k string) bool {
		if k != current {
			order = append(order, k)
		}
		return true
	})
	if len(order) < len(targets) { // some are filtered out of the pane
		seen := make(map[string]bool, len(order))
		for _, k := range order {
			seen[k] = true
		}
		for k := range targets {
			if !seen[k] {
				order = append(order, k)
			}
		}
	}
	left := 0
	for _, k := range order {
		t := targets[k]
		if l.listening[k] || !l.wanted(t) {
			continue
		}
		sse := t.streamSpec() != nil
		if len(l.listening) >= cfg.MaxListen {
			if k != current {
				left++
				continue
			}
			if !sse {
				// The current target is heard past the bound, until another
				// becomes current. (An event stream cannot be let go early;
				// there are a handful, one a family.)
				l.extra = k
			}
		}
		if l.group.Start(k, l.source(t)) {
			l.listening[k] = true
		}
	}
	var note *line
	if (left > 0) != (l.notListened > 0) {
		text := fmt.Sprintf("listening to %d targets; %d more live targets are not listened to (select one and press %s to hear it)", len(l.listening), left, helpKey(l.pc.keys.Select))
		if left == 0 {
			text = fmt.Sprintf("listening to every live target (%d)", len(l.listening))
		}
		n := noteLine(l.pc.now(), "primalscope", "listening", text)
		note = &n
	}
	l.notListened = left
	return note
}

// source is what hears t: its event stream (the biomeOS API), or a
// TargetSource on a connection dialled as the TUI's calls are (with the
// family seed, every frame in the trace pane). It polls nothing (discovery
// does) and answers no request: the user does, from the requests pane.
func (l *listener) source(t *target) events.Source {
	key, feed := t.ID, l.feed
	if s := t.streamSpec(); s != nil {
		// The event stream's socket: its owner checked as calls' are.
		return keyed{Source: events.Config{TrustUIDs: l.pc.cfg.Security.TrustUIDs}.Source(*s), key: key, feed: feed, crashDir: l.pc.cfg.CrashDir}
	}
	d, cl := t.Target, l.pc.client
	last := &lastConn{}
	ts := &events.TargetSource{
		Source:         t.Name,
		LivenessMethod: "-",
		Pool:           t.Pool,
		Answer:         func(*ipc.Message) (json.RawMessage, *ipc.RPCError) { return nil, nil },
		DialPush: func(ctx context.Context, _ func(ipc.TraceEvent), pd events.PushDial) (*ipc.Conn, error) {
			// The source's own trace hook turns connection notes into
			// events; here they are in the trace pane already.
			c, err := cl.open(ctx, d, nil, &pd)
			if err == nil {
				last.set(c)
			}
			return c, err
		},
	}
	return keyed{Source: ts, key: key, feed: feed, last: last, crashDir: l.pc.cfg.CrashDir}
}

// listenReadPace is how often at most a listening connection reads while
// its peer sends little (ipc.Options.ReadPace): under a flood of small
// notifications the reader, the source and the feed then wake about a
// hundred times a second rather than once a notification (a third of the
// TUI's CPU under bench/flood went to waking). What arrives is on screen
// up to that much later; the connection only listens (no call waits on
// it), and keys are not slowed. Not longer: the socket fills meanwhile,
// and at a frame (33 ms) a flood of 10,000 a second filled it and slowed
// the flooder to 7,800 a second.
const listenReadPace = 10 * time.Millisecond

// listenPush: a listening connection is read on its source's goroutine
// (ipc.Options.Reader), which turns what the peer pushes into events as
// it reads it (ipc.Options.Push) and offers them to the feed (65,536
// slots, shared, never waiting): one goroutine a listened target, not
// three, and no queue of unread messages per connection. The queue it replaces (ipc's 1,024 slots, allocated whole)
// cost 2 MiB over 256 listened targets, and a goroutine each; it was
// where a flood lost events when its reader was not scheduled in time
// (256 slots lost 4–15× more than 1,024): here the reader hands them on
// itself. BENCHMARKS.md, "Issue 24 memory, 2026-11-27".
// lastConn is the connection a TargetSource dialled last. The source
// reports what a connection brought before it dials the next one, so
// while it reports a request, that is the connection the request came on.
type lastConn struct {
	mu sync.Mutex
	c  *ipc.Conn
}

func (l *lastConn) set(c *ipc.Conn) {
	l.mu.Lock()
	l.c = c
	l.mu.Unlock()
}

func (l *lastConn) get() *ipc.Conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c
}

// keyed runs a source with its events going into the feed under the key of
// the target they are of.
type keyed struct {
	events.Source
	key  string
	feed *feed
	// last is the connection a TargetSource's requests came on (nil for
	// an event stream, which sends none).
	last     *lastConn
	crashDir string
}

// Run runs the source until ctx ends or it cannot go on. A panic (a bug in
// the TUI's dialling, say) becomes a crash report the program quits with.
func (k keyed) Run(ctx context.Context, _ events.Emit) (err error) {
	defer func() {
		if r := recover(); r != nil {
			k.feed.pushWait(ctx, crashMsg{path: writeCrash(k.crashDir, r, debug.Stack())})
			err = fmt.Errorf("crashed: %v", r)
		}
	}()
	return k.Source.Run(ctx, func(e events.Event) {
		m := streamMsg{key: k.key, ev: e}
		if e.Kind == events.KindRequest && k.last != nil {
			var p struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(e.Payload, &p) == nil {
				if c := k.last.get(); c != nil {
					m.conn, m.reply = requestOn(c, p.ID)
				}
			}
		}
		k.feed.pushStream(m)
	})
}
