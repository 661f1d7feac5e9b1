package peer

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/ecoPrimals/primalscope/ipc"
)

// NeuralEntry is one primal a simulated Neural API manages.
type NeuralEntry struct {
	Name, State string
	// Socket is the primal's socket path ("" leaves it out).
	Socket string
	PID    int
	// Hidden leaves the socket out of lifecycle.status and
	// topology.primals, so clients must ask lifecycle.get.
	Hidden bool
}

// Neural is a simulated biomeOS Neural API: lifecycle.status, lifecycle.get,
// topology.primals and the health methods.
type Neural struct {
	mu      sync.Mutex
	entries []NeuralEntry
}

// NewNeural returns a simulated Neural API managing entries.
func NewNeural(entries ...NeuralEntry) *Neural {
	return &Neural{entries: append([]NeuralEntry(nil), entries...)}
}

// Set replaces the primals the Neural API reports.
func (n *Neural) Set(entries ...NeuralEntry) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.entries = append([]NeuralEntry(nil), entries...)
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
			if withSocket && e.Socket != "" && !e.Hidden {
				d["socket_path"] = e.Socket
			}
			m["details"] = d
			out = append(out, m)
		}
		return out
	}
	return Config{Methods: map[string]HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"alive": true, "primal": "neural-api"}, nil
		},
		"lifecycle.status": func(context.Context, json.RawMessage) (any, error) {
			ps := list(true)
			return map[string]any{"primals": ps, "count": len(ps), "healthy": len(ps)}, nil
		},
		"topology.primals": func(context.Context, json.RawMessage) (any, error) {
			return list(false), nil
		},
		"lifecycle.get": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(p, &a)
			n.mu.Lock()
			defer n.mu.Unlock()
			for _, e := range n.entries {
				if e.Name == a.Name {
					return map[string]any{"name": e.Name, "socket_path": e.Socket, "pid": e.PID, "state": e.State,
						"depends_on": []string{}}, nil
				}
			}
			return nil, &ipc.RPCError{Code: -32001, Message: "no such primal"}
		},
		"capabilities.list": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primal": "neural-api", "version": "2.93.0",
				"methods": []string{"lifecycle.status", "lifecycle.get", "topology.primals", "health.liveness"}}, nil
		},
	}}
}
