package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// NeuralEntry is one primal a simulated Neural API manages.
type NeuralEntry struct {
	Name, State string
	// Socket is the primal's socket path ("" leaves it out).
	Socket string
	// Endpoint is where a primal without a socket file lives
	// ("tcp://host:port"); reported as "endpoint".
	Endpoint string
	PID      int
	// Hidden leaves the socket out of lifecycle.status, topology.primals and
	// topology.get, so clients must ask lifecycle.get.
	Hidden bool
	// Capabilities are what it provides, as biomeOS's routing table holds
	// them: group types ("crypto") and qualified methods ("crypto.hash").
	Capabilities []string
	// DependsOn names the primals it depends on (lifecycle.get depends_on,
	// topology.get's depends_on edges).
	DependsOn []string
}

// The states a Neural API reports.
const (
	StateRunning   = "running"
	StateUnhealthy = "unhealthy"
)

// Neural is a simulated biomeOS Neural API: lifecycle.status, lifecycle.get
// (with depends_on and traffic metrics), topology.primals, topology.get,
// capability.discover, capability.call (which routes a call to a provider
// and counts it), graph.list (deploy graphs, see graph.go) and the health
// methods. The exact shapes are documented in doc.go's "Neural API shapes".
//
// Set the exported fields before serving; the rest is safe for concurrent
// use.
type Neural struct {
	// Family is reported by topology.get.
	Family string
	// Now is the clock of metrics and events (default time.Now).
	Now func() time.Time
	// Publish, when set, receives the events the Neural API emits
	// (health_changed, primal_discovered, topology_changed and the deploy
	// graphs' events); biomeOS streams them on its API socket.
	Publish func(typ string, data map[string]any)
	// CallTimeout bounds one routed call and one graph node (default 2 s).
	CallTimeout time.Duration
	// Window is the sliding window of rates and latencies (default 60 s).
	Window time.Duration
	// CallEvents publishes a capability_called event for every routed call
	// (caller, callee, capability, ok, error, duration_ms).
	CallEvents bool

	mu      sync.Mutex
	entries []NeuralEntry
	routes  map[routeKey]*routeStats
	graphs  []*graphState
	mem     *ipc.EndpointMemory
}

// NewNeural returns a simulated Neural API managing entries.
func NewNeural(entries ...NeuralEntry) *Neural {
	return &Neural{entries: append([]NeuralEntry(nil), entries...), routes: map[routeKey]*routeStats{},
		mem: ipc.NewEndpointMemory()}
}

// Set replaces the primals the Neural API reports.
func (n *Neural) Set(entries ...NeuralEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.entries = append([]NeuralEntry(nil), entries...)
}

func (n *Neural) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func (n *Neural) stamp() string { return n.now().UTC().Format(time.RFC3339Nano) }

func (n *Neural) callTimeout() time.Duration {
	if n.CallTimeout > 0 {
		return n.CallTimeout
	}
	return 2 * time.Second
}

func (n *Neural) window() time.Duration {
	if n.Window >= time.Second {
		return n.Window
	}
	return 60 * time.Second
}

func (n *Neural) publish(typ string, data map[string]any) {
	if n.Publish != nil {
		n.Publish(typ, data)
	}
}

// Entry returns the entry of a primal by name.
func (n *Neural) Entry(name string) (NeuralEntry, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, e := range n.entries {
		if e.Name == name {
			return e, true
		}
	}
	return NeuralEntry{}, false
}

// SetState changes a primal's state as biomeOS's health monitor would, and
// publishes health_changed and topology_changed (and primal_discovered when
// it comes back to running). It reports whether the state changed.
func (n *Neural) SetState(name, state string) bool {
	n.mu.Lock()
	var from string
	var ent NeuralEntry
	found := false
	for i := range n.entries {
		if n.entries[i].Name == name {
			from, found = n.entries[i].State, true
			n.entries[i].State = state
			ent = n.entries[i]
		}
	}
	n.mu.Unlock()
	if !found || from == state {
		return false
	}
	now := n.stamp()
	n.publish("health_changed", map[string]any{"primal": name, "from": from, "to": state, "timestamp": now})
	if state == StateRunning {
		d := map[string]any{"primal": name, "timestamp": now}
		addEndpoint(d, ent, false)
		n.publish("primal_discovered", d)
	}
	n.topologyChanged("health_changed")
	return true
}

func (n *Neural) topologyChanged(reason string) {
	if n.Publish == nil {
		return
	}
	t := n.topology()
	n.publish("topology_changed", map[string]any{"reason": reason, "primals": len(t["nodes"].([]map[string]any)),
		"edges": len(t["edges"].([]map[string]any)), "timestamp": n.stamp()})
}

