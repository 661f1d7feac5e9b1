package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// The test composition's fixed facts, for tests to assert against.
const (
	// CompositionGraphID is the id of the test composition's deploy graph.
	CompositionGraphID = "deploy"
	// CompositionFailingNode fails on the graph's first run ("compute",
	// which depends on it, is skipped).
	CompositionFailingNode = "dag"
	// CompositionStale is the provider SetStale stalls (toadstool consumes
	// its shader.compile).
	CompositionStale = "coralreef"
	// CompositionGap is the capability toadstool consumes and nobody
	// provides, on either node.
	CompositionGap = "ledger.append"
	// LocalNodeID and RemoteNodeID name the federation's two nodes.
	LocalNodeID  = "node-a"
	RemoteNodeID = "node-b"
)

// CompositionOptions configure StartComposition.
type CompositionOptions struct {
	// Dir is the socket directory of the local node (keep it short: Unix
	// socket paths are limited to about 100 bytes).
	Dir string
	// CallTimeout bounds a routed call and a graph node (default 1 s: what
	// a call to the stale provider waits; shorter ones time out healthy
	// calls on a loaded machine under -race).
	CallTimeout time.Duration
	// Now is the clock of the Neural API's metrics and events (default
	// time.Now).
	Now func() time.Time
}

// Composition is a small simulated composition for tests, of two nodes.
//
// The local node (LocalNodeID) lives in Dir: a Songbird registry on
// songbird.sock (also on TCP, RegistryAddr), a Neural API on
// neural-api.sock (plain JSON-RPC) with metrics and a deploy graph, the
// biomeOS API's event stream on biomeos-api.sock, and level-3 primals:
//
//	beardog    provides crypto.{sign,hash}
//	nestgate   provides storage.{store,fetch}; consumes crypto.hash, dag.append
//	rhizocrypt provides dag.{append,root};     consumes storage.store, crypto.sign
//	coralreef  provides shader.compile (SetStale stalls it)
//	toadstool  provides compute.submit;       consumes shader.compile, ledger.append (a gap), ai.complete (on node-b)
//
// nestgate and rhizocrypt consume from each other (a cycle), and their
// operation_dependencies storage.store → dag.append → storage.store form
// one too. The remote node (RemoteNodeID) is reached over TCP only: its
// registry (Remote.RegistryAddr) lists squirrel (ai.complete; consumes
// dag.append from node-a). Each node's discovery.peers names the other.
//
// Traffic runs one round of calls through the Neural API's routing:
// rhizocrypt→beardog crypto.sign, rhizocrypt→nestgate storage.store,
// nestgate→beardog crypto.hash, nestgate→rhizocrypt dag.append,
// toadstool→coralreef shader.compile, toadstool→(nobody) ledger.append,
// and coralreef→beardog crypto.hash, which coralreef never declared.
// toadstool's ai.complete is declared and never called.
//
// Every routed call is also a capability_called event on the stream.
// Nothing moves by itself: the test drives it (Traffic, SetStale,
// RunGraph). Close stops every listener and goroutine.
type Composition struct {
	// Dir is the local node's socket directory.
	Dir string
	// Registry is the local node's registry; RegistryPath its socket,
	// RegistryAddr its TCP host:port.
	Registry     *Registry
	RegistryPath string
	RegistryAddr string
	// Neural is the local Neural API; NeuralPath its socket.
	Neural     *Neural
	NeuralPath string
	// EventsPath is the biomeOS API socket (riboCipher prefix, then HTTP
	// and /api/v1/events/stream) where the Neural API's events go.
	EventsPath string
	// Remote is the other node of the federation.
	Remote *FederationNode

	stall   Stall
	mu      sync.Mutex
	closers []func() error
	events  *BiomeOS
	closed  bool
}

// FederationNode is a node reached over TCP through its own registry.
type FederationNode struct {
	ID string
	// Registry is the node's registry; RegistryAddr its TCP host:port.
	Registry     *Registry
	RegistryAddr string
	// Primals maps each primal of the node to its endpoint (tcp://host:port).
	Primals map[string]string
}

type compPrimal struct {
	name     string
	groups   []Group
	consumed []string
	opdeps   map[string][]string
	deps     []string // depends_on in the Neural API
}

