package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// HolonID is the registry id of the demo's Holon-RPC server.
const HolonID = "holon-greeter"

// holonServer is a Holon-RPC server on a loopback TCP port that speaks first
// (client.v1.Client/Hello, given up after 3 s as go-holons does), sends rpc.heartbeat every tick, and is registered
// with the registry under a ws:// endpoint so discovery finds it.
func (e *Ecosystem) holonServer() error {
	s, err := peer.ListenHolon("127.0.0.1:0", peer.HolonConfig{
		SpeakFirst: true,
		// As a go-holons server, it stops waiting for its Hello after 3 s.
		HelloTimeout: 3 * time.Second,
		Heartbeat:    e.opts.Tick,
		Methods: map[string]peer.HandlerFunc{
			"greeting.v1.Greeting/SayHello": func(_ context.Context, p json.RawMessage) (any, error) {
				var in struct {
					Name string `json:"name"`
				}
				_ = json.Unmarshal(p, &in)
				if in.Name == "" {
					in.Name = "world"
				}
				return map[string]string{"message": "hello, " + in.Name}, nil
			},
			"greeting.v1.Greeting/ListLanguages": func(context.Context, json.RawMessage) (any, error) {
				return map[string][]string{"languages": {"en", "fr", "pt"}}, nil
			},
		},
	})
	if err != nil {
		return fmt.Errorf("demo: holon server: %w", err)
	}
	e.OnClose(func() { s.Close() })
	e.Registry.Register(Registration{PrimalID: HolonID, Capabilities: []string{"greeting"}, Endpoint: s.URL})
	e.AddEntry(Entry{Name: HolonID, Path: s.URL, What: "Holon-RPC over WebSocket: speaks first (Hello), heartbeats every tick"})
	return nil
}

// HolonURL is the ws:// URL of the demo's Holon-RPC server.
func (e *Ecosystem) HolonURL() string {
	for _, en := range e.Entries() {
		if en.Name == HolonID {
			return en.Path
		}
	}
	return ""
}

// BiomeOSAPIPath is the socket of the demo's biomeOS API.
func (e *Ecosystem) BiomeOSAPIPath() string { return e.Path("biomeos-api-" + e.Family + ".sock") }

// biomeOSAPI is the biomeOS API socket (riboCipher prefix, then HTTP) with
// its server-sent event stream: a heartbeat and one typed event every tick.
func (e *Ecosystem) biomeOSAPI() error {
	b, err := peer.ListenBiomeOS(e.BiomeOSAPIPath())
	if err != nil {
		return fmt.Errorf("demo: biomeOS API: %w", err)
	}
	e.OnClose(func() { b.Close() })
	e.AddEntry(Entry{Name: "biomeos-api", Path: e.BiomeOSAPIPath(), What: "biomeOS API: HTTP after the riboCipher prefix, /api/v1/events/stream"})
	e.every(e.opts.Tick, func(seq int64) {
		servers := e.Servers()
		_ = b.Heartbeat(len(servers), len(servers)-1, []string{e.Family})
		now := time.Now().UTC().Format(time.RFC3339Nano)
		switch seq % 5 {
		case 1:
			_ = b.Publish("graph_started", map[string]any{"graph_id": fmt.Sprintf("g-%04d", seq), "name": "tower-sync", "nodes": 3, "timestamp": now})
		case 2:
			_ = b.Publish("node_completed", map[string]any{"graph_id": fmt.Sprintf("g-%04d", seq-1), "node": "sign", "duration_ms": 12, "timestamp": now})
		case 3:
			_ = b.Publish("primal_discovered", map[string]any{"primal": "sweetgrass", "socket": e.Path("sweetgrass.sock"), "timestamp": now})
		case 4:
			_ = b.Publish("health_changed", map[string]any{"primal": "lostprimal", "from": "healthy", "to": "stale", "timestamp": now})
		case 0:
			_ = b.Publish("topology_changed", map[string]any{"primals": len(servers), "edges": 4, "timestamp": now})
		}
	})
	return nil
}
