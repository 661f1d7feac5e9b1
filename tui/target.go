package tui

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Health is what the TUI knows of a target's liveness.
type Health int

// Health states.
const (
	HealthUnknown Health = iota // not probed yet
	HealthLive                  // answered health.liveness
	HealthStale                 // accepted a connection, did not answer in time
	HealthDown                  // refused or vanished
)

func (h Health) String() string {
	switch h {
	case HealthLive:
		return "live"
	case HealthStale:
		return "stale"
	case HealthDown:
		return "down"
	}
	return "probing"
}

// Target is one thing the TUI can talk to, as discovery describes it.
type Target struct {
	// Key identifies the target across events (its endpoint, usually).
	Key      string
	Name     string
	Aliases  []string
	Endpoint string // in a form ipc.ParseEndpoint reads
	Wire     string
	Sources  []string
	Family   string
	Health   Health
	Latency  time.Duration
	Level    int // compliance level 1..3, 0 when unknown
	BTSP     bool
	// Session says what protected the connection the target was last
	// reached through (discovery's probe, or the TUI's own connection)
	// when BTSP was involved; nil when unknown or no BTSP was involved.
	Session *ipc.SessionSecurity
	// Bus marks a stdio bus: calls may carry a session and a pool.
	Bus  bool
	Pool string // the bus pool this target is
	// Kind is discovery's kind ("primal", "registry", "bus", "lean", "tarpc", ...).
	Kind     string
	Identity *capability.Identity
	Caps     *capability.Capabilities
	Tree     []capability.Domain
	Err      string

	// stream says how the events package would watch this target (set for
	// discovered targets): the biomeOS API is read as server-sent events.
	stream    events.Spec
	hasStream bool
}

// weakSession says what the target's BTSP session does not guarantee
// ("unauthenticated", "cleartext", ...); "" when it is authenticated and
// encrypted, or unknown.
func (t *Target) weakSession() string {
	if t.Session == nil {
		return ""
	}
	return t.Session.Weakness()
}

// Version is the best version string known for t.
func (t *Target) Version() string {
	if t.Identity != nil && t.Identity.Version != "" {
		return t.Identity.Version
	}
	if t.Caps != nil {
		return t.Caps.Version
	}
	return ""
}

// TargetEventKind says what happened to a target.
type TargetEventKind int

// Target event kinds.
const (
	TargetAdded TargetEventKind = iota + 1
	TargetChanged
	TargetRemoved
)

// TargetEvent is one change in the live picture.
type TargetEvent struct {
	Kind   TargetEventKind
	Target Target
}

// Discoverer keeps the picture of targets live. Watch sends every change on
// out until ctx ends, then returns; it must not close out.
type Discoverer interface {
	Watch(ctx context.Context, out chan<- TargetEvent) error
	// Dirs is where it looks for sockets (for the empty state and status bar).
	Dirs() []string
}

// Dialer stands in for the connection step (tests): it gets the ipc
// options the one dialer (internal/dial) decided for the target, its trace
// hook included. nil connects as dial.Connect does.
type Dialer func(ctx context.Context, t Target, opts ipc.Options) (*ipc.Conn, error)

// defaultDialer connects t with exactly opts, as the client does without a
// Dialer.
func defaultDialer(ctx context.Context, t Target, opts ipc.Options) (*ipc.Conn, error) {
	ep, err := ipc.ParseEndpoint(t.Endpoint)
	if err != nil {
		return nil, err
	}
	return dial.Connect(ctx, ep, opts, true)
}

// EventKind classifies a line of the events tail.
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

// Event is one line of the events tail: something a peer pushed, a liveness
// heartbeat, or a note about a connection.
type Event struct {
	Time      time.Time
	Source    string // target name
	TargetKey string
	Kind      EventKind
	// Name is the method (notifications, requests) or the event type.
	Name string
	// Data is the payload (params, data), bounded.
	Data []byte
	// ID is the request id of a server-initiated request.
	ID json.RawMessage
	// SessionID and Pool route a bus request's answer.
	SessionID, Pool string
	Latency         time.Duration // heartbeats
	Answered        bool
}

// TraceFrame is one frame of the trace pane.
type TraceFrame struct {
	Time    time.Time
	Source  string
	Dir     ipc.Direction
	Size    int
	Data    []byte // bounded copy
	Warning string
}

// maxEventData bounds what one event or frame keeps for display.
const maxEventData = 4 << 10

func boundedCopy(p []byte) []byte {
	if len(p) > maxEventData {
		p = p[:maxEventData]
	}
	return append([]byte(nil), p...)
}

// eventFromStream turns an events-package event (server-sent events of the
// biomeOS API, liveness, registry changes) into a tail line.
func eventFromStream(key string, e events.Event) Event {
	ev := Event{Time: e.Time, Source: e.Source, TargetKey: key, Name: e.Name, Data: boundedCopy(e.Payload)}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	switch e.Kind {
	case events.KindNotification:
		ev.Kind = EvNotification
	case events.KindRequest:
		ev.Kind = EvRequest
	case events.KindLiveness:
		ev.Kind = EvHeartbeat
	case events.KindNote, events.KindDropped:
		ev.Kind = EvNote
	default: // event, sse, registry
		ev.Kind = EvEvent
	}
	if isHeartbeatName(e.Name) {
		ev.Kind = EvHeartbeat
	}
	if ev.Name == "" {
		ev.Name = e.Kind
	}
	return ev
}

// eventFromMessage turns a pushed message into a tail line.
func eventFromMessage(src, key string, m *ipc.Message) Event {
	e := Event{Time: m.Time, Source: src, TargetKey: key, SessionID: m.SessionID, Pool: m.Pool}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	switch m.Kind {
	case ipc.KindNotification:
		e.Kind, e.Name, e.Data = EvNotification, m.Method, boundedCopy(m.Params)
		if isHeartbeatName(m.Method) {
			e.Kind = EvHeartbeat
		}
	case ipc.KindRequest:
		e.Kind, e.Name, e.Data = EvRequest, m.Method, boundedCopy(m.Params)
		e.ID = append(json.RawMessage(nil), m.ID...)
	case ipc.KindEvent:
		e.Kind, e.Name, e.Data = EvEvent, m.Type, boundedCopy(m.Data)
		if isHeartbeatName(m.Type) {
			e.Kind = EvHeartbeat
		}
	default:
		e.Kind, e.Name, e.Data = EvInvalid, m.Kind.String(), boundedCopy(m.Raw)
		if m.Warning != "" {
			e.Name += ": " + m.Warning
		}
	}
	return e
}

func isHeartbeatName(s string) bool {
	switch s {
	case "heartbeat", "rpc.heartbeat", "ipc.heartbeat", "health.heartbeat":
		return true
	}
	return false
}
