package composition

import (
	"sort"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// Source says where an edge was learned.
type Source string

// Edge sources, in the order they are listed on an edge.
const (
	// SrcDeclared: a consumed_capabilities entry matched to a provider
	// (or a registry's ipc.discover answer).
	SrcDeclared Source = "declared"
	// SrcOrchestrator: biomeOS lifecycle.get depends_on, topology.get.
	SrcOrchestrator Source = "orchestrator"
	// SrcGraph: a deploy graph's order (graph.list, graph events).
	SrcGraph Source = "graph"
	// SrcObserved: traffic the ecosystem reported, or primalscope's own calls.
	SrcObserved Source = "observed"
)

var sourceOrder = map[Source]int{SrcDeclared: 0, SrcOrchestrator: 1, SrcGraph: 2, SrcObserved: 3}

// State is an edge's state.
type State string

// Edge states, from the most to the least urgent: an edge has the first
// that applies.
const (
	// StateGap: nobody provides the capability.
	StateGap State = "gap"
	// StateDegraded: the provider is stale, unreachable, gone, below the
	// required level, or refuses BTSP.
	StateDegraded State = "degraded"
	// StateUndeclared: seen in traffic, never declared by any source.
	StateUndeclared State = "undeclared"
	// StateUnused: declared, never seen in traffic although traffic is
	// reported for its consumer.
	StateUnused State = "unused"
	// StateOK: none of the above.
	StateOK State = "ok"
)

// Node kinds beyond discovery's target kinds.
const (
	// KindMissing is a capability that nobody provides.
	KindMissing = "missing"
	// KindYou is primalscope itself, the caller of its own recorded calls.
	KindYou = "you"
)

// YouID is the ID of the node that stands for primalscope's user.
const YouID = "you"

// Node health values beyond discovery's target states.
const (
	HealthGone    = "gone"
	HealthMissing = "missing"
)

// MissingID returns the ID of the node of a capability nobody provides.
func MissingID(capability string) string { return "missing:" + capability }

// Node is one thing in the map: a target, a missing capability, or the user.
type Node struct {
	// ID is stable across refreshes: the target's ID (its endpoint key),
	// prefixed with "<node>/" for another node's targets; MissingID(cap)
	// for a missing capability; YouID for the user.
	ID string `json:"id"`
	// Name is what people call it (peer text: escape before display).
	Name   string `json:"name"`
	Family string `json:"family"`
	// Node is the federation node it runs on ("" for this machine).
	Node string `json:"node"`
	// Kind is a discovery.Kind, KindMissing or KindYou.
	Kind string `json:"kind"`
	// Health is a discovery.State, HealthGone or HealthMissing.
	Health string `json:"health"`
	// Level is the Capability Wire Standard level of its last probe.
	Level int `json:"level"`
	// Missing marks a capability nobody provides.
	Missing bool `json:"missing"`
	// Gone marks a node that has left since the user last moved (Model).
	Gone bool `json:"gone,omitempty"`
	// Step is a running deploy graph's progress on this node
	// ("deploy tower: completed"); "" when none.
	Step string `json:"step,omitempty"`
	// StepFailed is true when Step reports a failure.
	StepFailed bool `json:"step_failed,omitempty"`
	// Target is the discovery target behind the node (nil for the others).
	Target *discovery.Target `json:"-"`
}

// Group is the key nodes are grouped by in drawings: node, then family.
func (n *Node) Group() string {
	g := n.Family
	if n.Node != "" {
		g = n.Node + "/" + g
	}
	return g
}

// Edge is one consumer → provider relation.
type Edge struct {
	// From is the consumer, To the provider (node IDs).
	From string `json:"from"`
	To   string `json:"to"`
	// Capability is what is consumed: a method or a domain; "" when the
	// sources name none (an orchestrator's depends_on, a graph's order).
	Capability string `json:"capability"`
	// Sources lists where the edge was learned, in a fixed order.
	Sources []Source `json:"sources"`
	State   State    `json:"state"`
	// Traffic is nil when no source reports traffic on the edge.
	Traffic *Traffic `json:"traffic,omitempty"`
	// Why says in words why the state is what it is (for degraded, gap,
	// unused and undeclared edges).
	Why string `json:"why,omitempty"`
	// InCycle marks an edge on a named cycle.
	InCycle bool `json:"in_cycle,omitempty"`

	seen bool // traffic was ever seen on it
}

// Has reports whether the edge came from source s.
func (e *Edge) Has(s Source) bool {
	for _, x := range e.Sources {
		if x == s {
			return true
		}
	}
	return false
}

// Graph is the composition map at one moment. A Graph handed out is never
// modified afterwards.
type Graph struct {
	// Nodes are sorted by group, name, then ID.
	Nodes []Node `json:"nodes"`
	// Edges are sorted by From, Capability, To.
	Edges []Edge `json:"edges"`
	// Cycles are cycles of node IDs in consumption (or in
	// operation_dependencies, mapped to the methods' providers), each a
	// path that ends where it started.
	Cycles [][]string `json:"cycles"`
	// MethodCycles are the operation_dependencies cycles as method paths.
	MethodCycles [][]string `json:"method_cycles,omitempty"`
	// TrafficKnown is false when no source reports traffic between
	// primals: then no edge is unused, and figures are absent, not zero.
	TrafficKnown bool `json:"traffic_known"`
	// Window is the sliding window traffic is computed over.
	Window time.Duration `json:"window"`
	// At is when the graph was built.
	At time.Time `json:"at"`

	reported bool            // Inputs.TrafficReported
	callers  map[string]bool // consumers whose traffic a source reports
	minLevel int

	index map[string]int
	out   map[string][]int // node ID → indexes of edges from it
	in    map[string][]int // node ID → indexes of edges to it
}

// Node returns the node with the given ID.
func (g *Graph) Node(id string) (*Node, bool) {
	i, ok := g.index[id]
	if !ok {
		return nil, false
	}
	return &g.Nodes[i], true
}

// Out returns the edges whose consumer is id (what it needs).
func (g *Graph) Out(id string) []*Edge { return g.edgesAt(g.out[id]) }

// In returns the edges whose provider is id (what needs it).
func (g *Graph) In(id string) []*Edge { return g.edgesAt(g.in[id]) }

func (g *Graph) edgesAt(ix []int) []*Edge {
	out := make([]*Edge, len(ix))
	for i, j := range ix {
		out[i] = &g.Edges[j]
	}
	return out
}

// Find returns the ID of the node a user names: its ID, name, one of its
// aliases, address or paths. ok is false when none matches.
func (g *Graph) Find(name string) (string, bool) {
	if _, ok := g.index[name]; ok {
		return name, true
	}
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if n.Name == name || n.Target != nil && n.Target.HasName(name) {
			return n.ID, true
		}
	}
	return "", false
}

