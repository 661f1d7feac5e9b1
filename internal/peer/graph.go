package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/ipc"
)

// GraphNode is one node of a deploy graph: a primal the graph brings up and
// checks.
type GraphNode struct {
	// ID is unique within the graph.
	ID string
	// Primal is the Neural API entry the node deploys; running the node
	// calls health.check on it.
	Primal string
	// DependsOn lists the node ids that must complete first.
	DependsOn []string
}

// Graph is a biomeOS-like deploy graph the Neural API runs and reports in
// graph.list.
type Graph struct {
	ID, Name string
	Nodes    []GraphNode
	// Every is how often the owner runs it (reported as every_s; the Neural
	// API runs a graph only when RunGraph is called).
	Every time.Duration
	// FailRun makes node FailNode fail on run number FailRun (from 1), on
	// purpose, so a failing node can be seen; 0 fails nothing.
	FailRun  int
	FailNode string
	// Step is the pause before each node runs, so a running graph's
	// progress shows on its nodes.
	Step time.Duration
}

// GraphRun is one run of a deploy graph.
type GraphRun struct {
	RunID       string   `json:"run_id"`
	Status      string   `json:"status"` // running | completed | failed
	StartedAt   string   `json:"started_at"`
	FinishedAt  string   `json:"finished_at,omitempty"`
	FailedNodes []string `json:"failed_nodes"`
}

// The statuses of a deploy graph's nodes.
const (
	NodePending   = "pending"
	NodeRunning   = "running"
	NodeCompleted = "completed"
	NodeFailed    = "failed"
	NodeSkipped   = "skipped"
)

// graphHistory bounds the runs graph.list keeps per graph.
const graphHistory = 10

type nodeState struct {
	status   string
	err      string
	duration time.Duration
	ran      bool
}

type graphState struct {
	g       Graph
	order   []GraphNode // topological, stable in declaration order
	runs    int
	running bool
	nodes   map[string]*nodeState
	history []GraphRun
}

// ErrGraphRunning is returned by RunGraph while the graph is already running.
var ErrGraphRunning = errors.New("deploy graph already running")

