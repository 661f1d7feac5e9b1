package peer

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// Registration is one primal registered with a Songbird-like registry.
type Registration struct {
	PrimalID     string
	Capabilities []string
	// Endpoint is where it lives: a socket path, unix://path or tcp://host:port.
	Endpoint string
}

// RegistryEvent is one entry of the registry's ipc.watch feed.
type RegistryEvent struct {
	Revision     int64    `json:"revision"`
	Kind         string   `json:"kind"` // registered | unregistered
	Primal       string   `json:"primal"`
	Capabilities []string `json:"capabilities"`
	Endpoint     string   `json:"endpoint"`
	Timestamp    string   `json:"timestamp"`
}

// RegistryPeer is another node a Registry names in discovery.peers.
type RegistryPeer struct {
	NodeID  string `json:"node_id"`
	Address string `json:"address"`
	TCPPort int    `json:"tcp_port"`
}

// Registry is the state of a Songbird-like registry: who is registered, the
// revisioned event feed ipc.watch polls, and the other nodes
// discovery.peers names. It is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	byID     map[string]Registration
	revision int64
	events   []RegistryEvent
	peers    []RegistryPeer
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byID: map[string]Registration{}} }

// SetPeers sets the other nodes discovery.peers names.
func (r *Registry) SetPeers(p ...RegistryPeer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peers = append([]RegistryPeer(nil), p...)
}

// Since returns the current revision and the events after revision since.
func (r *Registry) Since(since int64) (int64, []RegistryEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	evs := []RegistryEvent{}
	for _, ev := range r.events {
		if ev.Revision > since {
			evs = append(evs, ev)
		}
	}
	return r.revision, evs
}

// Register adds or replaces a registration and records a "registered" event.
func (r *Registry) Register(reg Registration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[reg.PrimalID] = reg
	r.record("registered", reg)
}

// Unregister removes a registration and records an "unregistered" event.
func (r *Registry) Unregister(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	reg, ok := r.byID[id]
	if !ok {
		return
	}
	delete(r.byID, id)
	r.record("unregistered", reg)
}

func (r *Registry) record(kind string, reg Registration) {
	r.revision++
	r.events = append(r.events, RegistryEvent{Revision: r.revision, Kind: kind, Primal: reg.PrimalID,
		Capabilities: reg.Capabilities, Endpoint: reg.Endpoint, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
	if len(r.events) > 1000 {
		r.events = r.events[len(r.events)-1000:]
	}
}

// List returns the registrations, sorted by primal id.
func (r *Registry) List() []Registration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Registration, 0, len(r.byID))
	for _, v := range r.byID {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PrimalID < out[j].PrimalID })
	return out
}

func nativeEndpoint(ep string) string {
	if strings.HasPrefix(ep, "/") {
		return "unix://" + ep
	}
	return ep
}

func endpointObject(ep string) map[string]any {
	switch {
	case strings.HasPrefix(ep, "tcp://"):
		hp := strings.TrimPrefix(ep, "tcp://")
		i := strings.LastIndexByte(hp, ':')
		port := 0
		if i >= 0 {
			_ = json.Unmarshal([]byte(hp[i+1:]), &port)
			return map[string]any{"transport": "tcp", "host": hp[:i], "port": port}
		}
		return map[string]any{"transport": "tcp", "host": hp}
	default:
		return map[string]any{"transport": "uds", "path": strings.TrimPrefix(ep, "unix://")}
	}
}

func provides(reg Registration, capability string) bool {
	for _, c := range reg.Capabilities {
		if c == capability || strings.HasPrefix(c, capability+".") || strings.HasPrefix(capability, c+".") {
			return true
		}
	}
	return false
}

