// Package events merges what live targets push into one bounded stream:
// JSON-RPC notifications and lean {type,data} events from connections held
// open, server-initiated requests (Holon-RPC and others), Songbird ipc.watch
// registry changes, the biomeOS API's server-sent events, and liveness
// heartbeats polled per target with their latency and state changes.
//
// Sources run on goroutines the Stream owns; a slow consumer loses the oldest
// events, counted and reported in the stream itself. Both `primalscope tail`
// and the TUI's events pane read a Stream.
package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of events.
const (
	// KindNotification is a JSON-RPC notification; Name is its method.
	KindNotification = "notification"
	// KindEvent is a lean-wire {type,data} event; Name is its type.
	KindEvent = "event"
	// KindRequest is a request the peer sent to primalscope; Name is its
	// method. The payload holds id, params and how it was answered.
	KindRequest = "request"
	// KindRegistry is a Songbird ipc.watch change; Name is its kind
	// (registered, unregistered).
	KindRegistry = "registry"
	// KindSSE is a biomeOS API server-sent event; Name is its type.
	KindSSE = "sse"
	// KindLiveness is one liveness poll; Name is the state (alive, stale,
	// gone); the payload has latency_ms and, on a change, was.
	KindLiveness = "liveness"
	// KindNote is something about a connection or a protocol warning.
	KindNote = "note"
	// KindDropped says how many events were dropped because the consumer
	// was too slow; Source is "primalscope".
	KindDropped = "dropped"
)

// Liveness states.
const (
	StateAlive = "alive"
	StateStale = "stale"
	StateGone  = "gone"
	// StateRefused: the target was refused for security (ipc.SecurityFailure:
	// BTSP required and no seed, a failed handshake, a session frame that
	// does not authenticate, is replayed or is cleartext). The source ends:
	// it does not reconnect.
	StateRefused = "refused"
)

// Event is one item of the merged stream.
type Event struct {
	Source  string          `json:"source"`
	Time    time.Time       `json:"time"`
	Kind    string          `json:"kind"`
	Name    string          `json:"name,omitempty"`
	Payload json.RawMessage `json:"payload"`
	// Conn is, for a request a TargetSource left unanswered, the
	// connection it came on (numbered from 1 per source; 0 otherwise):
	// TargetSource.ReplyOn answers there, and only there.
	Conn uint64 `json:"-"`
}

// Emit hands an event to the stream. It never blocks.
type Emit func(Event)

// Source produces events until ctx ends. Run returns nil when ctx ended, or
// an error when the source cannot go on (the stream reports it as a note).
type Source interface {
	Name() string
	Run(ctx context.Context, emit Emit) error
}

// Options configure a Stream.
type Options struct {
	// Buffer is how many events wait for the consumer before the oldest are
	// dropped (default 1024).
	Buffer int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Stream is the merged, bounded stream of every source's events.
type Stream struct {
	ch       chan Event
	now      func() time.Time
	dropped  atomic.Uint64
	reported uint64 // dropped count already reported (consumer side)
	done     chan struct{}
	mu       sync.Mutex // serialises drop-oldest against other producers
}

// Merge starts every source (in a Group without a bound) and returns their
// merged stream. The sources stop when ctx ends; Wait waits for them.
func Merge(ctx context.Context, sources []Source, opts Options) *Stream {
	if opts.Buffer <= 0 {
		opts.Buffer = 1024
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Stream{ch: make(chan Event, opts.Buffer), now: opts.Now, done: make(chan struct{})}
	g := NewGroup(ctx, s.Emit, GroupOptions{})
	for i, src := range sources {
		g.Start(strconv.Itoa(i), src)
	}
	go func() {
		g.Wait()
		close(s.done)
	}()
	return s
}

// Emit adds an event, dropping the oldest waiting one when the buffer is
// full. A zero Time is set to now.
func (s *Stream) Emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = s.now()
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage("null")
	}
	select {
	case s.ch <- ev:
		return
	default:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Kind == KindDropped {
		// A source's own drop report joins the stream's count rather than
		// pushing out an event (and being lost itself when full).
		s.dropped.Add(lostIn(ev))
		return
	}
	for {
		select {
		case s.ch <- ev:
			return
		default:
		}
		select {
		case old := <-s.ch:
			s.dropped.Add(lostIn(old))
		default:
		}
	}
}

// lostIn is how many events an event stands for when it is dropped: one,
// or for a drop report the number it reports.
func lostIn(ev Event) uint64 {
	if ev.Kind != KindDropped {
		return 1
	}
	var p struct {
		Dropped uint64 `json:"dropped"`
	}
	if json.Unmarshal(ev.Payload, &p) != nil || p.Dropped == 0 {
		return 1
	}
	return p.Dropped
}

// Dropped reports how many events were dropped so far.
func (s *Stream) Dropped() uint64 { return s.dropped.Load() }

// Next returns the next event. When events were dropped since the last
// call, it first returns a KindDropped event saying how many. It returns
// io.EOF once every source has ended and the buffer is empty, or ctx's
// error. Next is meant for one consumer.
func (s *Stream) Next(ctx context.Context) (Event, error) {
	if d := s.dropped.Load(); d > s.reported {
		n := d - s.reported
		s.reported = d
		return Event{Source: "primalscope", Time: s.now(), Kind: KindDropped,
			Payload: json.RawMessage(fmt.Sprintf(`{"dropped":%d,"total":%d}`, n, d))}, nil
	}
	select {
	case ev := <-s.ch:
		return ev, nil
	default:
	}
	select {
	case ev := <-s.ch:
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	case <-s.done:
		select {
		case ev := <-s.ch:
			return ev, nil
		default:
			return Event{}, io.EOF
		}
	}
}

// Wait blocks until every source has ended.
func (s *Stream) Wait() { <-s.done }

// Done is closed when every source has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Note builds a KindNote event.
func Note(source, msg string) Event {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return Event{Source: source, Kind: KindNote, Payload: b}
}

// rawOrString returns b when it is valid JSON, else b as a JSON string.
func rawOrString(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// rawOrNull returns b, known to be valid JSON, or null when empty.
func rawOrNull(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return json.RawMessage(b)
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
