package demo

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/internal/peer"
)

// The demo's composition, as the composition map sees it:
//
//   - a gap: toadstool consumes ledger.append, which nobody provides (and
//     tries to call it: the Neural API counts the failed calls with no callee);
//   - cycles: rhizocrypt consumes storage.artifact.store from nestgate, which
//     consumes dag.event.append from rhizocrypt; and the operation
//     dependencies dag.session.create → storage.artifact.store →
//     dag.event.append → dag.session.create;
//   - a degraded edge: coralreef (shader.compile, consumed by toadstool)
//     goes stale — it holds every answer — from StaleAfter for StaleFor,
//     every StaleEvery; the Neural API says "unhealthy" and emits
//     health_changed, topology_changed, then primal_discovered when it is back;
//   - observed traffic: each tick the consumers call through the Neural
//     API's capability.call (see trafficRoutes), which counts calls, errors
//     and latency per caller, callee and capability (lifecycle.get metrics);
//     squirrel calls dag.session.list without declaring it (undeclared), and
//     sweetgrass declares dag.session.create and never calls it (unused);
//   - a deploy graph (GraphID) that runs one tick after start and then every
//     GraphEvery, and fails node "dag" on its first run only.
//
// The wire shapes are documented in internal/peer's doc.go.

// GraphID is the id of the demo's deploy graph.
const GraphID = "tower-composition"

// StaleProvider is the primal that goes stale.
const StaleProvider = "coralreef"

// FailingNode is the deploy graph node that fails on the first run.
const FailingNode = "dag"

// NeuralAPIPath is the socket of the demo's Neural API.
func (e *Ecosystem) NeuralAPIPath() string { return e.Path("neural-api-" + e.Family + ".sock") }

// coralreef serves the shader-compiler primal that goes stale.
func (e *Ecosystem) coralreef() error {
	p := &peer.Primal{
		Name: "coralreef", Version: "0.3.1", Domain: "shader", License: "AGPL-3.0-or-later", Level3: true,
		Groups: []peer.Group{{Type: "shader", Description: "Shader compilation for compute primals",
			Methods: []string{"compile", "validate"}}},
		Consumed: []string{},
		Costs:    map[string]map[string]any{"shader.compile": {"cpu": "high", "latency_ms": 40}},
		OpDeps:   map[string][]string{"shader.compile": {"shader.validate"}},
		Handlers: map[string]peer.HandlerFunc{
			"shader.compile": func(_ context.Context, p json.RawMessage) (any, error) {
				var a struct {
					Source string `json:"source"`
				}
				_ = json.Unmarshal(orEmpty(p), &a)
				return map[string]any{"module": base64.StdEncoding.EncodeToString([]byte("spirv:" + a.Source)), "warnings": []string{}}, nil
			},
		},
	}
	cfg := e.stall.Wrap(p.Config())
	what := "shader primal (level 3) that goes stale only when told"
	if e.opts.StaleAfter >= 0 {
		what = fmt.Sprintf("shader primal (level 3), stale from %s for %s every %s (the composition's degraded edge)", e.opts.StaleAfter, e.opts.StaleFor, e.opts.StaleEvery)
	}
	return e.serveAndRegister("coralreef.sock", p, what, cfg)
}

// neuralEntries are the primals the demo's Neural API manages.
func (e *Ecosystem) neuralEntries() []peer.NeuralEntry {
	pid := e.pid
	return []peer.NeuralEntry{
		{Name: "beardog", State: peer.StateRunning, Socket: e.Path("beardog.sock"), PID: pid, Capabilities: []string{"crypto", "btsp"}},
		{Name: "rhizocrypt", State: peer.StateRunning, Socket: e.Path("rhizocrypt.sock"), PID: pid, Capabilities: []string{"dag"},
			DependsOn: []string{"beardog", "nestgate"}},
		{Name: "nestgate", State: peer.StateRunning, Socket: e.Path("nestgate.sock"), PID: pid, Hidden: true, Capabilities: []string{"storage"},
			DependsOn: []string{"beardog", "rhizocrypt"}},
		{Name: "squirrel", State: peer.StateRunning, Socket: e.Path("squirrel.sock"), PID: pid, Capabilities: []string{"ai"},
			DependsOn: []string{"rhizocrypt"}},
		{Name: "coralreef", State: peer.StateRunning, Socket: e.Path("coralreef.sock"), PID: pid, Capabilities: []string{"shader"}},
		{Name: "toadstool", State: peer.StateRunning, Endpoint: e.toadstoolEP, PID: pid, Capabilities: []string{"compute"},
			DependsOn: []string{"coralreef", "beardog"}},
	}
}

// deployGraph is the demo's deploy graph.
func (e *Ecosystem) deployGraph() peer.Graph {
	return peer.Graph{ID: GraphID, Name: "tower composition", Every: e.opts.GraphEvery, FailRun: 1, FailNode: FailingNode,
		Step: e.opts.GraphStep,
		Nodes: []peer.GraphNode{
			{ID: "crypto", Primal: "beardog"},
			{ID: "storage", Primal: "nestgate", DependsOn: []string{"crypto"}},
			{ID: "dag", Primal: "rhizocrypt", DependsOn: []string{"crypto", "storage"}},
			{ID: "ai", Primal: "squirrel", DependsOn: []string{"dag"}},
			{ID: "shader", Primal: "coralreef"},
			{ID: "compute", Primal: "toadstool", DependsOn: []string{"shader", "crypto"}},
		}}
}

