package composition

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// MaxCalls bounds the observed calls a Model keeps (oldest dropped first).
const MaxCalls = 50000

// Model keeps a composition map live: new targets, gathered inputs, calls
// and events update it, and a node that leaves stays drawn as gone until
// Moved. A Model is not safe for concurrent use; the Graphs it hands out
// are never modified and may be shared.
type Model struct {
	in    Inputs
	g     *Graph
	gone  map[string]Node
	clock func() time.Time
	// dirty: calls arrived since g was built; the next Graph (or a change
	// that needs the current map) rebuilds once for all of them.
	dirty bool
}

// NewModel returns a model built from in. Calls in in are kept (bounded by
// MaxCalls); in.Now is ignored: the model's clock is time.Now.
func NewModel(in Inputs) *Model {
	m := &Model{in: in, gone: map[string]Node{}, clock: time.Now}
	m.rebuild()
	return m
}

// SetClock replaces the clock the traffic window ends at (for tests and
// replays).
func (m *Model) SetClock(now func() time.Time) {
	m.clock = now
	m.rebuild()
}

// Graph returns the current map. Calls added since the last call are
// counted here, once for all of them (a frame's worth of call events costs
// one rebuild, not one each).
func (m *Model) Graph() *Graph {
	if m.dirty {
		m.rebuild()
	}
	return m.g
}

// Inputs returns what the map is built from now.
func (m *Model) Inputs() Inputs { return m.in }

func (m *Model) rebuild() {
	m.in.Now = m.clock()
	m.in.Gone = m.in.Gone[:0:0]
	for _, n := range m.gone {
		m.in.Gone = append(m.in.Gone, n)
	}
	m.g = Build(m.in)
	m.dirty = false
}

// SetTargets replaces the targets (this machine's and other nodes'). A
// target that was there and is not now stays in the map as gone.
func (m *Model) SetTargets(local []*discovery.Target, remote []RemoteNode) {
	was := m.Graph()
	m.in.Targets, m.in.Remote = local, remote
	m.in.Health = nil // the probes are newer
	now := map[string]bool{}
	for _, t := range local {
		if t != nil {
			now[t.ID] = true
			delete(m.gone, t.ID)
		}
	}
	for _, r := range remote {
		for _, t := range r.Targets {
			if t != nil {
				now[r.Node+"/"+t.ID] = true
				delete(m.gone, r.Node+"/"+t.ID)
			}
		}
	}
	for _, n := range was.Nodes {
		if n.Target != nil && !now[n.ID] && !n.Gone {
			n.Gone, n.Health = true, HealthGone
			m.gone[n.ID] = n
		}
	}
	m.rebuild()
}

// SetGathered replaces what the orchestrator, deploy graphs, registries
// and traffic sources said (see Gather).
func (m *Model) SetGathered(g Gathered) {
	m.in.Registered = g.Registered
	m.in.Orchestrated = g.Orchestrated
	m.in.Links = g.Links
	m.in.Graphs = g.Graphs
	m.in.Routes = g.Routes
	m.in.TrafficReported = g.TrafficReported
	if g.Remote != nil {
		m.in.Remote = g.Remote
	}
	m.rebuild()
}

// AddCalls records observed calls (the user's own calls from history have
// From == YouID).
func (m *Model) AddCalls(calls ...Call) {
	if len(calls) == 0 {
		return
	}
	m.in.Calls = append(m.in.Calls, calls...)
	if over := len(m.in.Calls) - MaxCalls; over > 0 {
		m.in.Calls = append([]Call(nil), m.in.Calls[over:]...)
	}
	m.dirty = true
}

// Tick moves the traffic window to now. Calls older than the window stay
// (up to MaxCalls): they still say an edge was used.
func (m *Model) Tick() {
	m.rebuild()
}

// Moved tells the model the user moved: gone nodes are dropped.
func (m *Model) Moved() {
	if len(m.gone) == 0 {
		return
	}
	m.gone = map[string]Node{}
	m.rebuild()
}

// SetHealth changes one node's health and the states of the edges that
// reach it, without rebuilding the map. It reports whether anything
// changed.
func (m *Model) SetHealth(id, health string) bool {
	n, ok := m.Graph().Node(id)
	if !ok || n.Health == health || n.Missing || n.Gone {
		return false
	}
	g := m.g.shallow()
	i := g.index[id]
	g.Nodes[i].Health = health
	hs := make(map[string]string, len(m.in.Health)+1)
	for k, v := range m.in.Health {
		hs[k] = v
	}
	hs[id] = health
	m.in.Health = hs
	for _, j := range g.in[id] {
		e := &g.Edges[j]
		e.State, e.Why = g.edgeState(e)
	}
	m.g = g
	return true
}

