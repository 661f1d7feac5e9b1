package tui

import (
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// EventKind is how the events tail draws and filters a line.
type EventKind int

// Event kinds.
const (
	EvHeartbeat EventKind = iota + 1
	EvNotification
	EvEvent
	EvRequest
	EvNote
	EvInvalid
)

var eventKindNames = [...]string{"", "heartbeat", "notification", "event", "request", "note", "invalid"}

func (k EventKind) String() string {
	if int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return "?"
}

// line is one line of the events tail: an event as the events package
// reports it (and tail prints it: pushes, requests, notes, heartbeats),
// with what the TUI works out once to draw it and act on it.
type line struct {
	// Event is the event, its payload bounded.
	events.Event
	// key is the target it is of ("" for the TUI's own notes).
	key string
	// kind, title and data are how the tail shows it: its class, its name
	// (a method, an event type, a note), and what follows (bounded).
	kind  EventKind
	title string
	data  []byte
	// id is a request's id; answered says it was answered.
	id       json.RawMessage
	answered bool
	// reply answers a request on the connection it came on (nil: the
	// client's connection to key).
	reply replyFunc
	// conn is the connection a request came on, to tell whether it can
	// still be answered (see reqConn).
	conn reqConn
	// lost is how many pushed messages this note says were never
	// received (the peer's or the connection's drops).
	lost uint64
	// mgen and mres are whether it matched the events pane's filters of
	// generation mgen (0: not matched yet).
	mgen uint32
	mres bool
}

// maxEventData bounds what one event or frame keeps for display.
const maxEventData = 4 << 10

func boundedCopy(p []byte) []byte {
	if len(p) > maxEventData {
		p = p[:maxEventData]
	}
	return append([]byte(nil), p...)
}

// payloadGroups copies the small payloads of a stream's lines into shared
// allocations of payloadGroup bytes: a flood's notifications were copied
// one allocation each (one a notification under bench/flood). Lines that
// arrive together are kept and let go together (the events pane's ring),
// so a group is held about as long as its lines; a line kept on its own
// holds at most payloadGroup bytes. Only notifications and events go
// there (a request may be kept apart, in the requests pane, for long).
type payloadGroups struct {
	mu    sync.Mutex
	group []byte
}

// payloadGroup is the size of one shared allocation; a payload of more
// than an eighth of it is copied alone.
const payloadGroup = 4 << 10

// copy is boundedCopy, into a shared allocation when p is small.
func (g *payloadGroups) copy(p []byte) []byte {
	if len(p) == 0 || len(p) > payloadGroup/8 {
		return boundedCopy(p)
	}
	g.mu.Lock()
	if len(p) > len(g.group) {
		g.group = make([]byte, payloadGroup)
	}
	c := g.group[:len(p):len(p)]
	g.group = g.group[len(p):]
	g.mu.Unlock()
	copy(c, p)
	return c
}

// traceData is what a trace frame keeps of ev's bytes: the frame itself
// when it is one the connection will never change (ev.Kept) and holds no
// more than maxEventData, else a bounded copy (a flood's frames were
// each copied once more here).
func traceData(ev ipc.TraceEvent) []byte {
	if ev.Kept && cap(ev.Data) <= maxEventData {
		return ev.Data[:len(ev.Data):len(ev.Data)]
	}
	return boundedCopy(ev.Data)
}

// newLine makes the tail line of an event about the target key.
func newLine(key string, e events.Event) line { return newLineIn(key, e, nil) }

// newLineIn is newLine with a notification's or an event's payload copied
// into g's shared allocations (nil: into one of its own).
func newLineIn(key string, e events.Event, g *payloadGroups) line {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if g != nil && (e.Kind == events.KindNotification || e.Kind == events.KindEvent) {
		e.Payload = g.copy(e.Payload)
	} else {
		e.Payload = boundedCopy(e.Payload)
	}
	l := line{Event: e, key: key, title: e.Name, data: e.Payload}
	switch e.Kind {
	case events.KindNotification:
		l.kind = EvNotification
	case events.KindRequest:
		// {"id", "params"}, and how it was answered when it was (below the
		// connection: heartbeats).
		var p struct {
			ID       json.RawMessage `json:"id"`
			Params   json.RawMessage `json:"params"`
			Answered json.RawMessage `json:"answered"`
			Error    json.RawMessage `json:"answered_error"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		l.kind, l.id, l.data = EvRequest, p.ID, p.Params
		l.answered = p.Answered != nil || p.Error != nil
	case events.KindLiveness:
		l.kind = EvHeartbeat
	case events.KindDropped:
		var d struct{ Dropped uint64 }
		_ = json.Unmarshal(e.Payload, &d)
		l.kind, l.title, l.data = EvNote, fmt.Sprintf("%d pushed message(s) dropped (arriving faster than shown)", d.Dropped), nil
		l.lost = d.Dropped
	case events.KindNote:
		var n struct {
			Message string          `json:"message"`
			Warning string          `json:"warning"`
			Frame   json.RawMessage `json:"frame"`
		}
		_ = json.Unmarshal(e.Payload, &n)
		switch {
		case n.Warning != "":
			// A message the connection could not read.
			l.kind, l.title, l.data = EvInvalid, e.Name+": "+n.Warning, frameBytes(n.Frame)
		case e.Name == "":
			l.kind, l.title, l.data = EvNote, n.Message, nil
		default:
			l.kind, l.data = EvNote, []byte(n.Message)
		}
	default: // event, sse, registry
		l.kind = EvEvent
	}
	if isHeartbeatName(e.Name) && l.kind != EvRequest {
		l.kind = EvHeartbeat
	}
	if l.title == "" {
		l.title = e.Kind
	}
	return l
}

// noteLine is a note of the TUI's own (a target appeared, listening...);
// text, when not empty, follows its name.
func noteLine(now time.Time, source, name, text string) line {
	e := events.Note(source, text)
	e.Time, e.Name = now, name
	return newLine("", e)
}

// messageLine is the tail line of a message pushed on a call's connection.
func messageLine(source, key string, m *ipc.Message) line {
	return newLine(key, events.FromMessage(source, m))
}

// frameBytes is a frame the events package kept as a JSON string (it was
// not JSON) or as JSON.
func frameBytes(f json.RawMessage) []byte {
	var s string
	if json.Unmarshal(f, &s) == nil {
		return boundedCopy([]byte(s))
	}
	return boundedCopy(f)
}

func isHeartbeatName(s string) bool {
	switch s {
	case "heartbeat", "rpc.heartbeat", "ipc.heartbeat", "health.heartbeat":
		return true
	}
	return false
}

// TraceFrame is one frame of the trace pane.
type TraceFrame struct {
	Time    time.Time
	Source  string
	Dir     ipc.Direction
	Size    int
	Data    []byte // bounded copy
	Warning string

	// mgen and mres are whether it matched the trace pane's filter of
	// generation mgen (0: not matched yet).
	mgen uint32
	mres bool
}
