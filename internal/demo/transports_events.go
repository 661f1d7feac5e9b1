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
// its server-sent event stream: a heartbeat every tick, and the events of
// the composition as they happen (the deploy graph's runs, the stale
// provider's health, arrivals; composition.go).
func (e *Ecosystem) biomeOSAPI() error {
	b, err := peer.ListenBiomeOS(e.BiomeOSAPIPath())
	if err != nil {
		return fmt.Errorf("demo: biomeOS API: %w", err)
	}
	e.OnClose(func() { b.Close() })
	e.mu.Lock()
	e.events = b
	e.mu.Unlock()
	e.AddEntry(Entry{Name: "biomeos-api", Path: e.BiomeOSAPIPath(), What: "biomeOS API: HTTP after the riboCipher prefix, /api/v1/events/stream"})
	e.every(e.opts.Tick, func(int64) {
		servers := e.Servers()
		healthy := len(servers) - 1 // lostprimal
		if e.stall.Stalled() {
			healthy--
		}
		_ = b.Heartbeat(len(servers), healthy, []string{e.Family})
	})
	return nil
}

// publish sends one event on the biomeOS API's stream (dropped before it
// runs).
func (e *Ecosystem) publish(typ string, data map[string]any) {
	e.mu.Lock()
	b := e.events
	e.mu.Unlock()
	if b != nil {
		_ = b.Publish(typ, data)
	}
}