// shallow copies the graph's nodes and edges (not what they point to) so
// a change does not touch a graph already handed out.
func (g *Graph) shallow() *Graph {
	c := *g
	c.Nodes = append([]Node(nil), g.Nodes...)
	c.Edges = append([]Edge(nil), g.Edges...)
	return &c
}

// Change says what an event did to the model.
type Change struct {
	// Graph is true when the map changed.
	Graph bool
	// Refresh is true when the event says the ecosystem changed in a way
	// only a new discovery sweep or Gather can show (a registration, a
	// topology change): the caller should run one.
	Refresh bool
}

// Apply updates the map from one event: liveness, registry changes
// (ipc.watch), the biomeOS events primal_discovered, health_changed,
// topology_changed, graph_started, node_completed and node_failed, and any
// event that names a caller and a callee (an observed call).
func (m *Model) Apply(ev events.Event) Change {
	var p map[string]any
	_ = json.Unmarshal(ev.Payload, &p)
	switch ev.Kind {
	case events.KindLiveness:
		h := map[string]string{events.StateAlive: string(discovery.StateLive), events.StateStale: string(discovery.StateStale),
			events.StateGone: string(discovery.StateDead)}[ev.Name]
		if id, ok := m.Graph().Find(ev.Source); ok && h != "" {
			return Change{Graph: m.SetHealth(id, h)}
		}
		return Change{}
	case events.KindRegistry:
		return Change{Graph: m.provisional(p, ev.Name != "unregistered"), Refresh: true}
	}
	name := ev.Name
	if t := str(p, "type"); name == "" && t != "" {
		name = t
	}
	switch name {
	case "primal_discovered":
		return Change{Graph: m.provisional(p, true), Refresh: true}
	case "health_changed":
		who := str(p, "primal", "primal_id", "name", "id")
		h := healthWord(p)
		if id, ok := m.Graph().Find(who); ok && h != "" {
			return Change{Graph: m.SetHealth(id, h)}
		}
		return Change{}
	case "topology_changed":
		return Change{Refresh: true}
	case "graph_started", "node_completed", "node_failed", "node_started", "graph_completed", "graph_failed":
		return Change{Graph: m.graphEvent(name, p)}
	}
	if c, ok := callFrom(ev, p); ok {
		m.AddCalls(c)
		return Change{Graph: true}
	}
	return Change{}
}

// provisional adds (or, for an unregistration, marks gone) the target an
// event names, until the next sweep probes it.
func (m *Model) provisional(p map[string]any, add bool) bool {
	name := str(p, "primal", "primal_id", "name", "id")
	if name == "" {
		return false
	}
	if id, ok := m.Graph().Find(name); ok {
		if add {
			return false
		}
		return m.SetHealth(id, HealthGone)
	}
	if !add {
		return false
	}
	t := &discovery.Target{ID: "name:" + discovery.SrcSongbird + ":" + name, Name: name, Kind: discovery.KindPrimal, NoProbe: true}
	if s := str(p, "endpoint", "socket", "socket_path", "native_endpoint"); s != "" {
		if ep, err := ipc.ParseEndpoint(s); err == nil {
			t.Endpoint, t.Address, t.NoProbe = ep, ep.String(), false
			t.ID = discovery.EndpointKey(ep, "")
		}
	}
	if cs, ok := p["capabilities"].([]any); ok {
		for _, c := range cs {
			if s, ok := c.(string); ok && len(t.Capabilities) < 1024 {
				t.Capabilities = append(t.Capabilities, s)
			}
		}
	}
	m.in.Targets = append(append([]*discovery.Target(nil), m.in.Targets...), t)
	delete(m.gone, t.ID)
	m.rebuild()
	return true
}

