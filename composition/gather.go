package composition

// Gather: the I/O that fills Build's orchestrator, graph, registry,
// traffic and federation inputs, as plain data.
//
// What is read from the biomeOS Neural API (shapes accepted loosely; peer
// data is bounded and never trusted):
//   - lifecycle.status → the primals' names; lifecycle.get {name} →
//     depends_on (names, or objects with a name) and metrics: an
//     "outbound" (or "routes", "calls") list of {to|provider|callee,
//     capability|method, calls_per_s, error_rate, p95_ms or latency_ms:
//     {p95}} (callee null: calls into a gap), or an object keyed by
//     provider; "inbound" is not read (it is the other end of outbound);
//   - topology.get → edges (or links, connections) {from|source|consumer,
//     to|target|provider, capability}: kind "route" edges are traffic,
//     read as routes when they carry calls_per_s, never as dependencies;
//     the others are the orchestrator's; and "routes" (capability.call
//     routing) as lifecycle.get's;
//   - graph.list → graphs (or a bare list) of {id, name, state, nodes:
//     [{id, primal, capability, state, depends_on}]}.
// A method the peer does not have is skipped without an error.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Gathered is what Gather learned from the ecosystem, as plain data for
// Build (Inputs) or a Model (SetGathered).
type Gathered struct {
	// Registered maps a consumed capability to the primals a registry
	// says provide it (ipc.discover).
	Registered map[string][]string
	// Orchestrated and Links are what the biomeOS Neural API said
	// (lifecycle.get depends_on, topology.get).
	Orchestrated []Orchestrated
	Links        []Link
	// Graphs are the deploy graphs (graph.list).
	Graphs []DeployGraph
	// Routes are the traffic figures the Neural API reported
	// (lifecycle.get metrics, capability.call routes).
	Routes []Route
	// TrafficReported is true when a traffic source answered.
	TrafficReported bool
	// Remote are the federation's other nodes, probed through their own
	// registries (nil when there are none or none was asked).
	Remote []RemoteNode
	// Errs says what could not be asked, per source; the rest still counts.
	Errs []error
}

// GatherOptions bound and shape Gather.
type GatherOptions struct {
	// Timeout bounds each call (default 2 s); ctx bounds the whole.
	Timeout time.Duration
	// Security is how to speak to registries (ipc.discover) and to the
	// federation's registries; the Neural API is dialled with the Dialer's.
	Security ipc.Security
	// MaxGet bounds lifecycle.get calls per Neural API (default 64).
	MaxGet int
	// Federation asks each other node's registry (discovery.peers) for
	// its targets and probes them.
	Federation bool
	// Probe tunes the probes of other nodes' targets.
	Probe discovery.ProbeOptions
	// MaxAsk bounds the gap capabilities asked of registries (default 32).
	MaxAsk int
}