// EdgesIn returns the edges in state s.
func (g *Graph) EdgesIn(s State) []*Edge {
	var out []*Edge
	for i := range g.Edges {
		if g.Edges[i].State == s {
			out = append(out, &g.Edges[i])
		}
	}
	return out
}

// reindex rebuilds the lookup maps after Nodes or Edges changed.
func (g *Graph) reindex() {
	g.index = make(map[string]int, len(g.Nodes))
	for i := range g.Nodes {
		g.index[g.Nodes[i].ID] = i
	}
	g.out = make(map[string][]int, len(g.Nodes))
	g.in = make(map[string][]int, len(g.Nodes))
	for i := range g.Edges {
		e := &g.Edges[i]
		g.out[e.From] = append(g.out[e.From], i)
		g.in[e.To] = append(g.in[e.To], i)
	}
}

// RemoteNode is another node of a federation: what discovery found
// through its own registry (see Gather).
type RemoteNode struct {
	// Node is the node's id (discovery.peers node_id, or its address).
	Node string
	// Targets are that node's targets, probed like local ones.
	Targets []*discovery.Target
}

// Orchestrated is one primal as the biomeOS Neural API describes it
// (lifecycle.get).
type Orchestrated struct {
	Name  string
	State string
	// DependsOn names the primals it depends on.
	DependsOn []string
}

// Link is an edge an orchestrator reports between two primals by name
// (topology.get), with the capability when it says one.
type Link struct {
	From, To, Capability string
}

// DeployGraph is one deploy graph and its progress (graph.list, graph
// events).
type DeployGraph struct {
	ID, Name string
	// State is "running", "completed", "failed" or what the source said.
	State string
	Nodes []GraphNode
}

// GraphNode is one node of a deploy graph.
type GraphNode struct {
	ID string
	// Primal names the primal the node deploys or calls.
	Primal string
	// Capability is the capability the node calls, when it says one.
	Capability string
	// State is "pending", "running", "completed" or "failed".
	State string
	// DependsOn lists graph node IDs that run first.
	DependsOn []string
}

// Call is one observed call: from a consumer to a provider, named by
// node ID or by name; From is YouID for primalscope's own calls.
type Call struct {
	At       time.Time
	From, To string
	// Method is the method (or capability) called.
	Method  string
	Latency time.Duration
	Failed  bool
	// Alt are other names of To, tried in order when To names no node
	// (a recorded call's target name after its endpoint).
	Alt []string
}