// graphEvent records a deploy graph's progress.
func (m *Model) graphEvent(name string, p map[string]any) bool {
	gid := str(p, "graph_id", "graph", "id", "name")
	if gid == "" {
		return false
	}
	gs := append([]DeployGraph(nil), m.in.Graphs...)
	k := -1
	for i := range gs {
		if gs[i].ID == gid || gs[i].Name == gid {
			k = i
		}
	}
	if k < 0 {
		gs = append(gs, DeployGraph{ID: gid, Name: str(p, "name", "graph_name")})
		k = len(gs) - 1
	}
	dg := gs[k]
	dg.Nodes = append([]GraphNode(nil), dg.Nodes...)
	switch name {
	case "graph_started":
		dg.State = "running"
		for i := range dg.Nodes {
			dg.Nodes[i].State = "pending"
		}
		for _, n := range parseGraphNodes(p["nodes"]) {
			if !hasGraphNode(dg.Nodes, n.ID) {
				n.State = "pending"
				dg.Nodes = append(dg.Nodes, n)
			}
		}
	case "graph_completed":
		dg.State = orStr(str(p, "status", "state"), "completed")
	case "graph_failed":
		dg.State = "failed"
	default:
		nid := str(p, "node_id", "node", "step")
		state := map[string]string{"node_completed": "completed", "node_failed": "failed", "node_started": "running"}[name]
		found := false
		for i := range dg.Nodes {
			if dg.Nodes[i].ID == nid {
				dg.Nodes[i].State, found = state, true
			}
		}
		if !found && nid != "" {
			dg.Nodes = append(dg.Nodes, GraphNode{ID: nid, Primal: orStr(str(p, "primal", "primal_id"), nid), State: state})
		}
	}
	gs[k] = dg
	m.in.Graphs = gs
	m.rebuild()
	return true
}

func hasGraphNode(ns []GraphNode, id string) bool {
	for _, n := range ns {
		if n.ID == id {
			return true
		}
	}
	return false
}

// parseGraphNodes reads a deploy graph's nodes: [{id, primal, capability,
// depends_on}] (a node with no id is named by its primal).
func parseGraphNodes(v any) []GraphNode {
	arr, _ := v.([]any)
	var out []GraphNode
	for _, x := range arr {
		o, ok := x.(map[string]any)
		if !ok || len(out) >= discovery.MaxEntries {
			continue
		}
		n := GraphNode{ID: str(o, "id", "node_id", "name"), Primal: str(o, "primal", "primal_id", "target"),
			Capability: str(o, "capability", "operation", "method"), State: str(o, "state", "status")}
		if n.ID == "" {
			n.ID = n.Primal
		}
		if n.Primal == "" {
			n.Primal = n.ID
		}
		n.DependsOn = strList(o["depends_on"])
		if n.ID != "" {
			out = append(out, n)
		}
	}
	return out
}

// callFrom reads an event that names a caller and a callee as a call.
func callFrom(ev events.Event, p map[string]any) (Call, bool) {
	from := str(p, "caller", "from", "consumer", "source_primal")
	to := str(p, "callee", "to", "provider", "target_primal")
	method := str(p, "method", "capability", "operation")
	if _, named := p["callee"]; to == "" && named && method != "" {
		to = MissingID(method) // callee null: a call into a gap
	}
	if from == "" || to == "" {
		return Call{}, false
	}
	c := Call{At: ev.Time, From: from, To: to, Method: method}
	if c.At.IsZero() {
		c.At = time.Now()
	}
	for _, k := range []string{"latency_ms", "duration_ms"} {
		if ms, ok := p[k].(float64); ok && ms >= 0 && ms < 1e9 {
			c.Latency = time.Duration(ms * float64(time.Millisecond))
			break
		}
	}
	if ok, has := p["ok"].(bool); has {
		c.Failed = !ok
	}
	if e, has := p["error"]; has && e != nil && e != false && e != "" {
		c.Failed = true
	}
	return c, true
}

// healthWord maps a health_changed event's words to a discovery state.
func healthWord(p map[string]any) string {
	if b, ok := p["healthy"].(bool); ok {
		if b {
			return string(discovery.StateLive)
		}
		return string(discovery.StateStale)
	}
	switch strings.ToLower(str(p, "health", "status", "state", "to", "new")) {
	case "healthy", "alive", "live", "up", "running", "ok", "ready":
		return string(discovery.StateLive)
	case "degraded", "stale", "unhealthy", "slow":
		return string(discovery.StateStale)
	case "down", "dead", "stopped", "gone", "failed", "unreachable":
		return string(discovery.StateDead)
	}
	return ""
}

// str returns the first of keys that holds a non-empty string (bounded).
func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			if len(s) > 256 {
				s = s[:256]
			}
			return s
		}
	}
	return ""
}

func strList(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		if s, ok := x.(string); ok && s != "" && len(out) < 256 {
			out = append(out, s)
		}
	}
	return out
}

func orStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