// Gather asks what Build needs beyond the targets: the registries about
// capabilities nobody reachable provides, each Neural API about its
// primals' dependencies, topology, traffic and deploy graphs, and (with
// Federation) the other nodes' registries about their targets. d dials
// the Neural API. Everything ends when ctx does; what failed is in Errs.
func Gather(ctx context.Context, d *dial.Dialer, targets []*discovery.Target, opts GatherOptions) Gathered {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.MaxGet <= 0 {
		opts.MaxGet = 64
	}
	if opts.MaxAsk <= 0 {
		opts.MaxAsk = 32
	}
	var (
		out Gathered
		mu  sync.Mutex
		wg  sync.WaitGroup
	)
	addErr := func(err error) {
		mu.Lock()
		out.Errs = append(out.Errs, err)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		reg := askGaps(ctx, targets, opts)
		mu.Lock()
		out.Registered = reg
		mu.Unlock()
	}()
	for _, t := range targets {
		if t.Kind != discovery.KindNeural || t.NoProbe || t.Endpoint.Transport == "" {
			continue
		}
		if st := t.State(); st == discovery.StateDead || st == discovery.StateStale {
			continue
		}
		wg.Add(1)
		go func(t *discovery.Target) {
			defer wg.Done()
			var n Gathered
			if err := askNeural(ctx, d, t, opts, &n); err != nil {
				addErr(fmt.Errorf("neural api %s: %w", t.Name, err))
			}
			mu.Lock()
			out.Orchestrated = append(out.Orchestrated, n.Orchestrated...)
			out.Links = append(out.Links, n.Links...)
			out.Graphs = append(out.Graphs, n.Graphs...)
			out.Routes = append(out.Routes, n.Routes...)
			out.TrafficReported = out.TrafficReported || n.TrafficReported
			mu.Unlock()
		}(t)
	}
	if opts.Federation {
		for _, t := range targets {
			if t.Kind != discovery.KindRemote || t.Endpoint.Transport == "" {
				continue
			}
			wg.Add(1)
			go func(t *discovery.Target) {
				defer wg.Done()
				rn, err := askRemote(ctx, t, opts)
				if err != nil {
					addErr(fmt.Errorf("node %s: %w", RemoteName(t), err))
				}
				if rn != nil {
					mu.Lock()
					out.Remote = append(out.Remote, *rn)
					mu.Unlock()
				}
			}(t)
		}
	}
	wg.Wait()
	sort.Slice(out.Remote, func(i, j int) bool { return out.Remote[i].Node < out.Remote[j].Node })
	return out
}

// RemoteName is the node a KindRemote target (songbird@<node>) stands for.
// The name discovery.peers gave may be an alias, or only a source's: a
// registry that also lists the node's registry under its own name wins
// the target's name.
func RemoteName(t *discovery.Target) string {
	names := append([]string{t.Name}, t.Aliases...)
	for _, s := range t.Sources {
		names = append(names, s.Name)
	}
	for _, n := range names {
		if id, ok := strings.CutPrefix(n, "songbird@"); ok && id != "" {
			return id
		}
	}
	return t.Address
}

// askGaps asks the registries who provides each capability nobody
// reachable provides (by name and by domain), as check does.
func askGaps(ctx context.Context, targets []*discovery.Target, opts GatherOptions) map[string][]string {
	g := Build(Inputs{Targets: targets})
	out := map[string][]string{}
	asked := 0
	for _, e := range g.EdgesIn(StateGap) {
		if asked >= opts.MaxAsk || ctx.Err() != nil {
			break
		}
		if _, done := out[e.Capability]; done {
			continue
		}
		asked++
		caps := []string{e.Capability}
		if dom, _, ok := strings.Cut(e.Capability, "."); ok {
			caps = append(caps, dom)
		}
		var names []string
		for _, c := range caps {
			for _, r := range discovery.AskProviders(ctx, targets, c, opts.Timeout, opts.Security) {
				if r.PrimalID != "" && !containsStr(names, r.PrimalID) {
					names = append(names, r.PrimalID)
				}
			}
		}
		out[e.Capability] = names
	}
	for k, v := range out {
		if len(v) == 0 {
			delete(out, k)
		}
	}
	return out
}