// AddGraph adds a deploy graph. Its node ids must be unique, its
// dependencies must name its nodes and must not form a cycle.
func (n *Neural) AddGraph(g Graph) error {
	order, err := graphOrder(g.Nodes)
	if err != nil {
		return fmt.Errorf("graph %s: %w", g.ID, err)
	}
	st := &graphState{g: g, order: order, nodes: map[string]*nodeState{}}
	for _, nd := range g.Nodes {
		st.nodes[nd.ID] = &nodeState{status: NodePending}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, o := range n.graphs {
		if o.g.ID == g.ID {
			return fmt.Errorf("graph %s: already added", g.ID)
		}
	}
	n.graphs = append(n.graphs, st)
	return nil
}

func graphOrder(nodes []GraphNode) ([]GraphNode, error) {
	ids := map[string]bool{}
	for _, nd := range nodes {
		if nd.ID == "" || ids[nd.ID] {
			return nil, fmt.Errorf("node id %q empty or repeated", nd.ID)
		}
		ids[nd.ID] = true
	}
	for _, nd := range nodes {
		for _, d := range nd.DependsOn {
			if !ids[d] {
				return nil, fmt.Errorf("node %s depends on unknown node %s", nd.ID, d)
			}
		}
	}
	done := map[string]bool{}
	var out []GraphNode
	for len(out) < len(nodes) {
		progressed := false
		for _, nd := range nodes {
			if done[nd.ID] {
				continue
			}
			ready := true
			for _, d := range nd.DependsOn {
				ready = ready && done[d]
			}
			if ready {
				done[nd.ID], progressed = true, true
				out = append(out, nd)
			}
		}
		if !progressed {
			return nil, errors.New("dependencies form a cycle")
		}
	}
	return out, nil
}

func (n *Neural) graph(id string) *graphState {
	for _, g := range n.graphs {
		if g.g.ID == id {
			return g
		}
	}
	return nil
}

// RunGraph runs a deploy graph once, publishing graph_started, node_started,
// node_completed / node_failed, graph_completed and topology_changed, and
// returns the run. A node runs by calling health.check on its primal; the
// nodes that depend on a failed node are skipped (and reported failed). It
// ends early, with what it had, when ctx ends.
func (n *Neural) RunGraph(ctx context.Context, id string) (GraphRun, error) {
	n.mu.Lock()
	st := n.graph(id)
	if st == nil {
		n.mu.Unlock()
		return GraphRun{}, fmt.Errorf("no deploy graph %q", id)
	}
	if st.running {
		n.mu.Unlock()
		return GraphRun{}, ErrGraphRunning
	}
	st.running = true
	st.runs++
	runNo := st.runs
	for _, ns := range st.nodes {
		*ns = nodeState{status: NodePending}
	}
	run := GraphRun{RunID: fmt.Sprintf("%s-%04d", id, runNo), Status: NodeRunning, StartedAt: n.stamp(), FailedNodes: []string{}}
	g := st.g
	order := st.order
	n.mu.Unlock()

	begun := time.Now()
	n.publish("graph_started", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "name": g.Name, "nodes": len(g.Nodes), "timestamp": run.StartedAt})
	set := func(id string, f func(ns *nodeState)) {
		n.mu.Lock()
		f(st.nodes[id])
		n.mu.Unlock()
	}
	failed := map[string]bool{}
	for _, nd := range order {
		var blocker string
		for _, d := range nd.DependsOn {
			if failed[d] {
				blocker = d
				break
			}
		}
		if blocker != "" || ctx.Err() != nil {
			msg := "skipped: depends on failed node " + blocker
			if blocker == "" {
				msg = "skipped: the run was stopped"
			}
			failed[nd.ID] = true
			run.FailedNodes = append(run.FailedNodes, nd.ID)
			set(nd.ID, func(ns *nodeState) { ns.status, ns.err = NodeSkipped, msg })
			n.publish("node_failed", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "node": nd.ID, "primal": nd.Primal,
				"error": msg, "duration_ms": 0, "timestamp": n.stamp()})
			continue
		}
		if g.Step > 0 {
			backoff.Sleep(ctx, g.Step)
		}
		set(nd.ID, func(ns *nodeState) { ns.status = NodeRunning })
		n.publish("node_started", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "node": nd.ID, "primal": nd.Primal, "timestamp": n.stamp()})
		start := time.Now()
		err := n.runNode(ctx, nd, runNo == g.FailRun && nd.ID == g.FailNode, runNo)
		d := time.Since(start)
		ms := round3(float64(d.Microseconds()) / 1000)
		if err != nil {
			failed[nd.ID] = true
			run.FailedNodes = append(run.FailedNodes, nd.ID)
			set(nd.ID, func(ns *nodeState) { ns.status, ns.err, ns.duration, ns.ran = NodeFailed, err.Error(), d, true })
			n.publish("node_failed", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "node": nd.ID, "primal": nd.Primal,
				"error": err.Error(), "duration_ms": ms, "timestamp": n.stamp()})
			continue
		}
		set(nd.ID, func(ns *nodeState) { ns.status, ns.duration, ns.ran = NodeCompleted, d, true })
		n.publish("node_completed", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "node": nd.ID, "primal": nd.Primal,
			"duration_ms": ms, "timestamp": n.stamp()})
	}
	run.Status = NodeCompleted
	if len(run.FailedNodes) > 0 {
		run.Status = NodeFailed
	}
	run.FinishedAt = n.stamp()
	n.mu.Lock()
	st.running = false
	st.history = append(st.history, run)
	if len(st.history) > graphHistory {
		st.history = st.history[len(st.history)-graphHistory:]
	}
	n.mu.Unlock()
	n.publish("graph_completed", map[string]any{"graph_id": g.ID, "run_id": run.RunID, "status": run.Status,
		"failed_nodes": run.FailedNodes, "duration_ms": round3(float64(time.Since(begun).Microseconds()) / 1000), "timestamp": run.FinishedAt})
	n.topologyChanged("graph_completed")
	return run, nil
}

// runNode checks a node's primal with health.check (or fails it on purpose).
func (n *Neural) runNode(ctx context.Context, nd GraphNode, failOnPurpose bool, runNo int) error {
	if failOnPurpose {
		return fmt.Errorf("%s: deploy check failed: simulated failure on run %d (the demo fails this node once, on purpose)", nd.Primal, runNo)
	}
	e, ok := n.Entry(nd.Primal)
	if !ok {
		return fmt.Errorf("%s: not managed by this Neural API", nd.Primal)
	}
	if _, err := n.forward(ctx, e, "health.check", nil); err != nil {
		var re *ipc.RPCError
		if errors.As(err, &re) {
			return fmt.Errorf("%s: health.check: %s", nd.Primal, errorText(re))
		}
		return fmt.Errorf("%s: %w", nd.Primal, err) // names the method and what went wrong
	}
	return nil
}

// graphList is graph.list's answer.
func (n *Neural) graphList() []map[string]any {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []map[string]any{}
	for _, st := range n.graphs {
		nodes := []map[string]any{}
		for _, nd := range st.g.Nodes {
			ns := st.nodes[nd.ID]
			m := map[string]any{"id": nd.ID, "primal": nd.Primal, "depends_on": orEmptyStrings(slices.Clone(nd.DependsOn)), "status": ns.status}
			if ns.err != "" {
				m["error"] = ns.err
			}
			if ns.ran {
				m["duration_ms"] = round3(float64(ns.duration.Microseconds()) / 1000)
			}
			nodes = append(nodes, m)
		}
		status := NodePending
		var last any
		if len(st.history) > 0 {
			lr := st.history[len(st.history)-1]
			status, last = lr.Status, lr
		}
		if st.running {
			status = NodeRunning
		}
		out = append(out, map[string]any{"id": st.g.ID, "name": st.g.Name, "every_s": int(st.g.Every.Seconds()),
			"status": status, "runs": st.runs, "nodes": nodes, "last_run": last,
			"history": append([]GraphRun{}, st.history...)})
	}
	return out
}