func localPrimals() []compPrimal {
	return []compPrimal{
		{name: "beardog", groups: []Group{{Type: "crypto", Methods: []string{"sign", "hash"}}}},
		{name: "nestgate", groups: []Group{{Type: "storage", Methods: []string{"store", "fetch"}}},
			consumed: []string{"crypto.hash", "dag.append"}, opdeps: map[string][]string{"storage.store": {"dag.append"}},
			deps: []string{"beardog", "rhizocrypt"}},
		{name: "rhizocrypt", groups: []Group{{Type: "dag", Methods: []string{"append", "root"}}},
			consumed: []string{"storage.store", "crypto.sign"}, opdeps: map[string][]string{"dag.append": {"storage.store"}, "dag.root": {"dag.append"}},
			deps: []string{"beardog", "nestgate"}},
		{name: "coralreef", groups: []Group{{Type: "shader", Methods: []string{"compile"}}}},
		{name: "toadstool", groups: []Group{{Type: "compute", Methods: []string{"submit"}}},
			consumed: []string{"shader.compile", "ledger.append", "ai.complete"}, deps: []string{"coralreef"}},
	}
}

func (p compPrimal) primal() *Primal {
	return &Primal{Name: p.name, Version: "1.0.0", Domain: p.groups[0].Type, Level3: true, Groups: p.groups,
		Consumed: p.consumed, OpDeps: p.opdeps}
}

func domainsOf(gs []Group) []string {
	out := make([]string, 0, len(gs))
	for _, g := range gs {
		out = append(out, g.Type)
	}
	return out
}

// StartComposition starts the test composition and its federation.
func StartComposition(opts CompositionOptions) (_ *Composition, err error) {
	if opts.Dir == "" {
		return nil, errors.New("composition: Dir is required")
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Second
	}
	c := &Composition{Dir: opts.Dir, Registry: NewRegistry(), RegistryPath: filepath.Join(opts.Dir, "songbird.sock"),
		NeuralPath: filepath.Join(opts.Dir, "neural-api.sock"), EventsPath: filepath.Join(opts.Dir, "biomeos-api.sock")}
	defer func() {
		if err != nil {
			c.Close()
			err = fmt.Errorf("composition: %w", err)
		}
	}()
	b, err := ListenBiomeOS(c.EventsPath)
	if err != nil {
		return nil, err
	}
	c.events = b
	c.onClose(b.Close)

	var entries []NeuralEntry
	for _, p := range localPrimals() {
		cfg := p.primal().Config()
		if p.name == CompositionStale {
			cfg = c.stall.Wrap(cfg)
		}
		path := filepath.Join(opts.Dir, p.name+".sock")
		if _, err := c.listen(path, cfg); err != nil {
			return nil, err
		}
		c.Registry.Register(Registration{PrimalID: p.name, Capabilities: domainsOf(p.groups), Endpoint: path})
		entries = append(entries, NeuralEntry{Name: p.name, State: StateRunning, Socket: path, Capabilities: domainsOf(p.groups), DependsOn: p.deps})
	}

	// The remote node, over TCP only.
	c.Remote = &FederationNode{ID: RemoteNodeID, Registry: NewRegistry(), Primals: map[string]string{}}
	sq := compPrimal{name: "squirrel", groups: []Group{{Type: "ai", Methods: []string{"complete"}}}, consumed: []string{"dag.append"}}
	s, err := c.listen("", sq.primal().Config())
	if err != nil {
		return nil, err
	}
	c.Remote.Primals[sq.name] = "tcp://" + s.Addr
	c.Remote.Registry.Register(Registration{PrimalID: sq.name, Capabilities: domainsOf(sq.groups), Endpoint: "tcp://" + s.Addr})

	// The registries: the local one on its socket and on TCP, the remote
	// one on TCP; each names the other node.
	local := registryPrimal(c.Registry, "songbird").Config()
	if _, err := c.listen(c.RegistryPath, local); err != nil {
		return nil, err
	}
	ls, err := c.listen("", local)
	if err != nil {
		return nil, err
	}
	c.RegistryAddr = ls.Addr
	rs, err := c.listen("", registryPrimal(c.Remote.Registry, "songbird").Config())
	if err != nil {
		return nil, err
	}
	c.Remote.RegistryAddr = rs.Addr
	c.Registry.SetPeers(peerOf(RemoteNodeID, rs.Addr))
	c.Remote.Registry.SetPeers(peerOf(LocalNodeID, ls.Addr))

	n := NewNeural(entries...)
	n.CallTimeout, n.Now, n.CallEvents = opts.CallTimeout, opts.Now, true
	n.Publish = func(typ string, d map[string]any) { _ = b.Publish(typ, d) }
	if err := n.AddGraph(Graph{ID: CompositionGraphID, Name: "test deploy", Every: time.Minute, FailRun: 1, FailNode: CompositionFailingNode,
		Nodes: []GraphNode{
			{ID: "crypto", Primal: "beardog"},
			{ID: "storage", Primal: "nestgate", DependsOn: []string{"crypto"}},
			{ID: "dag", Primal: "rhizocrypt", DependsOn: []string{"crypto"}},
			{ID: "shader", Primal: "coralreef"},
			{ID: "compute", Primal: "toadstool", DependsOn: []string{"shader", "dag"}},
		}}); err != nil {
		return nil, err
	}
	c.Neural = n
	if _, err := c.listen(c.NeuralPath, n.Config()); err != nil {
		return nil, err
	}
	return c, nil
}

