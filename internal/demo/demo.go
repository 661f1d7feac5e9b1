// Package demo runs a simulated primal ecosystem in a fresh socket directory:
// a BearDog-like crypto primal (format E, signed, plus a family-scoped socket
// that demands BTSP), a Songbird-like registry, a rhizoCrypt-like level-3 DAG
// primal behind dag.sock, a Squirrel-like AI primal behind ai.sock, a
// NestGate-like storage primal, a lean NDJSON daemon, a stale socket that
// accepts and never answers, and a binary tarpc sidecar. The primals emit
// heartbeats and events, and one primal comes and goes over time. Its
// composition has a gap, cycles, a provider that goes stale, traffic routed
// through the Neural API and a deploy graph that runs every minute (see
// composition.go).
//
// The demo, the tests and later features all use it; it is built from the
// simulated peers of internal/peer.
package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// DefaultFamily is the family id of the demo's family-scoped sockets.
const DefaultFamily = "westgate-tower-155f"

// Options configure an ecosystem.
type Options struct {
	// Dir is the socket directory; empty makes a fresh temporary one, which
	// Close removes.
	Dir string
	// Family is the family id of family-scoped sockets (default DefaultFamily).
	Family string
	// Tick is the heartbeat period (default 1 s).
	Tick time.Duration
	// Churn is how long the transient primal stays and stays away (default 12 s).
	Churn time.Duration
	// StaleAfter is when the stale provider (StaleProvider) first goes
	// stale (default 5 ticks; negative: it never goes stale by itself, only
	// through SetStale).
	StaleAfter time.Duration
	// StaleFor is how long it stays stale each time (default 20 ticks;
	// negative: for good, once stale).
	StaleFor time.Duration
	// StaleEvery is how often it goes stale again (default 60 ticks; at
	// least StaleFor plus a tick). At the defaults it is stale from 5 s to
	// 25 s of every minute, so the deploy graph, which runs at 1 s of every
	// minute, finds it answering.
	StaleEvery time.Duration
	// GraphEvery is the period of the deploy graph (default 60 ticks: every
	// minute at the default tick); its first run starts one tick after
	// Start.
	GraphEvery time.Duration
	// GraphStep is the pause before each node of the graph runs (default
	// half a tick, at most 1 s; negative: none).
	GraphStep time.Duration
	// CallTimeout bounds a call the Neural API routes, and a graph node's
	// health check (default 2 s).
	CallTimeout time.Duration
	// Federation adds a second node reached over TCP (federation.go),
	// named by the registry's discovery.peers. Off by default: discovery
	// then lists that node's registry as a second "songbird" target, which
	// changes what `ls` and `tail` show of the demo.
	Federation bool
}

// Entry is one thing the ecosystem serves, for the overview.
type Entry struct {
	Name string // what a person types (primal name, alias, path)
	Path string // where it lives
	What string // what it is
}

// Ecosystem is a running simulated ecosystem.
type Ecosystem struct {
	// Dir is the socket directory.
	Dir string
	// Family is the family id of the family-scoped sockets.
	Family string
	// SeedFile holds the family seed (mode 0600); the seed itself is never
	// printed.
	SeedFile string
	// Registry is the Songbird-like registry's state.
	Registry *Registry
	// Remote is the registry of the second node (RemoteNodeID), reached
	// over TCP; each registry's discovery.peers names the other node. Nil
	// without Options.Federation.
	Remote *Registry

	opts    Options
	ownDir  bool
	seed    string
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	servers map[string]*peer.Server // by socket file name
	entries []Entry
	closers []func()

	// The composition (composition.go).
	pid         int
	stall       peer.Stall
	neural      *peer.Neural
	events      *peer.BiomeOS
	traffic     []*trafficRoute
	toadstoolEP string
}

// part adds one piece of the ecosystem.
type part func(e *Ecosystem) error