// Route is traffic a source reports already summed up (the Neural API's
// lifecycle.get metrics, its capability.call routes).
type Route struct {
	From, To, Capability string
	CallsPerS, ErrorRate float64
	// P95ms is the p95 latency in milliseconds (negative: not reported).
	P95ms float64
}

// Inputs is everything Build turns into a graph. Only Targets is needed.
type Inputs struct {
	// Targets are this machine's targets, probed (with capabilities where
	// possible).
	Targets []*discovery.Target
	// Remote are the other nodes of a federation.
	Remote []RemoteNode
	// Registered maps a capability to the primals a registry says provide
	// it (ipc.discover), by name.
	Registered map[string][]string
	// Orchestrated and Links are what the biomeOS Neural API says.
	Orchestrated []Orchestrated
	Links        []Link
	// Graphs are the deploy graphs known.
	Graphs []DeployGraph
	// Calls are observed calls (events naming caller and callee, the
	// user's own calls from history). Only those in the window count.
	Calls []Call
	// Routes are traffic figures sources reported already summed up.
	Routes []Route
	// TrafficReported is true when a source that reports traffic between
	// primals answered, even with no traffic: declared edges it never saw
	// are then unused.
	TrafficReported bool
	// MinLevel is the level consumers require of providers: a provider
	// below it makes the edge degraded (0: no requirement).
	MinLevel int
	// Now is the end of the traffic window (default time.Now()).
	Now time.Time
	// Window is the traffic window (default DefaultWindow).
	Window time.Duration
	// Gone are nodes that left but are still drawn (see Model).
	Gone []Node
	// Health overrides nodes' health by ID (events newer than the probe).
	Health map[string]string
}

// DefaultWindow is the default traffic window.
const DefaultWindow = time.Minute

// Build builds the composition map from inputs. It does no I/O.
func Build(in Inputs) *Graph {
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	if in.Window <= 0 {
		in.Window = DefaultWindow
	}
	// Size the tables once: growing maps and the edge slice was most of
	// the work for 10,000 edges.
	nt, ne := len(in.Targets), len(in.Calls)/4+len(in.Routes)
	for _, r := range in.Remote {
		nt += len(r.Targets)
	}
	for _, t := range in.Targets {
		if t != nil && t.Probe != nil && t.Probe.Capabilities != nil {
			ne += 2 * len(t.Probe.Capabilities.Consumed)
		}
	}
	b := &builder{in: in, g: &Graph{At: in.Now, Window: in.Window, Nodes: make([]Node, 0, nt+8), Edges: make([]Edge, 0, ne),
		index: make(map[string]int, nt+8)},
		pairs: make(map[[2]string][]int, ne), byName: make(map[string][]string, nt)}
	b.addTargets("", in.Targets)
	for _, r := range in.Remote {
		b.addTargets(r.Node, r.Targets)
	}
	for id, h := range in.Health {
		if i, ok := b.g.index[id]; ok && h != "" {
			b.g.Nodes[i].Health = h
		}
	}
	for _, n := range in.Gone {
		if _, ok := b.g.index[n.ID]; !ok {
			n.Gone, n.Health = true, HealthGone
			b.addNode(n)
		}
	}
	b.declared()
	b.orchestrated()
	b.deployGraphs()
	b.observed()
	b.finish()
	return b.g
}

type builder struct {
	in     Inputs
	g      *Graph
	pairs  map[[2]string][]int // (from, to) → edge indexes
	byName map[string][]string // name or alias → node IDs, this machine first
	deps   map[string][]string // method → prerequisite methods (op deps)
	px     *providerIndex
	// seen marks edges with traffic ever seen; callers, consumers whose
	// traffic some source reports.
	seen         map[int]bool
	srcBack      []Source
	callers      map[string]bool
	trafficKnown bool
}

func (b *builder) addNode(n Node) {
	if b.g.index == nil {
		b.g.index = map[string]int{}
	}
	if _, ok := b.g.index[n.ID]; ok {
		return
	}
	b.g.index[n.ID] = len(b.g.Nodes)
	b.g.Nodes = append(b.g.Nodes, n)
	if n.Name != "" {
		b.byName[n.Name] = append(b.byName[n.Name], n.ID)
	}
	if n.Target != nil {
		for _, a := range n.Target.Aliases {
			b.byName[a] = append(b.byName[a], n.ID)
		}
		if n.Target.Address != "" && n.Target.Address != n.Name {
			b.byName[n.Target.Address] = append(b.byName[n.Target.Address], n.ID)
		}
		if n.Target.Probe != nil && n.Target.Probe.Capabilities != nil {
			if p := n.Target.Probe.Capabilities.Primal; p != "" && p != n.Name {
				b.byName[p] = append(b.byName[p], n.ID)
			}
		}
	}
}