// askRemote sweeps another node through its own registry: what it lists,
// probed; other nodes it names are not followed (one hop).
func askRemote(ctx context.Context, t *discovery.Target, opts GatherOptions) (*RemoteNode, error) {
	src := &discovery.SongbirdSource{Registry: discovery.Registry{Endpoint: t.Endpoint, Timeout: opts.Timeout, Security: opts.Security},
		Label: t.Address}
	po := opts.Probe
	po.Security = opts.Security
	d := discovery.New(discovery.Options{Sources: []discovery.Source{src}, NoRegistries: true, NoProc: true,
		Getenv: func(string) string { return "" }, Environ: func() []string { return nil }, Probe: po})
	snap, err := d.Sweep(ctx, nil)
	if snap == nil {
		return nil, err
	}
	rn := &RemoteNode{Node: RemoteName(t)}
	for _, x := range snap.Targets {
		if x.Kind != discovery.KindRemote {
			rn.Targets = append(rn.Targets, x)
		}
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, se := range snap.Errors {
		errs = append(errs, fmt.Errorf("%s: %s", se.Source, se.Err))
	}
	return rn, errors.Join(errs...)
}

// askNeural asks one Neural API what it knows about its primals.
func askNeural(ctx context.Context, d *dial.Dialer, t *discovery.Target, opts GatherOptions, out *Gathered) error {
	if d == nil {
		return errors.New("no dialer")
	}
	c, err := d.Dial(ctx, dial.FromDiscovery(t), dial.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	call := func(method string, params any) (json.RawMessage, bool, error) {
		cctx, cancel := context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
		resp, err := c.Call(cctx, method, params)
		var rpc *ipc.RPCError
		if errors.As(err, &rpc) {
			if rpc.Code == -32601 || strings.Contains(strings.ToLower(rpc.Message), "method not found") ||
				strings.Contains(strings.ToLower(rpc.Message), "unknown method") {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("%s: %w", method, err)
		}
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", method, err)
		}
		return resp.Result, true, nil
	}
	var errs []error
	var names []string
	for _, m := range []string{"lifecycle.status", "topology.primals"} {
		res, ok, err := call(m, nil)
		if err != nil {
			errs = append(errs, err)
			if fatal(err) {
				return errors.Join(errs...)
			}
			continue
		}
		if !ok {
			continue
		}
		ps, _ := discovery.ParseNeuralPrimals(res)
		for _, p := range ps {
			if !containsStr(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	for i, n := range names {
		if i >= opts.MaxGet || ctx.Err() != nil {
			break
		}
		res, ok, err := call("lifecycle.get", map[string]string{"name": n})
		if err != nil {
			errs = append(errs, err)
			if fatal(err) {
				return errors.Join(errs...)
			}
			continue
		}
		if !ok {
			break // no lifecycle.get at all
		}
		var m map[string]any
		if json.Unmarshal(res, &m) != nil {
			continue
		}
		o := Orchestrated{Name: n, State: str(m, "state", "status"), DependsOn: nameList(m["depends_on"])}
		out.Orchestrated = append(out.Orchestrated, o)
		if mv, has := m["metrics"]; has && mv != nil {
			out.TrafficReported = true
			out.Routes = append(out.Routes, parseRoutes(n, mv)...)
		}
	}
	if res, ok, err := call("topology.get", nil); err != nil {
		errs = append(errs, err)
	} else if ok {
		links, routes, traffic := parseTopology(res)
		out.Links = append(out.Links, links...)
		out.Routes = append(out.Routes, routes...)
		out.TrafficReported = out.TrafficReported || traffic
	}
	if res, ok, err := call("graph.list", nil); err != nil {
		errs = append(errs, err)
	} else if ok {
		out.Graphs = append(out.Graphs, parseGraphs(res)...)
	}
	return errors.Join(errs...)
}

// fatal reports whether an error ended the connection.
func fatal(err error) bool {
	var ce *ipc.ClosedError
	var be *ipc.BTSPRequiredError
	return errors.As(err, &ce) || errors.As(err, &be) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// nameList reads a list of names, or of objects with a name.
func nameList(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, x := range arr {
		var s string
		switch y := x.(type) {
		case string:
			s = y
		case map[string]any:
			s = str(y, "name", "primal", "primal_id", "id")
		}
		if s != "" && len(s) <= 256 && len(out) < 256 && !containsStr(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func num(m map[string]any, keys ...string) (float64, bool) {
	for _, k := range keys {
		if f, ok := m[k].(float64); ok && f >= 0 && f < 1e12 {
			return f, true
		}
	}
	return 0, false
}

// routeOf reads one route object; from is the consumer when it names none.
func routeOf(from string, o map[string]any) (Route, bool) {
	r := Route{From: orStr(str(o, "from", "caller", "consumer", "source"), from),
		To:         str(o, "to", "provider", "callee", "target"),
		Capability: str(o, "capability", "method", "operation"), P95ms: -1}
	if r.To == "" && r.Capability != "" {
		// A route to nobody (callee null): the calls went into a gap.
		if _, named := o["callee"]; named {
			r.To = MissingID(r.Capability)
		}
	}
	if r.From == "" || r.To == "" {
		return r, false
	}
	rate, ok := num(o, "calls_per_s", "rate", "rps", "calls_per_sec")
	if !ok {
		return r, false
	}
	r.CallsPerS = rate
	if e, ok := num(o, "error_rate"); ok && e <= 1 {
		r.ErrorRate = e
	}
	if p, ok := num(o, "p95_ms", "latency_p95_ms"); ok {
		r.P95ms = p
	} else if lm, ok := o["latency_ms"].(map[string]any); ok {
		if p, ok := num(lm, "p95"); ok {
			r.P95ms = p
		}
	}
	return r, true
}

// parseRoutes reads lifecycle.get metrics: {routes|calls: [...]} or
// {routes|calls: {provider: {...}}}, or a bare list.
func parseRoutes(from string, v any) []Route {
	var items []any
	switch m := v.(type) {
	case []any:
		items = m
	case map[string]any:
		for _, k := range []string{"routes", "calls", "consumes", "outbound"} {
			switch x := m[k].(type) {
			case []any:
				items = append(items, x...)
			case map[string]any:
				keys := make([]string, 0, len(x))
				for p := range x {
					keys = append(keys, p)
				}
				sort.Strings(keys)
				for _, p := range keys {
					if o, ok := x[p].(map[string]any); ok {
						if str(o, "to", "provider", "callee", "target") == "" {
							o["to"] = p
						}
						items = append(items, o)
					}
				}
			}
		}
	}
	var out []Route
	for _, it := range items {
		if o, ok := it.(map[string]any); ok && len(out) < discovery.MaxEntries {
			if r, ok := routeOf(from, o); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// parseTopology reads topology.get: its edges as links (and routes when
// they carry figures), and its capability.call routes.
func parseTopology(res json.RawMessage) (links []Link, routes []Route, traffic bool) {
	var m map[string]any
	if json.Unmarshal(res, &m) != nil {
		return nil, nil, false
	}
	for _, k := range []string{"edges", "links", "connections"} {
		arr, _ := m[k].([]any)
		for _, x := range arr {
			o, ok := x.(map[string]any)
			if !ok || len(links) >= discovery.MaxEntries {
				continue
			}
			l := Link{From: str(o, "from", "source", "consumer"), To: str(o, "to", "target", "provider"),
				Capability: str(o, "capability", "method")}
			if l.From == "" || l.To == "" {
				continue
			}
			if r, ok := routeOf("", o); ok {
				routes = append(routes, r)
				traffic = true
			}
			// A route edge is traffic the orchestrator saw, not a
			// dependency it declares: calling it declared would hide
			// an undeclared edge.
			if str(o, "kind", "type") == "route" {
				continue
			}
			links = append(links, l)
		}
	}
	if rv, has := m["routes"]; has {
		traffic = true
		routes = append(routes, parseRoutes("", rv)...)
	}
	return links, routes, traffic
}

// parseGraphs reads graph.list: {graphs: [...]} or a bare list.
func parseGraphs(res json.RawMessage) []DeployGraph {
	var v any
	if json.Unmarshal(res, &v) != nil {
		return nil
	}
	var arr []any
	switch x := v.(type) {
	case []any:
		arr = x
	case map[string]any:
		arr, _ = x["graphs"].([]any)
	}
	var out []DeployGraph
	for _, it := range arr {
		o, ok := it.(map[string]any)
		if !ok || len(out) >= 256 {
			continue
		}
		g := DeployGraph{ID: str(o, "id", "graph_id", "name"), Name: str(o, "name", "id", "graph_id"), State: str(o, "state", "status")}
		g.Nodes = parseGraphNodes(o["nodes"])
		if g.ID != "" {
			out = append(out, g)
		}
	}
	return out
}
