package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// quietComposition starts an ecosystem whose composition moves only when
// the test says so: no tick in the test's time, no stale schedule, no pause
// between graph nodes, routed calls bounded by callTimeout (what a call to
// the stale provider waits; generous enough for a loaded machine).
func quietComposition(t *testing.T, callTimeout time.Duration) *Ecosystem {
	t.Helper()
	eco, err := Start(context.Background(), Options{Tick: time.Hour, Churn: time.Hour, StaleAfter: -1, GraphStep: -1,
		CallTimeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eco.Close() })
	return eco
}

// eventLog collects the biomeOS API's events.
type eventLog struct {
	ch chan sse.Event
}

func openEvents(t *testing.T, eco *Ecosystem) *eventLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sse.OpenUnix(ctx, eco.BiomeOSAPIPath(), sse.Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l := &eventLog{ch: make(chan sse.Event, 256)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := st.Next()
			if err != nil {
				return
			}
			select {
			case l.ch <- ev:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); st.Close(); <-done })
	return l
}

// wait returns the data of the first event of type typ whose data
// satisfies ok.
func (l *eventLog) wait(t *testing.T, typ string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case ev := <-l.ch:
			var d map[string]any
			if ev.Type == typ && json.Unmarshal(ev.Data, &d) == nil && d["type"] == typ && (ok == nil || ok(d)) {
				return d
			}
		case <-deadline:
			t.Fatalf("no %s event", typ)
			return nil
		}
	}
}

func neuralCall(t *testing.T, eco *Ecosystem, method string, params any) json.RawMessage {
	t.Helper()
	return call(t, eco.NeuralAPIPath(), method, params).Result
}

type route struct {
	Callee     *string  `json:"callee"`
	Caller     *string  `json:"caller"`
	Capability string   `json:"capability"`
	Calls      int64    `json:"calls"`
	Errors     int64    `json:"errors"`
	CallsPerS  float64  `json:"calls_per_s"`
	ErrorRate  float64  `json:"error_rate"`
	LastError  string   `json:"last_error"`
	Latency    *latency `json:"latency_ms"`
}

type latency struct{ P50, P95, Max float64 }

type lifecycle struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	DependsOn []string `json:"depends_on"`
	Metrics   struct {
		WindowS  int     `json:"window_s"`
		Calls    int64   `json:"calls"`
		Errors   int64   `json:"errors"`
		Outbound []route `json:"outbound"`
		Inbound  []route `json:"inbound"`
	} `json:"metrics"`
}

func lifecycleGet(t *testing.T, eco *Ecosystem, name string) lifecycle {
	t.Helper()
	var l lifecycle
	raw := neuralCall(t, eco, "lifecycle.get", map[string]string{"name": name})
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("lifecycle.get %s: %v\n%s", name, err, raw)
	}
	return l
}

func findRoute(rs []route, capability string) *route {
	for i := range rs {
		if rs[i].Capability == capability {
			return &rs[i]
		}
	}
	return nil
}

// declared is what a primal says about itself in capabilities.list.
type declared struct {
	Primal   string   `json:"primal"`
	Methods  []string `json:"methods"`
	Consumed []string `json:"consumed_capabilities"`
	Groups   []struct {
		Type string `json:"type"`
	} `json:"provided_capabilities"`
	OpDeps map[string][]string `json:"operation_dependencies"`
}

func capsOf(t *testing.T, ep ipc.Endpoint) declared {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ep, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Call(ctx, "capabilities.list", nil)
	if err != nil {
		t.Fatalf("%s capabilities.list: %v", ep, err)
	}
	var d declared
	if err := json.Unmarshal(resp.Result, &d); err != nil {
		t.Fatalf("%s: %v", ep, err)
	}
	return d
}

func (d declared) provides(capability string) bool {
	domain, _, _ := strings.Cut(capability, ".")
	if slices.Contains(d.Methods, capability) {
		return true
	}
	for _, g := range d.Groups {
		if g.Type == domain || g.Type == capability {
			return true
		}
	}
	return false
}

