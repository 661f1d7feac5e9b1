package events

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// Spec says what to watch on one target and how.
type Spec struct {
	// Name names the target in events.
	Name     string
	Endpoint ipc.Endpoint
	// Wire is the wire to speak ("" detects; "lean", "holon", "jsonrpc").
	Wire string
	// Pool is the stdio Bus pool liveness polls are routed to ("" for none).
	Pool string
	// Registry polls ipc.watch (a Songbird registry).
	Registry bool
	// BiomeOSAPI reads the biomeOS API's server-sent events instead of
	// speaking JSON-RPC (HTTP after the riboCipher prefix).
	BiomeOSAPI bool
}

// SpecFor says how to watch a discovered target; false for targets that are
// never spoken to (tarpc sidecars, targets without an endpoint).
func SpecFor(t *discovery.Target) (Spec, bool) {
	if t == nil || t.Address == "" || t.Kind == discovery.KindTarpc {
		return Spec{}, false
	}
	s := SpecForEndpoint(t.Name, t.Endpoint)
	s.Wire = t.Wire()
	s.Pool = t.Pool
	if t.Kind == discovery.KindRegistry {
		s.Registry = true
	}
	if t.NoProbe && !s.BiomeOSAPI {
		return Spec{}, false
	}
	return s, true
}

// SpecForEndpoint guesses how to watch an endpoint named by the user: the
// biomeOS API socket by its file name, registries by theirs, holons by ws://.
func SpecForEndpoint(name string, ep ipc.Endpoint) Spec {
	s := Spec{Name: name, Endpoint: ep}
	switch ep.Transport {
	case ipc.WS, ipc.WSS:
		s.Wire = "holon"
	case ipc.Unix:
		base := strings.TrimSuffix(filepath.Base(ep.Path), ".sock")
		switch {
		case base == "biomeos-api" || strings.HasPrefix(base, "biomeos-api-"):
			s.BiomeOSAPI = true
		case base == "songbird" || strings.HasPrefix(base, "songbird-") ||
			base == "discovery" || strings.HasPrefix(base, "discovery-"):
			s.Registry = true
		}
	}
	return s
}

// Config builds sources from specs.
type Config struct {
	// Dial opens a JSON-RPC connection (nil: ipc.Dial with the spec's wire).
	// It is not used for ws:// targets, which get a holon.Session.
	Dial func(ctx context.Context, s Spec, trace func(ipc.TraceEvent)) (*ipc.Conn, error)
	// Interval is the liveness (and ipc.watch) polling period (default 5 s).
	Interval time.Duration
	// StaleAfter: see TargetSource.
	StaleAfter time.Duration
	// Insecure skips TLS verification for wss:// (the CLI's --insecure).
	Insecure bool
	// Holon tunes holon sessions (heartbeats, backoff).
	Holon holon.SessionOptions
	// MaxFrame bounds incoming messages (0: defaults).
	MaxFrame int64
	// Answer answers the peers' requests (nil: DefaultAnswer).
	Answer Answerer
	// BackoffMin and BackoffMax bound reconnection waits.
	BackoffMin, BackoffMax time.Duration
	// LivenessMethod overrides the method TargetSources poll ("-" polls
	// nothing: the TUI's discovery already does).
	LivenessMethod string
	// TrustUIDs are local users trusted to serve an event stream's socket
	// besides the user and root (--trust-uid); any other is refused.
	TrustUIDs []uint32
}

// Source returns the source that watches s.
func (c Config) Source(s Spec) Source {
	if s.BiomeOSAPI {
		return &SSESource{Source: s.Name, Path: s.Endpoint.Path, BackoffMin: c.BackoffMin, BackoffMax: c.BackoffMax,
			Options: sse.Options{Peer: ipc.PeerPolicy{TrustUIDs: c.TrustUIDs}}}
	}
	ts := &TargetSource{Source: s.Name, Interval: c.Interval, StaleAfter: c.StaleAfter, Watch: s.Registry,
		Answer: c.Answer, BackoffMin: c.BackoffMin, BackoffMax: c.BackoffMax, Pool: s.Pool}
	switch {
	case s.Endpoint.Transport == ipc.WS || s.Endpoint.Transport == ipc.WSS:
		ho := c.Holon
		ho.Insecure = ho.Insecure || c.Insecure
		if c.MaxFrame > 0 && c.MaxFrame != ipc.DefaultMaxFrame {
			ho.MaxMessage = c.MaxFrame
		}
		ts.Dial = HolonDial(s.Endpoint.URL, ho)
		ts.LivenessMethod = "rpc.heartbeat"
	case c.Dial != nil:
		ts.Dial = func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			return c.Dial(ctx, s, trace)
		}
	default:
		ts.Dial = func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			w, _ := ipc.ParseWire(s.Wire)
			// No Security here (no seed): a family-scoped socket is refused,
			// never sent cleartext. Set Dial to speak BTSP.
			sec := ipc.Security{FamilyScoped: discovery.FamilyScoped(s.Endpoint)}
			return ipc.Dial(ctx, s.Endpoint, ipc.Options{Wire: w, Trace: trace, Endpoint: s.Name, MaxFrame: c.MaxFrame, IncomingBuffer: 256, Security: sec})
		}
	}
	if c.LivenessMethod != "" {
		ts.LivenessMethod = c.LivenessMethod
	}
	return ts
}

// HolonDial returns a DialFunc that opens a holon.Session (heartbeats and
// reconnects inside) and runs a Holon-RPC Conn over it.
func HolonDial(url string, opts holon.SessionOptions) DialFunc {
	return func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
		o := opts
		if trace != nil {
			o.Trace = ipc.HolonTrace(trace)
		}
		s, err := holon.NewSession(ctx, url, o)
		if err != nil {
			return nil, &ipc.DialError{Endpoint: url, Err: err}
		}
		return ipc.NewConn(s, ipc.Options{Wire: ipc.WireHolon, Trace: trace, Endpoint: url, IncomingBuffer: 256}), nil
	}
}