// Handlers answers the registry's methods the way current Songbird does;
// family is reported by discovery.peers.
func (r *Registry) Handlers(family string) map[string]HandlerFunc {
	provider := func(reg Registration) map[string]any {
		m := map[string]any{
			"primal_id": reg.PrimalID, "virtual_endpoint": "/primal/" + reg.PrimalID,
			"native_endpoint": nativeEndpoint(reg.Endpoint), "capabilities": reg.Capabilities,
		}
		// socket is a path: a TCP or WebSocket registration has none.
		if p := strings.TrimPrefix(reg.Endpoint, "unix://"); strings.HasPrefix(p, "/") {
			m["socket"] = p
		}
		return m
	}
	var capArgs struct {
		Capability string `json:"capability"`
	}
	discover := func(_ context.Context, p json.RawMessage) (any, error) {
		a := capArgs
		if err := json.Unmarshal(rawOrEmpty(p), &a); err != nil || a.Capability == "" {
			return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: capability is required"}
		}
		out := []map[string]any{}
		for _, reg := range r.List() {
			if provides(reg, a.Capability) {
				out = append(out, provider(reg))
			}
		}
		return map[string]any{"providers": out}, nil
	}
	return map[string]HandlerFunc{
		"ipc.list": func(context.Context, json.RawMessage) (any, error) {
			out := []map[string]any{}
			for _, reg := range r.List() {
				out = append(out, map[string]any{"primal_id": reg.PrimalID, "virtual_endpoint": "/primal/" + reg.PrimalID, "capabilities": reg.Capabilities})
			}
			return map[string]any{"services": out}, nil
		},
		"ipc.discover":                 discover,
		"capability.discover":          discover,
		"discovery.find_by_capability": discover,
		"ipc.resolve": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				PrimalID   string `json:"primal_id"`
				Name       string `json:"name"`
				Capability string `json:"capability"`
			}
			if err := json.Unmarshal(rawOrEmpty(p), &a); err != nil {
				return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params"}
			}
			for _, reg := range r.List() {
				if (a.PrimalID != "" && reg.PrimalID == a.PrimalID) || (a.Name != "" && reg.PrimalID == a.Name) ||
					(a.Capability != "" && provides(reg, a.Capability)) {
					res := provider(reg)
					res["endpoint"] = endpointObject(reg.Endpoint)
					res["relay"] = nil
					return res, nil
				}
			}
			return nil, &ipc.RPCError{Code: -32001, Message: "Primal not found"}
		},
		"ipc.watch": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				Since int64 `json:"since_revision"`
			}
			_ = json.Unmarshal(rawOrEmpty(p), &a)
			rev, evs := r.Since(a.Since)
			return map[string]any{"revision": rev, "events": evs}, nil
		},
		"ipc.register": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				PrimalID     string   `json:"primal_id"`
				Name         string   `json:"name"`
				Capabilities []string `json:"capabilities"`
				Endpoint     string   `json:"endpoint"`
			}
			if err := json.Unmarshal(rawOrEmpty(p), &a); err != nil {
				return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params"}
			}
			if a.PrimalID == "" {
				a.PrimalID = a.Name
			}
			if a.PrimalID == "" || a.Endpoint == "" {
				return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: primal_id and endpoint are required"}
			}
			r.Register(Registration{PrimalID: a.PrimalID, Capabilities: a.Capabilities, Endpoint: a.Endpoint})
			return map[string]any{"registered": true, "primal_id": a.PrimalID}, nil
		},
		"lifecycle.composition": func(context.Context, json.RawMessage) (any, error) {
			out := []map[string]any{}
			total := 0
			for _, reg := range r.List() {
				total += len(reg.Capabilities)
				out = append(out, map[string]any{"primal_id": reg.PrimalID, "capabilities": reg.Capabilities, "virtual_endpoint": "/primal/" + reg.PrimalID, "status": "up"})
			}
			return map[string]any{"primals": out, "total_capabilities": total, "timestamp": time.Now().UTC().Format(time.RFC3339)}, nil
		},
		"discovery.peers": func(context.Context, json.RawMessage) (any, error) {
			r.mu.Lock()
			ps := append([]RegistryPeer{}, r.peers...)
			r.mu.Unlock()
			return map[string]any{"peers": ps, "family_id": family}, nil
		},
		"ipc.find_capability": Error(-32601, "Unknown method: ipc.find_capability"),
		"ipc.heartbeat":       Error(-32601, "Unknown method: ipc.heartbeat"),
	}
}

func rawOrEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage("{}")
	}
	return p
}