// TestDemoCompositionGapAndCycles reads every registered primal's
// capabilities.list over the wire, as the map does: toadstool's
// ledger.append has no provider (neither in the registry nor through the
// Neural API, which refuses to route it), rhizocrypt and nestgate consume
// from each other, and their operation dependencies form a cycle.
func TestDemoCompositionGapAndCycles(t *testing.T) {
	eco := quietComposition(t, 2*time.Second)
	var watch struct {
		Events []RegistryEvent `json:"events"`
	}
	if err := json.Unmarshal(call(t, eco.Path("songbird.sock"), "ipc.watch", map[string]int{"since_revision": 0}).Result, &watch); err != nil {
		t.Fatal(err)
	}
	all := map[string]declared{}
	for _, ev := range watch.Events {
		if ev.Kind != "registered" || ev.Primal == HolonID || ev.Primal == "songbird" {
			continue
		}
		ep, err := ipc.ParseEndpoint(ev.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		all[ev.Primal] = capsOf(t, ep)
	}
	for _, p := range []string{"toadstool", "rhizocrypt", "nestgate", "coralreef", "beardog"} {
		if _, ok := all[p]; !ok {
			t.Fatalf("%s not registered: %v", p, watch.Events)
		}
	}
	providersOf := func(capability string) []string {
		var out []string
		for name, d := range all {
			if d.provides(capability) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	var gaps []string
	consumes := map[string][]string{} // consumer -> providers
	for name, d := range all {
		for _, c := range d.Consumed {
			ps := providersOf(c)
			if len(ps) == 0 {
				gaps = append(gaps, name+"→"+c)
			}
			consumes[name] = append(consumes[name], ps...)
		}
	}
	if !slices.Equal(gaps, []string{"toadstool→ledger.append"}) {
		t.Errorf("gaps %v, want only toadstool→ledger.append", gaps)
	}
	if !slices.Contains(consumes["rhizocrypt"], "nestgate") || !slices.Contains(consumes["nestgate"], "rhizocrypt") {
		t.Errorf("no rhizocrypt⇄nestgate cycle: %v", consumes)
	}
	if !slices.Contains(consumes["toadstool"], StaleProvider) {
		t.Errorf("toadstool does not consume from %s: %v", StaleProvider, consumes["toadstool"])
	}
	// operation_dependencies, merged across primals, hold a cycle.
	deps := map[string][]string{}
	for _, d := range all {
		for m, pre := range d.OpDeps {
			deps[m] = append(deps[m], pre...)
		}
	}
	if cyc := findCycle(deps); len(cyc) == 0 {
		t.Errorf("no cycle in operation_dependencies %v", deps)
	} else if !slices.Contains(cyc, "storage.artifact.store") || !slices.Contains(cyc, "dag.event.append") {
		t.Errorf("cycle %v does not cross nestgate and rhizocrypt", cyc)
	}

	// The Neural API knows no provider and says so when asked to route.
	var disc struct {
		Providers []any `json:"providers"`
	}
	_ = json.Unmarshal(neuralCall(t, eco, "capability.discover", map[string]string{"capability": "ledger.append"}), &disc)
	if len(disc.Providers) != 0 {
		t.Errorf("capability.discover ledger.append: %v", disc.Providers)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: eco.NeuralAPIPath()}, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(ctx, "capability.call", map[string]any{"capability": "ledger", "operation": "append", "args": map[string]any{}, "caller": "toadstool"})
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != -32001 || !strings.Contains(re.Message, "ledger.append") {
		t.Fatalf("capability.call to a gap: %v", err)
	}
	// depends_on names the cycle too.
	if l := lifecycleGet(t, eco, "nestgate"); !slices.Contains(l.DependsOn, "rhizocrypt") {
		t.Errorf("nestgate depends_on %v", l.DependsOn)
	}
}

// findCycle returns one cycle of a dependency graph, or nil.
func findCycle(g map[string][]string) []string {
	const (
		white = iota
		grey
		black
	)
	color := map[string]int{}
	var stack, found []string
	var visit func(n string) bool
	visit = func(n string) bool {
		color[n] = grey
		stack = append(stack, n)
		for _, m := range g[n] {
			if color[m] == grey {
				i := slices.Index(stack, m)
				found = append([]string(nil), stack[i:]...)
				return true
			}
			if color[m] == white && visit(m) {
				return true
			}
		}
		stack = stack[:len(stack)-1]
		color[n] = black
		return false
	}
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if color[k] == white && visit(k) {
			return found
		}
	}
	return nil
}

// TestDemoCompositionTraffic: the demo's consumers call through the
// Neural API, which reports calls, errors and latency per callee and
// capability in lifecycle.get, and route edges in topology.get; a call
// primalscope makes through capability.call is routed and counted too.
func TestDemoCompositionTraffic(t *testing.T) {
	eco := quietComposition(t, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 4 {
		eco.TrafficRound(ctx)
	}
	rz := lifecycleGet(t, eco, "rhizocrypt")
	sign := findRoute(rz.Metrics.Outbound, "crypto.sign_ed25519")
	// 3 a round, 4 rounds; the 10th had bad params.
	if sign == nil || sign.Callee == nil || *sign.Callee != "beardog" || sign.Calls != 12 || sign.Errors != 1 ||
		sign.Latency == nil || sign.Latency.P95 <= 0 || sign.CallsPerS <= 0 || sign.ErrorRate <= 0 || !strings.Contains(sign.LastError, "-32602") {
		t.Fatalf("rhizocrypt → beardog crypto.sign_ed25519: %+v (metrics %+v)", sign, rz.Metrics)
	}
	if rz.Metrics.WindowS != 60 || rz.Metrics.Calls != 16 || rz.Metrics.Errors != 1 {
		t.Errorf("rhizocrypt totals: %+v", rz.Metrics)
	}
	// The cycle carries traffic both ways.
	if in := findRoute(rz.Metrics.Inbound, "dag.event.append"); in == nil || in.Caller == nil || *in.Caller != "nestgate" || in.Calls != 4 || in.Errors != 0 {
		t.Errorf("nestgate → rhizocrypt dag.event.append: %+v", in)
	}
	// Calls to the gap are counted, with no callee.
	ts := lifecycleGet(t, eco, "toadstool")
	if g := findRoute(ts.Metrics.Outbound, "ledger.append"); g == nil || g.Callee != nil || g.Calls != 4 || g.Errors != 4 || g.ErrorRate != 1 {
		t.Errorf("toadstool → (nobody) ledger.append: %+v", g)
	}
	if sc := findRoute(ts.Metrics.Outbound, "shader.compile"); sc == nil || sc.Calls != 4 || sc.Errors != 0 {
		t.Errorf("toadstool → coralreef shader.compile while healthy: %+v", sc)
	}
	// Squirrel calls what it never declared.
	sq := lifecycleGet(t, eco, "squirrel")
	if u := findRoute(sq.Metrics.Outbound, "dag.session.list"); u == nil || *u.Callee != "rhizocrypt" || u.Calls != 4 {
		t.Errorf("squirrel → rhizocrypt dag.session.list: %+v", u)
	}

	// A call over the wire is routed to the provider and counted.
	res := neuralCall(t, eco, "capability.call", map[string]any{"capability": "crypto", "operation": "hash",
		"args": map[string]string{"data": "aGk="}, "caller": "tester"})
	if !strings.Contains(string(res), `"hash"`) {
		t.Fatalf("capability.call crypto.hash: %s", res)
	}
	bd := lifecycleGet(t, eco, "beardog")
	if in := findRoute(bd.Metrics.Inbound, "crypto.hash"); in == nil {
		t.Fatalf("beardog inbound: %+v", bd.Metrics.Inbound)
	}
	found := false
	for _, r := range bd.Metrics.Inbound {
		if r.Caller != nil && *r.Caller == "tester" && r.Capability == "crypto.hash" && r.Calls == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("the tester's call is not in beardog's inbound: %+v", bd.Metrics.Inbound)
	}

	var topo struct {
		Nodes []struct{ ID, State string }
		Edges []struct {
			From, To, Kind, Capability string
			Calls                      int64
		}
	}
	if err := json.Unmarshal(neuralCall(t, eco, "topology.get", nil), &topo); err != nil {
		t.Fatal(err)
	}
	var depends, routes bool
	for _, e := range topo.Edges {
		depends = depends || e.From == "toadstool" && e.To == StaleProvider && e.Kind == "depends_on"
		routes = routes || e.From == "rhizocrypt" && e.To == "beardog" && e.Kind == "route" && e.Capability == "crypto.sign_ed25519" && e.Calls == 12
	}
	if !depends || !routes || len(topo.Nodes) < 6 {
		t.Errorf("topology.get: depends_on %v, route %v: %+v", depends, routes, topo)
	}
}

// TestDemoCompositionStaleProvider: the stale provider stops answering in
// time, the Neural API says so (state, events) and the calls routed to it
// fail by timeout; when it recovers it answers again and is rediscovered.
func TestDemoCompositionStaleProvider(t *testing.T) {
	eco := quietComposition(t, time.Second)
	events := openEvents(t, eco)
	eco.SetStale(true)
	ev := events.wait(t, "health_changed", func(d map[string]any) bool { return d["primal"] == StaleProvider })
	if ev["from"] != "running" || ev["to"] != "unhealthy" {
		t.Errorf("health_changed %v", ev)
	}
	events.wait(t, "topology_changed", nil)

	var status struct {
		Primals []struct{ Name, State string }
		Healthy int
		Count   int
	}
	if err := json.Unmarshal(neuralCall(t, eco, "lifecycle.status", nil), &status); err != nil {
		t.Fatal(err)
	}
	for _, p := range status.Primals {
		if p.Name == StaleProvider && p.State != "unhealthy" {
			t.Errorf("lifecycle.status says %s is %s", p.Name, p.State)
		}
	}
	if status.Healthy != status.Count-1 {
		t.Errorf("healthy %d of %d", status.Healthy, status.Count)
	}
	// health.liveness gets no answer in time.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: eco.Path(StaleProvider + ".sock")}, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = c.Call(short, "health.liveness", nil)
	cancelShort()
	var te *ipc.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("liveness of a stale provider: %v, want a timeout", err)
	}
	eco.TrafficRound(ctx)
	ts := lifecycleGet(t, eco, "toadstool")
	if sc := findRoute(ts.Metrics.Outbound, "shader.compile"); sc == nil || sc.Errors != 1 || !strings.Contains(sc.LastError, "timeout") && !strings.Contains(sc.LastError, "no answer") {
		t.Errorf("toadstool → coralreef while stale: %+v", sc)
	}

	eco.SetStale(false)
	ev = events.wait(t, "primal_discovered", func(d map[string]any) bool { return d["primal"] == StaleProvider })
	if ev["socket_path"] != eco.Path(StaleProvider+".sock") {
		t.Errorf("primal_discovered %v", ev)
	}
	if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}

// TestDemoCompositionDeployGraph: the deploy graph's first run fails node
// "dag" (and skips the node after it), with the events on the biomeOS API's
// stream and the run in graph.list; the second run completes.
func TestDemoCompositionDeployGraph(t *testing.T) {
	eco := quietComposition(t, 2*time.Second)
	events := openEvents(t, eco)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run, err := eco.RunGraph(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != "failed" || !slices.Equal(run.FailedNodes, []string{"dag", "ai"}) {
		t.Fatalf("first run %+v", run)
	}
	started := events.wait(t, "graph_started", nil)
	if started["graph_id"] != GraphID || started["nodes"] != float64(6) {
		t.Errorf("graph_started %v", started)
	}
	events.wait(t, "node_completed", func(d map[string]any) bool { return d["node"] == "crypto" && d["primal"] == "beardog" })
	failed := events.wait(t, "node_failed", func(d map[string]any) bool { return d["node"] == FailingNode })
	if !strings.Contains(failed["error"].(string), "simulated failure on run 1") || failed["run_id"] != run.RunID {
		t.Errorf("node_failed %v", failed)
	}
	events.wait(t, "node_failed", func(d map[string]any) bool {
		return d["node"] == "ai" && strings.Contains(d["error"].(string), "skipped")
	})
	if d := events.wait(t, "graph_completed", nil); d["status"] != "failed" {
		t.Errorf("graph_completed %v", d)
	}
	events.wait(t, "topology_changed", func(d map[string]any) bool { return d["reason"] == "graph_completed" })

	type graphs struct {
		Graphs []struct {
			ID, Status string
			Runs       int
			Nodes      []struct{ ID, Primal, Status, Error string }
			LastRun    struct {
				RunID  string `json:"run_id"`
				Status string
			} `json:"last_run"`
			History []any
		}
	}
	var gl graphs
	if err := json.Unmarshal(neuralCall(t, eco, "graph.list", nil), &gl); err != nil || len(gl.Graphs) != 1 {
		t.Fatalf("graph.list: %v %+v", err, gl)
	}
	g := gl.Graphs[0]
	st := map[string]string{}
	for _, n := range g.Nodes {
		st[n.ID] = n.Status
	}
	if g.ID != GraphID || g.Status != "failed" || g.Runs != 1 || g.LastRun.RunID != run.RunID || st["dag"] != "failed" || st["ai"] != "skipped" || st["compute"] != "completed" {
		t.Errorf("graph.list after the first run: %+v", g)
	}

	run, err = eco.RunGraph(ctx)
	if err != nil || run.Status != "completed" || len(run.FailedNodes) != 0 {
		t.Fatalf("second run %+v %v", run, err)
	}
	gl = graphs{}
	_ = json.Unmarshal(neuralCall(t, eco, "graph.list", nil), &gl)
	if g := gl.Graphs[0]; g.Status != "completed" || g.Runs != 2 || len(g.History) != 2 {
		t.Errorf("graph.list after the second run: %+v", g)
	}
}

// TestDemoCompositionRunsByItself: with a fast tick the demo makes its own
// traffic, runs its graph (failing the node once) and lets its provider go
// stale and come back, without being told; seen on the event stream and
// over the wire as a client polls.
func TestDemoCompositionRunsByItself(t *testing.T) {
	eco, err := Start(context.Background(), Options{Tick: 25 * time.Millisecond, Churn: time.Hour,
		StaleAfter: 300 * time.Millisecond, StaleFor: 200 * time.Millisecond, StaleEvery: time.Hour, GraphEvery: time.Hour,
		CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	// The provider goes stale, and comes back.
	events := openEvents(t, eco)
	events.wait(t, "health_changed", func(d map[string]any) bool { return d["primal"] == StaleProvider && d["to"] == "unhealthy" })
	events.wait(t, "health_changed", func(d map[string]any) bool { return d["primal"] == StaleProvider && d["to"] == "running" })
	deadline := time.Now().Add(8 * time.Second)
	var traffic, graphFailed, recovered bool
	var last string
	for !(traffic && graphFailed && recovered) {
		if time.Now().After(deadline) {
			t.Fatalf("traffic %v, graph run failed %v, recovered %v; last: %s", traffic, graphFailed, recovered, last)
		}
		time.Sleep(25 * time.Millisecond)
		l := lifecycleGet(t, eco, "rhizocrypt")
		r := findRoute(l.Metrics.Outbound, "crypto.sign_ed25519")
		traffic = r != nil && r.Calls >= 3
		gl := string(neuralCall(t, eco, "graph.list", nil))
		graphFailed = strings.Contains(gl, `"status":"failed"`) && strings.Contains(gl, "simulated failure on run 1")
		recovered = lifecycleGet(t, eco, StaleProvider).State == "running" // back, and staying so for an hour
		last = gl
	}
}

// TestDemoFederation: the demo's registry names a second node in
// discovery.peers; its registry, reached over TCP from that answer, lists
// skunkbat, which consumes from this node, and names this node back.
func TestDemoFederation(t *testing.T) {
	eco, err := Start(context.Background(), Options{Tick: time.Hour, Churn: time.Hour, StaleAfter: -1, Federation: true})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	if p := call(t, quietComposition(t, time.Second).Path("songbird.sock"), "discovery.peers", nil); !strings.Contains(string(p.Result), `"peers":[]`) {
		t.Fatalf("without Federation, discovery.peers: %s", p.Result)
	}
	type peers struct {
		Peers []struct {
			NodeID  string `json:"node_id"`
			Address string `json:"address"`
			TCPPort int    `json:"tcp_port"`
		} `json:"peers"`
	}
	var p peers
	if err := json.Unmarshal(call(t, eco.Path("songbird.sock"), "discovery.peers", nil).Result, &p); err != nil || len(p.Peers) != 1 || p.Peers[0].NodeID != RemoteNodeID {
		t.Fatalf("discovery.peers: %+v %v", p, err)
	}
	tcp := func(addr string, port int) ipc.Endpoint {
		return ipc.Endpoint{Transport: ipc.TCP, Address: net.JoinHostPort(addr, strconv.Itoa(port))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	callEP := func(ep ipc.Endpoint, method string, out any) {
		t.Helper()
		c, err := ipc.Dial(ctx, ep, clientOpts())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		resp, err := c.Call(ctx, method, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", ep, method, err)
		}
		if err := json.Unmarshal(resp.Result, out); err != nil {
			t.Fatalf("%s %s: %v", ep, method, err)
		}
	}
	remote := tcp(p.Peers[0].Address, p.Peers[0].TCPPort)
	var list struct {
		Services []struct {
			PrimalID string `json:"primal_id"`
		} `json:"services"`
	}
	callEP(remote, "ipc.list", &list)
	if len(list.Services) != 1 || list.Services[0].PrimalID != "skunkbat" {
		t.Fatalf("remote ipc.list: %+v", list)
	}
	var back peers
	callEP(remote, "discovery.peers", &back)
	if len(back.Peers) != 1 || back.Peers[0].NodeID != "demo-node-1" {
		t.Fatalf("remote discovery.peers: %+v", back)
	}
	var local struct {
		Services []struct {
			PrimalID string `json:"primal_id"`
		} `json:"services"`
	}
	callEP(tcp(back.Peers[0].Address, back.Peers[0].TCPPort), "ipc.list", &local)
	if !strings.Contains(fmt.Sprint(local.Services), "beardog") {
		t.Fatalf("this node's registry over TCP: %+v", local)
	}
	// ipc.list gives no endpoint (as Songbird's does not): resolve it.
	c, err := ipc.Dial(ctx, remote, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Call(ctx, "ipc.resolve", map[string]string{"primal_id": "skunkbat"})
	var res struct {
		Native string `json:"native_endpoint"`
	}
	if err != nil || json.Unmarshal(resp.Result, &res) != nil {
		t.Fatalf("ipc.resolve skunkbat: %v", err)
	}
	ep, err := ipc.ParseEndpoint(res.Native)
	if err != nil || ep.Transport != ipc.TCP {
		t.Fatalf("skunkbat's endpoint %q: %v", res.Native, err)
	}
	if d := capsOf(t, ep); !slices.Equal(d.Consumed, []string{"crypto.sign_ed25519"}) {
		t.Fatalf("skunkbat consumes %v", d.Consumed)
	}
}