// Start builds and serves an ecosystem until Close (or ctx ends, which also
// stops the background activity; Close is still needed to clean up).
func Start(ctx context.Context, opts Options) (*Ecosystem, error) {
	if opts.Family == "" {
		opts.Family = DefaultFamily
	}
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.Churn <= 0 {
		opts.Churn = 12 * time.Second
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = 5 * opts.Tick
	}
	if opts.StaleFor == 0 {
		opts.StaleFor = 20 * opts.Tick
	}
	if opts.StaleEvery <= 0 {
		opts.StaleEvery = 60 * opts.Tick
	}
	opts.StaleEvery = max(opts.StaleEvery, opts.StaleFor+opts.Tick)
	if opts.GraphEvery <= 0 {
		opts.GraphEvery = 60 * opts.Tick
	}
	switch {
	case opts.GraphStep == 0:
		opts.GraphStep = min(opts.Tick/2, time.Second)
	case opts.GraphStep < 0:
		opts.GraphStep = 0
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 2 * time.Second
	}
	e := &Ecosystem{Dir: opts.Dir, Family: opts.Family, opts: opts, servers: map[string]*peer.Server{}, pid: os.Getpid()}
	if e.Dir == "" {
		d, err := os.MkdirTemp("", "primalscope-demo-")
		if err != nil {
			return nil, fmt.Errorf("demo: make socket dir: %w", err)
		}
		e.Dir, e.ownDir = d, true
	} else if err := os.MkdirAll(e.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("demo: make socket dir: %w", err)
	}
	if err := os.Chmod(e.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	e.ctx, e.cancel = context.WithCancel(ctx)
	e.Registry = peer.NewRegistry()
	if err := e.writeSeed(); err != nil {
		e.Close()
		return nil, err
	}
	parts := []part{
		(*Ecosystem).songbird, // first: the others register with it
		(*Ecosystem).beardog,
		(*Ecosystem).beardogFamily,
		(*Ecosystem).rhizocrypt,
		(*Ecosystem).squirrel,
		(*Ecosystem).nestgate,
		(*Ecosystem).coralreef, // composition.go
		(*Ecosystem).leanDaemon,
		(*Ecosystem).stale,
		(*Ecosystem).tarpcSidecar,
		(*Ecosystem).transient,
		(*Ecosystem).holonServer, (*Ecosystem).biomeOSAPI, // transports_events.go
		(*Ecosystem).stdioBus, // transports_bus.go
		// Other concerns add their parts here, one line each.
		(*Ecosystem).discoveryParts,
		(*Ecosystem).composition, // after the Neural API (discoveryParts)
		(*Ecosystem).federation,  // federation.go (with Options.Federation)
	}
	for _, p := range parts {
		if err := p(e); err != nil {
			e.Close()
			return nil, err
		}
	}
	e.every(e.opts.Tick, e.pulse())
	return e, nil
}

// Close stops every server and goroutine and removes what Start created.
func (e *Ecosystem) Close() error {
	e.cancel()
	e.wg.Wait()
	e.mu.Lock()
	servers := e.servers
	e.servers = map[string]*peer.Server{}
	closers := e.closers
	e.closers = nil
	e.mu.Unlock()
	var errs []error
	for _, s := range servers {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	if e.ownDir {
		if err := os.RemoveAll(e.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Path returns the path of a socket file name in the ecosystem's directory.
func (e *Ecosystem) Path(name string) string { return filepath.Join(e.Dir, name) }

// Seed returns the family seed (for tests and the in-process TUI; never print it).
func (e *Ecosystem) Seed() string { return e.seed }

// Context is done when the ecosystem is closing.
func (e *Ecosystem) Context() context.Context { return e.ctx }

// Serve starts a server on a socket file in the directory and keeps it for
// Close. name is the file name (e.g. "beardog.sock").
func (e *Ecosystem) Serve(name string, cfg peer.Config) (*peer.Server, error) {
	s, err := peer.Listen(e.Path(name), cfg)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	e.mu.Lock()
	e.servers[name] = s
	e.mu.Unlock()
	return s, nil
}

// Stop closes the server of a socket file name, if running.
func (e *Ecosystem) Stop(name string) {
	e.mu.Lock()
	s := e.servers[name]
	delete(e.servers, name)
	e.mu.Unlock()
	if s != nil {
		s.Close()
	}
}

// Server returns the running server of a socket file name, or nil.
func (e *Ecosystem) Server(name string) *peer.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.servers[name]
}

// Servers returns the running servers by socket file name.
func (e *Ecosystem) Servers() map[string]*peer.Server {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]*peer.Server, len(e.servers))
	for k, v := range e.servers {
		out[k] = v
	}
	return out
}

// Symlink makes a capability-domain alias (ai.sock -> squirrel.sock).
func (e *Ecosystem) Symlink(alias, target string) error {
	p := e.Path(alias)
	_ = os.Remove(p)
	if err := os.Symlink(target, p); err != nil {
		return fmt.Errorf("demo: symlink %s: %w", alias, err)
	}
	return nil
}

// AddEntry records something served, for the overview.
func (e *Ecosystem) AddEntry(en Entry) {
	e.mu.Lock()
	e.entries = append(e.entries, en)
	e.mu.Unlock()
}

// OnClose runs f when the ecosystem closes (after the servers stop).
func (e *Ecosystem) OnClose(f func()) {
	e.mu.Lock()
	e.closers = append(e.closers, f)
	e.mu.Unlock()
}

// Entries lists what the ecosystem serves.
func (e *Ecosystem) Entries() []Entry {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]Entry(nil), e.entries...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WriteOverview prints what is served and how to reach it.
func (e *Ecosystem) WriteOverview(w io.Writer) {
	fmt.Fprintf(w, "primalscope demo ecosystem in %s (family %s)\n\n", e.Dir, e.Family)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tWHAT\tSOCKET")
	for _, en := range e.Entries() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", en.Name, en.What, strings.TrimPrefix(en.Path, e.Dir+"/"))
	}
	tw.Flush()
	fmt.Fprintf(w, "\nTry:\n  primalscope call --socket-dir %s beardog health.liveness\n", e.Dir)
	fmt.Fprintf(w, "  primalscope caps --socket-dir %s rhizocrypt\n", e.Dir)
	fmt.Fprintf(w, "  FAMILY_SEED=\"$(cat %s)\" primalscope call --socket-dir %s beardog-%s health.liveness\n", e.SeedFile, e.Dir, e.Family)
	fmt.Fprintf(w, "  FAMILY_SEED=\"$(cat %s)\" primalscope call --socket-dir %s neural-api-%s lifecycle.get '{\"name\":\"toadstool\"}'\n", e.SeedFile, e.Dir, e.Family)
}

// goLoop runs f on a goroutine the ecosystem owns until Close.
func (e *Ecosystem) goLoop(f func(ctx context.Context)) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		f(e.ctx)
	}()
}

// every runs f each period d until the ecosystem stops, on a goroutine the
// ecosystem owns; n counts the runs from 1.
func (e *Ecosystem) every(d time.Duration, f func(n int64)) {
	e.goLoop(func(ctx context.Context) {
		t := time.NewTicker(max(d, 1))
		defer t.Stop()
		for n := int64(1); ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			f(n)
		}
	})
}

func (e *Ecosystem) writeSeed() error {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("demo: family seed: %w", err)
	}
	e.seed = hex.EncodeToString(b)
	e.SeedFile = e.Path("family.seed")
	if err := os.WriteFile(e.SeedFile, []byte(e.seed+"\n"), 0o600); err != nil {
		return fmt.Errorf("demo: write seed file: %w", err)
	}
	return nil
}