func addEndpoint(m map[string]any, e NeuralEntry, hideHidden bool) {
	if hideHidden && e.Hidden {
		return
	}
	if e.Socket != "" {
		m["socket_path"] = e.Socket
	} else if e.Endpoint != "" {
		m["endpoint"] = e.Endpoint
	}
}

func orEmptyStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Config returns the server config of the Neural API.
func (n *Neural) Config() Config {
	list := func(withSocket bool) []map[string]any {
		n.mu.Lock()
		defer n.mu.Unlock()
		out := []map[string]any{}
		for _, e := range n.entries {
			m := map[string]any{"name": e.Name, "state": e.State}
			d := map[string]any{"pid": e.PID}
			if withSocket {
				addEndpoint(d, e, true)
			}
			m["details"] = d
			if !withSocket {
				m["capabilities"] = orEmptyStrings(e.Capabilities)
				m["depends_on"] = orEmptyStrings(e.DependsOn)
			}
			out = append(out, m)
		}
		return out
	}
	return Config{Concurrent: true, Methods: map[string]HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"alive": true, "primal": "neural-api"}, nil
		},
		"lifecycle.status": func(context.Context, json.RawMessage) (any, error) {
			ps := list(true)
			healthy := 0
			for _, p := range ps {
				if p["state"] == StateRunning {
					healthy++
				}
			}
			return map[string]any{"primals": ps, "count": len(ps), "healthy": healthy}, nil
		},
		"topology.primals": func(context.Context, json.RawMessage) (any, error) {
			return list(false), nil
		},
		"topology.get": func(context.Context, json.RawMessage) (any, error) {
			return n.topology(), nil
		},
		"lifecycle.get": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(p, &a)
			e, ok := n.Entry(a.Name)
			if !ok {
				return nil, &ipc.RPCError{Code: -32001, Message: "no such primal"}
			}
			m := map[string]any{"name": e.Name, "pid": e.PID, "state": e.State,
				"depends_on": orEmptyStrings(e.DependsOn), "capabilities": orEmptyStrings(e.Capabilities),
				"metrics": n.Metrics(e.Name)}
			addEndpoint(m, e, false)
			return m, nil
		},
		"capability.discover": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct{ Capability string }
			if err := json.Unmarshal(p, &a); err != nil || a.Capability == "" {
				return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: capability is required"}
			}
			out := []map[string]any{}
			for _, e := range n.providers(a.Capability) {
				m := map[string]any{"name": e.Name, "state": e.State}
				addEndpoint(m, e, false)
				out = append(out, m)
			}
			return map[string]any{"capability": a.Capability, "providers": out}, nil
		},
		"capability.call": func(ctx context.Context, p json.RawMessage) (any, error) {
			var a struct {
				Capability string          `json:"capability"`
				Operation  string          `json:"operation"`
				Args       json.RawMessage `json:"args"`
				Caller     string          `json:"caller"`
			}
			if err := json.Unmarshal(p, &a); err != nil || a.Capability == "" {
				return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: capability is required"}
			}
			return n.Call(ctx, a.Caller, a.Capability, a.Operation, a.Args)
		},
		"graph.list": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"graphs": n.graphList()}, nil
		},
		"capabilities.list": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primal": "neural-api", "version": "2.93.0",
				"methods": []string{"capability.call", "capability.discover", "graph.list", "health.liveness",
					"lifecycle.get", "lifecycle.status", "topology.get", "topology.primals"}}, nil
		},
	}}
}

// qualify is the method a capability.call names.
func qualify(capability, operation string) string {
	if operation == "" {
		return capability
	}
	return capability + "." + operation
}

// providers returns the entries that provide a capability, as biomeOS
// routes: by group type (the method's domain) or by qualified method.
func (n *Neural) providers(capability string) []NeuralEntry {
	domain, _, _ := strings.Cut(capability, ".")
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []NeuralEntry
	for _, e := range n.entries {
		if slices.Contains(e.Capabilities, capability) || slices.Contains(e.Capabilities, domain) {
			out = append(out, e)
		}
	}
	return out
}

func (e NeuralEntry) endpoint() (ipc.Endpoint, error) {
	if e.Socket != "" {
		return ipc.Endpoint{Transport: ipc.Unix, Path: e.Socket}, nil
	}
	if e.Endpoint != "" {
		return ipc.ParseEndpoint(e.Endpoint)
	}
	return ipc.Endpoint{}, errors.New("no endpoint")
}