func (b *builder) addTargets(node string, ts []*discovery.Target) {
	for _, t := range ts {
		if t == nil {
			continue
		}
		id := t.ID
		if node != "" {
			id = node + "/" + id
		}
		b.addNode(Node{ID: id, Name: t.Name, Family: t.Family, Node: node, Kind: string(t.Kind),
			Health: string(t.State()), Level: t.Level, Target: t})
	}
}

// resolve finds the node a name refers to, preferring one on the same
// federation node as near ("" when none is known).
func (b *builder) resolve(name, near string) string {
	if name == "" {
		return ""
	}
	if _, ok := b.g.index[name]; ok {
		return name
	}
	ids := b.byName[name]
	if len(ids) == 0 {
		return ""
	}
	nearNode := ""
	if i, ok := b.g.index[near]; ok {
		nearNode = b.g.Nodes[i].Node
	}
	for _, id := range ids {
		if b.g.Nodes[b.g.index[id]].Node == nearNode {
			return id
		}
	}
	return ids[0]
}

// resolveOrAdd resolves a name, adding a node for it when nobody known
// has that name (a primal only an orchestrator or a graph names).
func (b *builder) resolveOrAdd(name, near string) string {
	if id := b.resolve(name, near); id != "" {
		return id
	}
	if name == "" {
		return ""
	}
	id := "name:" + name
	b.addNode(Node{ID: id, Name: name, Kind: string(discovery.KindPrimal), Health: string(discovery.StateUnknown)})
	return id
}

// edge returns the edge for key k, adding it when new, and records s.
func (b *builder) edge(from, to, capability string, s Source) *Edge {
	// The edges between two nodes are few: they are found through the
	// pair, not a map of their own.
	pair := [2]string{from, to}
	i, ok := -1, false
	for _, j := range b.pairs[pair] {
		if b.g.Edges[j].Capability == capability {
			i, ok = j, true
			break
		}
	}
	if !ok {
		i = len(b.g.Edges)
		b.pairs[pair] = append(b.pairs[pair], i)
		// Sources come from one shared backing array, four to an edge
		// (there are four sources): one allocation, not one per edge.
		if len(b.srcBack) < 4 {
			b.srcBack = make([]Source, 4*max(64, cap(b.g.Edges)-len(b.g.Edges)))
		}
		srcs := b.srcBack[:0:4]
		b.srcBack = b.srcBack[4:]
		b.g.Edges = append(b.g.Edges, Edge{From: from, To: to, Capability: capability, Sources: srcs})
	}
	e := &b.g.Edges[i]
	if !e.Has(s) {
		e.Sources = append(e.Sources, s)
	}
	return e
}

// provider is what one node offers, for matching consumed capabilities.
type providerIndex struct {
	method  map[string][]string // exact method → node IDs
	prefix  map[string][]string // a dotted prefix of a method → node IDs
	domain  map[string][]string // domain or provided_capabilities type → node IDs
	listed  map[string][]string // registry-listed capability/domain (no method list) → node IDs
	hasList map[string]bool     // node advertises a method list
}

func appendOnce(m map[string][]string, k, id string) {
	l := m[k]
	if len(l) > 0 && l[len(l)-1] == id {
		return
	}
	m[k] = append(l, id)
}

func (b *builder) providers() *providerIndex {
	px := &providerIndex{method: map[string][]string{}, prefix: map[string][]string{}, domain: map[string][]string{},
		listed: map[string][]string{}, hasList: map[string]bool{}}
	for i := range b.g.Nodes {
		n := &b.g.Nodes[i]
		t := n.Target
		if t == nil {
			continue
		}
		for _, c := range t.Capabilities {
			appendOnce(px.domain, c, n.ID)
		}
		var caps *capability.Capabilities
		if t.Probe != nil {
			caps = t.Probe.Capabilities
		}
		if caps == nil || len(caps.Methods) == 0 {
			for _, c := range t.Capabilities {
				appendOnce(px.listed, c, n.ID)
			}
			continue
		}
		px.hasList[n.ID] = true
		for _, m := range caps.Methods {
			appendOnce(px.method, m, n.ID)
			for j := strings.LastIndexByte(m, '.'); j > 0; j = strings.LastIndexByte(m[:j], '.') {
				appendOnce(px.prefix, m[:j], n.ID)
			}
			d, _ := capability.SplitMethod(m)
			appendOnce(px.domain, d, n.ID)
		}
		for _, g := range caps.Provided {
			appendOnce(px.domain, g.Type, n.ID)
		}
	}
	return px
}

