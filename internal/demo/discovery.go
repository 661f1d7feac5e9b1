package demo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// discoveryParts adds what discovery needs to show every source it can in
// one directory: a TCP primal known only through a Songbird registration
// (below level 2, and consuming a capability nobody provides: a composition
// gap), a TCP primal that registers and leaves over time (so ipc.watch
// polling has something to report), a manifest, a socket-registry.json and
// a biomeOS Neural API socket.
func (e *Ecosystem) discoveryParts() error {
	for _, f := range []func() error{e.toadstool, e.petaltongue, e.manifests, e.neuralAPI} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// serveTCP starts a primal on a loopback TCP port, stopped at Close.
func (e *Ecosystem) serveTCP(cfg peer.Config) (*peer.Server, error) {
	s, err := peer.ListenTCP("127.0.0.1:0", cfg)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	e.OnClose(func() { s.Close() })
	return s, nil
}

// toadstool is a compute primal reached over TCP and registered with the
// registry. It is below level 2 on purpose: it answers only the older
// identity method and advertises a method it does not implement; and it
// consumes ledger.append, which no primal of the demo provides.
func (e *Ecosystem) toadstool() error {
	p := &peer.Primal{
		Name: "toadstool", Version: "0.4.2", Domain: "compute",
		Groups:       []peer.Group{{Type: "compute", Methods: []string{"submit", "status", "cancel"}}},
		IdentityOnly: true,
		Omit:         []string{"compute.cancel"},
		Extra:        map[string]any{"consumed_capabilities": []string{"ledger.append", "crypto.hash", "shader.compile"}},
	}
	s, err := e.serveTCP(p.Config())
	if err != nil {
		return err
	}
	ep := "tcp://" + s.Addr
	e.toadstoolEP = ep
	e.Registry.Register(Registration{PrimalID: "toadstool", Capabilities: []string{"compute"}, Endpoint: ep})
	e.AddEntry(Entry{Name: "toadstool", Path: ep, What: "compute primal over TCP, known only through the registry; level 1 (old identity, an advertised method missing); consumes ledger.append, which nobody provides, and shader.compile from coralreef"})
	return nil
}

// petaltongue is a TCP primal that registers, stays a while, unregisters
// and stops, over and over, half a churn period out of step with the
// socket-file primal that comes and goes.
func (e *Ecosystem) petaltongue() error {
	p := &peer.Primal{
		Name: "petaltongue", Version: "1.3.0", Domain: "visualization", License: "AGPL-3.0-or-later",
		Groups: []peer.Group{{Type: "visualization", Methods: []string{"render", "scene.list"}}},
	}
	cfg := p.Config()
	e.AddEntry(Entry{Name: "petaltongue", Path: "tcp://127.0.0.1:<port>", What: fmt.Sprintf("TCP primal that registers and leaves every %s (seen through ipc.watch)", e.opts.Churn)})
	// s is the running server: the ticker's goroutine owns it, and Close
	// (which runs closers after that goroutine ended) stops the last one.
	var s *peer.Server
	leave := func() {
		e.Registry.Unregister("petaltongue")
		if s != nil {
			s.Close()
			s = nil
		}
	}
	e.OnClose(leave)
	e.every(e.opts.Churn/2, func(n int64) {
		switch n % 4 {
		case 1: // comes at half a period, stays one, is away one
			var err error
			if s, err = peer.ListenTCP("127.0.0.1:0", cfg); err == nil {
				e.Registry.Register(Registration{PrimalID: "petaltongue", Capabilities: []string{"visualization"}, Endpoint: "tcp://" + s.Addr})
			}
		case 3:
			leave()
		}
	})
	return nil
}

// manifests writes a primal manifest (<dir>/manifests/nestgate.json) and a
// biomeOS socket-registry.json naming the demo's sockets.
func (e *Ecosystem) manifests() error {
	dir := e.Path("manifests")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	write := func(path string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		return nil
	}
	if err := write(filepath.Join(dir, "nestgate.json"), map[string]any{
		"primal": "nestgate", "socket_path": e.Path("nestgate.sock"), "capabilities": []string{"storage"},
	}); err != nil {
		return err
	}
	if err := write(e.Path("socket-registry.json"), map[string]any{
		"version": "1.0",
		"entries": []map[string]any{
			{"primal": "rhizocrypt", "socket": e.Path("rhizocrypt.sock"), "capabilities": []string{"dag"}},
			{"primal": "squirrel", "socket": e.Path("ai.sock"), "capabilities": []string{"ai"}},
		},
	}); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "manifests/nestgate.json", Path: filepath.Join(dir, "nestgate.json"), What: "primal manifest {socket_path} for nestgate"})
	e.AddEntry(Entry{Name: "socket-registry.json", Path: e.Path("socket-registry.json"), What: "biomeOS socket registry naming rhizocrypt and squirrel"})
	return nil
}

// neuralAPI serves a biomeOS Neural API on neural-api-<family>.sock that
// reports the primals it runs (one of them only through lifecycle.get),
// routes capability.call and counts the traffic, and runs the deploy graph
// (composition.go).
func (e *Ecosystem) neuralAPI() error {
	n := peer.NewNeural(e.neuralEntries()...)
	n.Family, n.CallTimeout, n.Publish = e.Family, e.opts.CallTimeout, e.publish
	if err := n.AddGraph(e.deployGraph()); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	e.neural = n
	file := "neural-api-" + e.Family + ".sock"
	// Family-scoped by name, like biomeOS in non-enforced mode: a BTSP
	// handshake with the family seed, or plain JSON-RPC for local composition.
	cfg := n.Config()
	cfg.Accept = peer.BTSPGate(btsp.ServerConfig{Seed: []byte(e.seed)}, true)
	if _, err := e.Serve(file, cfg); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "neural-api-" + e.Family, Path: e.Path(file), What: "biomeOS Neural API (lifecycle, topology, capability.call with traffic metrics, graph.list)"})
	return nil
}

// Confine keeps discovery to the ecosystem's own: its socket directory and
// what lies in it, and the stdio Bus daemons it started (discovery's
// Options.Confine). Other processes' buses, the environment's sockets and
// the config file's targets are not part of the demo.
func (e *Ecosystem) Confine(o *discovery.Options) {
	o.SocketDirs = []string{e.Dir}
	o.Confine = true
}