// Call routes one capability call to its provider, as capability.call
// does, and counts it for caller ("" when unknown). args may be nil.
func (n *Neural) Call(ctx context.Context, caller, capability, operation string, args json.RawMessage) (json.RawMessage, error) {
	method := qualify(capability, operation)
	ps := n.providers(method)
	if len(ps) == 0 {
		err := &ipc.RPCError{Code: -32001, Message: "No provider for capability: " + method}
		n.record(caller, "", method, 0, err)
		n.callEvent(caller, "", method, 0, err)
		return nil, err
	}
	p := ps[0]
	start := time.Now()
	res, err := n.forward(ctx, p, method, args)
	var fe *forwardError
	if errors.As(err, &fe) {
		data, _ := json.Marshal(map[string]string{"provider": fe.provider, "reason": fe.reason})
		err = &ipc.RPCError{Code: -32000, Message: fmt.Sprintf("Provider %s failed: %v", fe.provider, fe.err), Data: data}
	}
	d := time.Since(start)
	n.record(caller, p.Name, method, d, err)
	n.callEvent(caller, p.Name, method, d, err)
	return res, err
}

func (n *Neural) callEvent(caller, callee, method string, d time.Duration, err error) {
	if !n.CallEvents {
		return
	}
	ev := map[string]any{"caller": nullable(caller), "callee": nullable(callee), "capability": method, "ok": err == nil,
		"duration_ms": round3(float64(d.Microseconds()) / 1000), "timestamp": n.stamp()}
	if err != nil {
		ev["error"] = errorText(err)
	}
	n.publish("capability_called", ev)
}

// forwardError is a call a provider did not answer: reason "timeout" or
// "unreachable".
type forwardError struct {
	provider, reason string
	err              error
}

func (e *forwardError) Error() string { return e.err.Error() }

// forward makes one call on a provider, once. Errors: the provider's own
// *ipc.RPCError, or a *forwardError.
func (n *Neural) forward(ctx context.Context, p NeuralEntry, method string, args json.RawMessage) (json.RawMessage, error) {
	failed := func(reason string, err error) error {
		return &forwardError{provider: p.Name, reason: reason, err: err}
	}
	ep, err := p.endpoint()
	if err != nil {
		return nil, failed("unreachable", err)
	}
	ctx, cancel := context.WithTimeout(ctx, n.callTimeout())
	defer cancel()
	c, err := ipc.Dial(ctx, ep, ipc.Options{ConnectTimeout: n.callTimeout(),
		Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: n.mem}})
	if err != nil {
		return nil, failed("unreachable", err)
	}
	defer c.Close()
	var params any
	if len(args) > 0 {
		params = args
	}
	resp, err := c.Call(ctx, method, params)
	var re *ipc.RPCError
	switch {
	case errors.As(err, &re):
		return nil, re
	case err != nil:
		var te *ipc.TimeoutError
		if errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded) {
			return nil, failed("timeout", err)
		}
		return nil, failed("unreachable", err)
	}
	return resp.Result, nil
}

// routeKey is one (caller, callee, capability) edge of observed traffic.
type routeKey struct{ caller, callee, capability string }

// latencySamples bounds the latencies kept per route.
const latencySamples = 256

// maxRoutes bounds the routes a Neural API counts: callers name themselves,
// so a client could otherwise grow the table without end. Calls on routes
// beyond it are routed and not counted.
const maxRoutes = 4096

type sample struct {
	at    time.Time
	ms    float64
	bad   bool
	timed bool // it reached a provider: its latency counts
}

type routeStats struct {
	calls, errors int64
	samples       []sample // ring, the last latencySamples calls
	next          int
	first, last   time.Time
	lastErr       string
}

// errorText is how metrics report an error: "<code> <message>" for a
// JSON-RPC error object.
func errorText(err error) string {
	var re *ipc.RPCError
	if errors.As(err, &re) {
		return fmt.Sprintf("%d %s", re.Code, re.Message)
	}
	return err.Error()
}

func (n *Neural) record(caller, callee, capability string, d time.Duration, err error) {
	now := n.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	k := routeKey{caller, callee, capability}
	r := n.routes[k]
	if r == nil {
		if len(n.routes) >= maxRoutes {
			return
		}
		r = &routeStats{first: now}
		n.routes[k] = r
	}
	r.calls++
	s := sample{at: now, ms: float64(d.Microseconds()) / 1000, bad: err != nil, timed: callee != ""}
	if err != nil {
		r.errors++
		r.lastErr = errorText(err)
	}
	if len(r.samples) < latencySamples {
		r.samples = append(r.samples, s)
	} else {
		r.samples[r.next] = s
		r.next = (r.next + 1) % latencySamples
	}
	r.last = now
}