// match returns who provides a consumed entry, as discovery.Compose
// decides: the exact method, a method under it, a domain or group of that
// name, or (for a target known only from a registry's list) its domain.
func (px *providerIndex) match(consumed string) []string {
	// Providers of one capability are few: a linear check beats a set.
	var out []string
	add := func(id string) {
		for _, x := range out {
			if x == id {
				return
			}
		}
		out = append(out, id)
	}
	for _, l := range [][]string{px.method[consumed], px.prefix[consumed], px.domain[consumed]} {
		for _, id := range l {
			add(id)
		}
	}
	d, _ := capability.SplitMethod(consumed)
	for _, id := range px.listed[d] {
		if !px.hasList[id] {
			add(id)
		}
	}
	sort.Strings(out)
	return out
}

func (b *builder) declared() {
	px := b.providers()
	b.px = px
	b.deps = map[string][]string{}
	nn := len(b.g.Nodes)
	for i := 0; i < nn; i++ {
		n := b.g.Nodes[i]
		t := n.Target
		if t == nil || t.Probe == nil || t.Probe.Capabilities == nil {
			continue
		}
		caps := t.Probe.Capabilities
		for m, pre := range caps.OperationDependencies {
			b.deps[m] = append(b.deps[m], pre...)
		}
		for _, c := range caps.Consumed {
			provs := px.match(c)
			// Prefer providers on the consumer's own node; reach across
			// the federation only when none is local.
			var local []string
			for _, p := range provs {
				if p != n.ID && b.g.Nodes[b.g.index[p]].Node == n.Node {
					local = append(local, p)
				}
			}
			if len(local) == 0 {
				for _, p := range provs {
					if p != n.ID {
						local = append(local, p)
					}
				}
			}
			for _, name := range b.in.Registered[c] {
				if id := b.resolveOrAdd(name, n.ID); id != n.ID && !containsStr(local, id) {
					local = append(local, id)
				}
			}
			if len(local) == 0 {
				mid := MissingID(c)
				b.addNode(Node{ID: mid, Name: c, Kind: KindMissing, Health: HealthMissing, Missing: true})
				b.edge(n.ID, mid, c, SrcDeclared)
				continue
			}
			for _, p := range local {
				b.edge(n.ID, p, c, SrcDeclared)
			}
		}
	}
}

func (b *builder) orchestrated() {
	for _, o := range b.in.Orchestrated {
		from := b.resolveOrAdd(o.Name, "")
		for _, d := range o.DependsOn {
			to := b.resolveOrAdd(d, from)
			if to != "" && to != from {
				b.dependency(from, to, "", SrcOrchestrator)
			}
		}
	}
	for _, l := range b.in.Links {
		from := b.resolveOrAdd(l.From, "")
		to := b.resolveOrAdd(l.To, from)
		if from != "" && to != "" && from != to {
			b.dependency(from, to, l.Capability, SrcOrchestrator)
		}
	}
}

// dependency records an edge a source gives without (or with) a
// capability: without one, it joins every edge between the same two nodes
// that has one; it becomes an edge of its own only when there is none.
func (b *builder) dependency(from, to, capability string, s Source) {
	if capability != "" {
		b.edge(from, to, capability, s)
		return
	}
	joined := false
	for _, i := range b.pairs[[2]string{from, to}] {
		if e := &b.g.Edges[i]; e.Capability != "" {
			if !e.Has(s) {
				e.Sources = append(e.Sources, s)
			}
			joined = true
		}
	}
	if !joined {
		b.edge(from, to, "", s)
	}
}

func (b *builder) deployGraphs() {
	for _, dg := range b.in.Graphs {
		primal := map[string]string{}
		for _, gn := range dg.Nodes {
			primal[gn.ID] = b.resolveOrAdd(gn.Primal, "")
		}
		for _, gn := range dg.Nodes {
			from := primal[gn.ID]
			if from == "" {
				continue
			}
			if i, ok := b.g.index[from]; ok && gn.State != "" {
				n := &b.g.Nodes[i]
				name := dg.Name
				if name == "" {
					name = dg.ID
				}
				n.Step = "deploy " + name + ": " + gn.State
				n.StepFailed = gn.State == "failed"
			}
			for _, d := range gn.DependsOn {
				to := primal[d]
				if to != "" && to != from {
					b.dependency(from, to, "", SrcGraph)
				}
			}
		}
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
