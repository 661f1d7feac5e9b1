package ipctest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"sync"

	"github.com/ecoPrimals/primalscope/ipc"
)

// Service is one registration in a fake Songbird.
type Service struct {
	PrimalID     string
	Capabilities []string
	// Endpoint is the native endpoint ("unix:///path", "tcp://host:port").
	// Empty with Relay set means reached through a mesh relay.
	Endpoint string
	Relay    bool
}

// SongbirdPeer is another node a fake Songbird reports in discovery.peers.
type SongbirdPeer struct {
	NodeID  string
	Address string
	TCPPort int
}

// Songbird is a fake Songbird registry: ipc.list (current or legacy
// shape), ipc.discover, ipc.resolve, ipc.register, ipc.watch (polling by
// revision), lifecycle.composition and discovery.peers, plus the health
// methods and a format A capabilities.list as real Songbird answers.
// It is safe for concurrent use; registrations may change while it serves.
type Songbird struct {
	// Legacy answers ipc.list in the older {services:[{name, endpoint,
	// capabilities, version, available}]} shape.
	Legacy bool
	// VirtualOnly leaves native endpoints out of ipc.list, so that clients
	// must ipc.resolve each service.
	VirtualOnly bool
	// Garbage answers every registry method with a result of the wrong shape.
	Garbage bool

	mu       sync.Mutex
	rev      int64
	services map[string]Service
	events   []map[string]any
	peers    []SongbirdPeer
}

// NewSongbird returns an empty fake registry.
func NewSongbird() *Songbird { return &Songbird{services: map[string]Service{}} }

// LoadServices returns n registrations for load tests, named load00000,
// load00001, …: the even ones with a Unix socket under goneDir that is not
// there, the odd ones reached through a mesh relay, over 50 capabilities.
func LoadServices(n int, goneDir string) []Service {
	out := make([]Service, 0, n)
	for i := 0; i < n; i++ {
		svc := Service{PrimalID: fmt.Sprintf("load%05d", i), Capabilities: []string{fmt.Sprintf("cap%d", i%50)}}
		if i%2 == 0 {
			svc.Endpoint = "unix://" + filepath.Join(goneDir, svc.PrimalID+".sock")
		} else {
			svc.Relay = true
		}
		out = append(out, svc)
	}
	return out
}

// Register adds or replaces a service and records an ipc.watch event.
func (s *Songbird) Register(svc Service) {
	if svc.Capabilities == nil {
		svc.Capabilities = []string{} // answered as [], never null
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	s.services[svc.PrimalID] = svc
	s.events = append(s.events, map[string]any{"revision": s.rev, "kind": "registered", "primal": svc.PrimalID,
		"capabilities": svc.Capabilities, "endpoint": svc.Endpoint})
}

// Unregister removes a service and records an ipc.watch event.
func (s *Songbird) Unregister(primalID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.services[primalID]; !ok {
		return
	}
	s.rev++
	delete(s.services, primalID)
	s.events = append(s.events, map[string]any{"revision": s.rev, "kind": "unregistered", "primal": primalID})
}

// SetGarbage switches answering garbage on or off while the registry serves.
func (s *Songbird) SetGarbage(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Garbage = on
}

// SetPeers sets the nodes discovery.peers reports.
func (s *Songbird) SetPeers(p ...SongbirdPeer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peers = append([]SongbirdPeer(nil), p...)
}

// Revision returns the registry's current revision.
func (s *Songbird) Revision() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev
}

func (s *Songbird) sorted() []Service {
	out := make([]Service, 0, len(s.services))
	for _, v := range s.services {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PrimalID < out[j].PrimalID })
	return out
}

func (s *Songbird) provider(v Service) map[string]any {
	m := map[string]any{"primal_id": v.PrimalID, "virtual_endpoint": "songbird://" + v.PrimalID,
		"capabilities": v.Capabilities}
	if v.Relay {
		m["endpoint"] = map[string]any{"transport": "mesh_relay", "peer_id": "node-" + v.PrimalID}
		m["relay"] = true
		return m
	}
	m["native_endpoint"] = v.Endpoint
	return m
}