// routeJSON is one route's metrics, without the peer's name.
func (n *Neural) routeJSON(r *routeStats, capability string, now time.Time) map[string]any {
	w := n.window()
	var lat []float64
	inWin, badWin := 0, 0
	var oldest time.Time
	for _, s := range r.samples {
		if now.Sub(s.at) <= w {
			inWin++
			if oldest.IsZero() || s.at.Before(oldest) {
				oldest = s.at
			}
			if s.timed {
				lat = append(lat, s.ms)
			}
			if s.bad {
				badWin++
			}
		}
	}
	// The rate is over the part of the window the route has been seen in
	// (at least a second), so a route that just started is not diluted
	// over a window it did not exist in. With more calls in the window
	// than the ring holds, it is over the span of the ring instead.
	span := w
	if seen := now.Sub(r.first); seen < span {
		span = seen
	}
	if len(r.samples) == latencySamples && now.Sub(oldest) < span {
		span = now.Sub(oldest)
	}
	span = max(span, time.Second)
	m := map[string]any{"capability": capability, "calls": r.calls, "errors": r.errors,
		"calls_per_s": round3(float64(inWin) / span.Seconds()), "error_rate": 0.0,
		"last_call": r.last.UTC().Format(time.RFC3339Nano), "latency_ms": nil}
	if inWin > 0 {
		m["error_rate"] = round3(float64(badWin) / float64(inWin))
	}
	if len(lat) > 0 {
		sort.Float64s(lat)
		m["latency_ms"] = map[string]float64{"p50": round3(pct(lat, 50)), "p95": round3(pct(lat, 95)), "max": round3(lat[len(lat)-1])}
	}
	if r.lastErr != "" {
		m["last_error"] = r.lastErr
	}
	return m
}

func pct(sorted []float64, p int) float64 {
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// nullable is s, or JSON null when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// Metrics returns what lifecycle.get reports as a primal's metrics: its
// calls through capability.call (outbound, by callee and capability) and
// the calls routed to it (inbound, by caller and capability).
func (n *Neural) Metrics(name string) map[string]any {
	now := n.now()
	n.mu.Lock()
	defer n.mu.Unlock()
	keys := make([]routeKey, 0, len(n.routes))
	for k := range n.routes {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.caller != b.caller {
			return a.caller < b.caller
		}
		if a.callee != b.callee {
			return a.callee < b.callee
		}
		return a.capability < b.capability
	})
	out, in := []map[string]any{}, []map[string]any{}
	var calls, errs int64
	for _, k := range keys {
		r := n.routes[k]
		if k.caller == name {
			m := n.routeJSON(r, k.capability, now)
			m["callee"] = nullable(k.callee)
			out = append(out, m)
			calls += r.calls
			errs += r.errors
		}
		if k.callee == name {
			m := n.routeJSON(r, k.capability, now)
			m["caller"] = nullable(k.caller)
			in = append(in, m)
		}
	}
	return map[string]any{"collected_at": now.UTC().Format(time.RFC3339Nano), "window_s": int(n.window().Seconds()),
		"calls": calls, "errors": errs, "outbound": out, "inbound": in}
}

// topology is topology.get's answer.
func (n *Neural) topology() map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	nodes, edges := []map[string]any{}, []map[string]any{}
	for _, e := range n.entries {
		m := map[string]any{"id": e.Name, "name": e.Name, "state": e.State, "capabilities": orEmptyStrings(e.Capabilities)}
		addEndpoint(m, e, true)
		nodes = append(nodes, m)
		for _, d := range e.DependsOn {
			edges = append(edges, map[string]any{"from": e.Name, "to": d, "kind": "depends_on"})
		}
	}
	keys := make([]routeKey, 0, len(n.routes))
	for k := range n.routes {
		if k.caller != "" && k.callee != "" {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.caller+"\x00"+a.callee+"\x00"+a.capability < b.caller+"\x00"+b.callee+"\x00"+b.capability
	})
	for _, k := range keys {
		r := n.routes[k]
		edges = append(edges, map[string]any{"from": k.caller, "to": k.callee, "kind": "route", "capability": k.capability,
			"calls": r.calls, "errors": r.errors})
	}
	return map[string]any{"family_id": n.Family, "timestamp": n.now().UTC().Format(time.RFC3339Nano), "nodes": nodes, "edges": edges}
}