// registryPrimal is a Songbird-like registry answering as the demo's does.
func registryPrimal(r *Registry, name string) *Primal {
	return &Primal{Name: name, Version: "0.12.3", Format: FormatA, IdentityOnly: true,
		Groups: []Group{
			{Type: "ipc", Methods: []string{"list", "discover", "resolve", "watch", "register"}},
			{Type: "lifecycle", Methods: []string{"composition"}},
			{Type: "discovery", Methods: []string{"peers", "find_by_capability"}},
		},
		Handlers: r.Handlers("")}
}

func peerOf(id, addr string) RegistryPeer {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return RegistryPeer{NodeID: id, Address: host, TCPPort: p}
}

// listen serves cfg on a socket path, or on a loopback TCP port when path
// is empty, and keeps the server for Close.
func (c *Composition) listen(path string, cfg Config) (*Server, error) {
	var s *Server
	var err error
	if path == "" {
		s, err = ListenTCP("127.0.0.1:0", cfg)
	} else {
		s, err = Listen(path, cfg)
	}
	if err != nil {
		return nil, err
	}
	c.onClose(s.Close)
	return s, nil
}

func (c *Composition) onClose(f func() error) {
	c.mu.Lock()
	c.closers = append(c.closers, f)
	c.mu.Unlock()
}

// Path returns the socket path of a local primal.
func (c *Composition) Path(name string) string { return filepath.Join(c.Dir, name+".sock") }

// SetStale stalls CompositionStale (true) or releases it (false), and has
// the Neural API report it (state, health_changed, topology_changed,
// primal_discovered on recovery).
func (c *Composition) SetStale(on bool) {
	c.stall.Set(on)
	state := StateRunning
	if on {
		state = StateUnhealthy
	}
	c.Neural.SetState(CompositionStale, state)
}

// Traffic makes one round of the composition's calls through the Neural
// API's routing (see Composition) and waits for them.
func (c *Composition) Traffic(ctx context.Context) {
	calls := []struct{ caller, capability, operation, args string }{
		{"rhizocrypt", "crypto", "sign", `{"message":"aGk="}`},
		{"rhizocrypt", "storage", "store", `{"id":"a1"}`},
		{"nestgate", "crypto", "hash", `{"data":"aGk="}`},
		{"nestgate", "dag", "append", `{"event":{}}`},
		{"toadstool", "shader", "compile", `{"source":"main"}`},
		{"toadstool", "ledger", "append", `{"entry":{}}`},
		{"coralreef", "crypto", "hash", `{"data":"aGk="}`},
	}
	var wg sync.WaitGroup
	for _, k := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = c.Neural.Call(ctx, k.caller, k.capability, k.operation, json.RawMessage(k.args))
		}()
	}
	wg.Wait()
}

// RunGraph runs the deploy graph once (the first run fails
// CompositionFailingNode).
func (c *Composition) RunGraph(ctx context.Context) (GraphRun, error) {
	return c.Neural.RunGraph(ctx, CompositionGraphID)
}

// Close stops every server, listener and goroutine of both nodes.
func (c *Composition) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	closers := c.closers
	c.closers = nil
	c.mu.Unlock()
	c.stall.Set(false) // held answers go out before their servers close
	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		if err := closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