// SetStale makes the stale provider stop answering (true) or answer again
// (false), as the schedule does; the Neural API reports the change.
func (e *Ecosystem) SetStale(on bool) {
	e.stall.Set(on)
	if e.neural == nil {
		return
	}
	state := peer.StateRunning
	if on {
		state = peer.StateUnhealthy
	}
	e.neural.SetState(StaleProvider, state)
}

// RunGraph runs the demo's deploy graph now and returns the run (the first
// run fails node FailingNode). It fails with peer.ErrGraphRunning while the
// scheduled run is going.
func (e *Ecosystem) RunGraph(ctx context.Context) (peer.GraphRun, error) {
	return e.neural.RunGraph(ctx, GraphID)
}

// trafficRoute is one consumer's calls through the Neural API each tick.
type trafficRoute struct {
	caller, capability, operation string
	per                           int                           // calls per tick
	args                          func(n int64) json.RawMessage // the n-th call's args (from 1)
	n                             atomic.Int64
	busy                          atomic.Bool
}

func (e *Ecosystem) trafficRoutes() []*trafficRoute {
	raw := func(s string) func(int64) json.RawMessage {
		return func(int64) json.RawMessage { return json.RawMessage(s) }
	}
	return []*trafficRoute{
		// Every 10th signature has a message that is not base64: BearDog
		// answers -32602, so an ok edge has a small error rate.
		{caller: "rhizocrypt", capability: "crypto", operation: "sign_ed25519", per: 3, args: func(n int64) json.RawMessage {
			if n%10 == 0 {
				return json.RawMessage(`{"message":"not base64!"}`)
			}
			return json.RawMessage(`{"message":"ZGFnLXJvb3Q="}`)
		}},
		{caller: "rhizocrypt", capability: "storage", operation: "artifact.store", per: 1, args: raw(`{"id":"dag-snapshot","data":"e30="}`)},
		{caller: "nestgate", capability: "crypto", operation: "hash", per: 2, args: raw(`{"data":"YXJ0aWZhY3Q="}`)},
		{caller: "nestgate", capability: "dag", operation: "event.append", per: 1, args: raw(`{"session_id":"sess-0001","event":{"kind":"stored"}}`)},
		{caller: "toadstool", capability: "shader", operation: "compile", per: 1, args: raw(`{"source":"void main(){}"}`)},
		{caller: "toadstool", capability: "ledger", operation: "append", per: 1, args: raw(`{"entry":{"job":"j-1"}}`)},
		{caller: "squirrel", capability: "dag", operation: "session.list", per: 1, args: raw(`{}`)},
	}
}

func (r *trafficRoute) run(ctx context.Context, n *peer.Neural) {
	for i := 0; i < r.per && ctx.Err() == nil; i++ {
		k := r.n.Add(1)
		_, _ = n.Call(ctx, r.caller, r.capability, r.operation, r.args(k))
	}
}

// TrafficRound makes one tick's worth of the demo's traffic through the
// Neural API's routing and waits for it.
func (e *Ecosystem) TrafficRound(ctx context.Context) {
	var wg sync.WaitGroup
	for _, r := range e.traffic {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.run(ctx, e.neural)
		}()
	}
	wg.Wait()
}

// composition starts the composition's moving parts: the traffic each
// tick, the stale provider's schedule and the deploy graph's runs.
func (e *Ecosystem) composition() error {
	e.traffic = e.trafficRoutes()
	// Traffic: each route on its own goroutine, one at a time per route, so
	// a call held by the stale provider does not hold the others back.
	e.every(e.opts.Tick, func(int64) {
		for _, r := range e.traffic {
			if !r.busy.CompareAndSwap(false, true) {
				continue
			}
			e.goLoop(func(ctx context.Context) {
				defer r.busy.Store(false)
				r.run(ctx, e.neural)
			})
		}
	})
	if e.opts.StaleAfter >= 0 {
		e.goLoop(func(ctx context.Context) {
			next := time.Now().Add(e.opts.StaleAfter)
			for backoff.Sleep(ctx, time.Until(next)) {
				e.SetStale(true)
				if e.opts.StaleFor < 0 || !backoff.Sleep(ctx, e.opts.StaleFor) {
					return
				}
				e.SetStale(false)
				next = next.Add(e.opts.StaleEvery)
			}
		})
	}
	e.goLoop(func(ctx context.Context) {
		if !backoff.Sleep(ctx, e.opts.Tick) {
			return
		}
		t := time.NewTicker(max(e.opts.GraphEvery, time.Millisecond))
		defer t.Stop()
		for {
			_, _ = e.neural.RunGraph(ctx, GraphID)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	return nil
}