// Config returns the server config of the registry.
func (s *Songbird) Config() Config {
	garbage := func(h HandlerFunc) HandlerFunc {
		return func(ctx context.Context, p json.RawMessage) (any, error) {
			s.mu.Lock()
			g := s.Garbage
			s.mu.Unlock()
			if g {
				return json.RawMessage(`{"services":"nope","providers":[1,"x",null],"revision":"soon","peers":{}}`), nil
			}
			return h(ctx, p)
		}
	}
	methods := map[string]HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "alive"}, nil
		},
		"health.check": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "healthy"}, nil
		},
		"health.readiness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "ready"}, nil
		},
		"capabilities.list": func(context.Context, json.RawMessage) (any, error) {
			return []string{"ipc.list", "ipc.discover", "ipc.resolve", "ipc.register", "ipc.watch",
				"lifecycle.composition", "discovery.peers", "health.liveness", "health.check", "health.readiness"}, nil
		},
		"ipc.list": garbage(func(context.Context, json.RawMessage) (any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var list []map[string]any
			for _, v := range s.sorted() {
				if s.Legacy {
					list = append(list, map[string]any{"name": v.PrimalID, "endpoint": v.Endpoint,
						"capabilities": v.Capabilities, "version": "1.0.0", "available": true})
					continue
				}
				m := map[string]any{"primal_id": v.PrimalID, "virtual_endpoint": "songbird://" + v.PrimalID,
					"capabilities": v.Capabilities}
				if !s.VirtualOnly && !v.Relay {
					m["native_endpoint"] = v.Endpoint
				}
				list = append(list, m)
			}
			if list == nil {
				list = []map[string]any{}
			}
			return map[string]any{"services": list}, nil
		}),
		"ipc.discover": garbage(func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct{ Capability string }
			_ = json.Unmarshal(p, &a)
			s.mu.Lock()
			defer s.mu.Unlock()
			out := []map[string]any{}
			for _, v := range s.sorted() {
				for _, c := range v.Capabilities {
					if c == a.Capability {
						out = append(out, s.provider(v))
						break
					}
				}
			}
			return map[string]any{"providers": out}, nil
		}),
		"ipc.resolve": garbage(func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				PrimalID string `json:"primal_id"`
				Name     string `json:"name"`
			}
			_ = json.Unmarshal(p, &a)
			if a.PrimalID == "" {
				a.PrimalID = a.Name
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			v, ok := s.services[a.PrimalID]
			if !ok {
				return nil, &ipc.RPCError{Code: -32001, Message: "primal not registered: " + a.PrimalID}
			}
			m := s.provider(v)
			if !v.Relay {
				if ep, err := ipc.ParseEndpoint(v.Endpoint); err == nil {
					switch ep.Transport {
					case ipc.Unix:
						m["socket"] = ep.Path
						m["endpoint"] = map[string]any{"transport": "uds", "path": ep.Path}
					case ipc.TCP:
						m["endpoint"] = map[string]any{"transport": "tcp", "host": hostOf(ep.Address), "port": portOf(ep.Address)}
					}
				}
			}
			return m, nil
		}),
		"ipc.register": func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				PrimalID     string   `json:"primal_id"`
				Capabilities []string `json:"capabilities"`
				Endpoint     string   `json:"endpoint"`
			}
			if err := json.Unmarshal(p, &a); err != nil || a.PrimalID == "" || a.Endpoint == "" {
				return nil, &ipc.RPCError{Code: -32602, Message: "primal_id and endpoint required"}
			}
			s.Register(Service{PrimalID: a.PrimalID, Capabilities: a.Capabilities, Endpoint: a.Endpoint})
			return map[string]any{"registered": true, "revision": s.Revision()}, nil
		},
		"ipc.watch": garbage(func(_ context.Context, p json.RawMessage) (any, error) {
			var a struct {
				Since int64 `json:"since_revision"`
			}
			_ = json.Unmarshal(p, &a)
			s.mu.Lock()
			defer s.mu.Unlock()
			evs := []map[string]any{}
			for _, e := range s.events {
				if e["revision"].(int64) > a.Since {
					evs = append(evs, e)
				}
			}
			return map[string]any{"revision": s.rev, "events": evs}, nil
		}),
		"lifecycle.composition": func(context.Context, json.RawMessage) (any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			var ps []map[string]any
			for _, v := range s.sorted() {
				ps = append(ps, map[string]any{"primal_id": v.PrimalID, "capabilities": v.Capabilities,
					"virtual_endpoint": "songbird://" + v.PrimalID, "status": "up"})
			}
			return map[string]any{"primals": ps, "total_capabilities": 0, "timestamp": 0}, nil
		},
		"discovery.peers": garbage(func(context.Context, json.RawMessage) (any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			ps := []map[string]any{}
			for _, p := range s.peers {
				ps = append(ps, map[string]any{"node_id": p.NodeID, "address": p.Address, "tcp_port": p.TCPPort})
			}
			return map[string]any{"peers": ps}, nil
		}),
	}
	return Config{Methods: methods, Concurrent: true}
}

func hostOf(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}

func portOf(hostport string) int {
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
