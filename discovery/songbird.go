package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Registration is one service a Songbird registry knows about, from
// ipc.list (current or legacy shape), ipc.discover, ipc.resolve or ipc.watch.
type Registration struct {
	PrimalID     string   `json:"primal_id"`
	Capabilities []string `json:"capabilities,omitempty"`
	// VirtualEndpoint is Songbird's own name for the service.
	VirtualEndpoint string `json:"virtual_endpoint,omitempty"`
	// Native is the address as the registry gave it.
	Native string `json:"native_endpoint,omitempty"`
	// Endpoint is Native parsed, when it is dialable (zero otherwise).
	Endpoint ipc.Endpoint `json:"endpoint"`
	// Relay is true when the service is reached through a mesh relay.
	Relay   bool   `json:"relay,omitempty"`
	Version string `json:"version,omitempty"`
	// Available is the legacy shape's flag (nil when not given).
	Available *bool `json:"available,omitempty"`
	// Legacy is true for the older {name, endpoint, ...} shape.
	Legacy bool   `json:"legacy,omitempty"`
	Status string `json:"status,omitempty"`
}

// WatchEvent is one event of ipc.watch.
type WatchEvent struct {
	Revision     int64        `json:"revision"`
	Kind         string       `json:"kind"`
	Primal       string       `json:"primal"`
	Capabilities []string     `json:"capabilities,omitempty"`
	Endpoint     ipc.Endpoint `json:"endpoint"`
}

// WatchResult is an ipc.watch answer.
type WatchResult struct {
	Revision int64        `json:"revision"`
	Events   []WatchEvent `json:"events,omitempty"`
}

// Peer is another node from discovery.peers.
type Peer struct {
	NodeID  string `json:"node_id"`
	Address string `json:"address"`
	TCPPort int    `json:"tcp_port"`
}

// parseRegistration reads one service object of any registry shape.
func parseRegistration(m map[string]any) (Registration, bool) {
	r := Registration{
		PrimalID:        cleanName(str(m, "primal_id", "primal", "name", "id")),
		VirtualEndpoint: human.Clip(str(m, "virtual_endpoint"), 512),
		Version:         cleanName(str(m, "version")),
		Status:          cleanName(str(m, "status", "state")),
	}
	if _, ok := m["primal_id"]; !ok {
		if _, ok := m["name"]; ok {
			r.Legacy = true
		}
	}
	if b, ok := m["available"].(bool); ok {
		r.Available = &b
	}
	r.Capabilities = capNames(m["capabilities"])
	if rel, ok := m["relay"].(bool); ok && rel {
		r.Relay = true
	}
	// The most specific address first: a structured endpoint, then the
	// native endpoint, the socket, and the legacy endpoint string.
	for _, k := range []string{"endpoint", "native_endpoint", "socket", "socket_path", "address"} {
		v, ok := m[k]
		if !ok || v == nil {
			continue
		}
		if s, ok := v.(string); ok && r.Native == "" {
			r.Native = human.Clip(s, 512)
		}
		ep, err := endpointFrom(v)
		if err == nil {
			r.Endpoint = ep
			if r.Native == "" || k != "endpoint" {
				r.Native = ep.String()
			}
			break
		}
		if obj, ok := v.(map[string]any); ok {
			if t := strings.ToLower(str(obj, "transport")); t == "mesh_relay" || t == "relay" {
				r.Relay = true
			}
		}
	}
	if r.PrimalID == "" && r.Endpoint.Transport == "" {
		return r, false
	}
	return r, true
}

// registrationList reads the registrations of a registry answer (see
// eachEntry): at most MaxRegistryEntries, decoded one at a time. Entries it
// cannot read are skipped and counted in the error; a cut is a *CutError
// in it.
func registrationList(b []byte, keys ...string) ([]Registration, error) {
	var out []Registration
	bad := 0
	err := eachEntry(b, keys, MaxRegistryEntries, func(e any) {
		m, ok := e.(map[string]any)
		if !ok {
			bad++
			return
		}
		r, ok := parseRegistration(m)
		if !ok {
			bad++
			return
		}
		out = append(out, r)
	})
	if bad > 0 {
		err = errors.Join(err, fmt.Errorf("%d entries unreadable", bad))
	}
	return out, err
}

// ParseIPCList reads an ipc.list answer, current
// ({services:[{primal_id, virtual_endpoint, capabilities}]}) or legacy
// ({services:[{name, endpoint, capabilities, version, available}]}), or
// lifecycle.composition's {primals:[...]}. Entries it cannot read are
// skipped and counted in the error, alongside those it could.
func ParseIPCList(result json.RawMessage) ([]Registration, error) {
	return registrationList(result, "services", "primals", "providers")
}

// ParseDiscover reads an ipc.discover answer ({providers:[...]}).
func ParseDiscover(result json.RawMessage) ([]Registration, error) {
	return registrationList(result, "providers", "services")
}

// ParseResolve reads an ipc.resolve answer.
func ParseResolve(result json.RawMessage) (Registration, error) {
	m, err := decodeObject(result)
	if err != nil {
		return Registration{}, err
	}
	r, _ := parseRegistration(m)
	if r.Endpoint.Transport == "" && !r.Relay {
		return r, ErrNoEndpoint
	}
	return r, nil
}

// ParseWatch reads an ipc.watch answer ({revision, events:[{revision, kind,
// primal, capabilities, endpoint}]}).
func ParseWatch(result json.RawMessage) (WatchResult, error) {
	m, err := decodeObject(result)
	if err != nil {
		return WatchResult{}, err
	}
	var w WatchResult
	rev, ok := num(m["revision"])
	if !ok {
		return WatchResult{}, errors.New("no revision")
	}
	w.Revision = rev
	evs, _ := m["events"].([]any)
	for _, e := range evs {
		em, ok := e.(map[string]any)
		if !ok || len(w.Events) >= MaxRegistryEntries {
			continue
		}
		ev := WatchEvent{Kind: cleanName(str(em, "kind", "type")), Primal: cleanName(str(em, "primal", "primal_id", "name")),
			Capabilities: capNames(em["capabilities"])}
		ev.Revision, _ = num(em["revision"])
		if x, ok := em["endpoint"]; ok {
			ev.Endpoint, _ = endpointFrom(x)
		}
		w.Events = append(w.Events, ev)
	}
	return w, nil
}

// ParsePeers reads a discovery.peers answer ({peers:[{node_id, address, tcp_port}]}).
func ParsePeers(result json.RawMessage) ([]Peer, error) {
	var out []Peer
	err := eachEntry(result, []string{"peers"}, MaxRegistryEntries, func(e any) {
		m, ok := e.(map[string]any)
		if !ok {
			return
		}
		p := Peer{NodeID: cleanName(str(m, "node_id", "id")), Address: cleanName(str(m, "address", "host"))}
		if n, ok := num(m["tcp_port"]); ok && n > 0 && n <= 65535 {
			p.TCPPort = int(n)
		} else if n, ok := num(m["port"]); ok && n > 0 && n <= 65535 {
			p.TCPPort = int(n)
		}
		if p.Address == "" {
			return
		}
		out = append(out, p)
	})
	var cut *CutError
	if err != nil && !errors.As(err, &cut) && len(out) == 0 {
		return nil, err
	}
	return out, err
}

// Registry is a client of one Songbird registry.
type Registry struct {
	Endpoint ipc.Endpoint
	// Timeout bounds each call (default 2 s).
	Timeout time.Duration
	// ConnectTimeout bounds connecting (default 200 ms for local sockets).
	ConnectTimeout time.Duration
	// Security is how to speak to the registry (the prober's: the family
	// seed, the prefix mode, the endpoint memory). Whatever it says, a
	// family-scoped registry (songbird-<family>.sock, see FamilyScoped) gets
	// nothing in cleartext: without a seed it is not dialled at all.
	Security ipc.Security
}

func (r *Registry) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return 2 * time.Second
}

// session dials the registry and runs fn over one connection.
func (r *Registry) session(ctx context.Context, fn func(c *ipc.Conn) error) error {
	ct := r.ConnectTimeout
	if ct <= 0 {
		// A registry is worth more patience than a probe: it speaks for
		// many targets.
		ct = max(connectTimeoutFor(r.Endpoint, ProbeOptions{}), 200*time.Millisecond)
	}
	c, err := ipc.Dial(ctx, r.Endpoint, ipc.Options{ConnectTimeout: ct, MaxFrame: 16 << 20, IncomingBuffer: 16,
		Security: scopedSecurity(r.Security, r.Endpoint)})
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

func (r *Registry) call(ctx context.Context, c *ipc.Conn, method string, params any) (json.RawMessage, error) {
	cctx, cancel := context.WithTimeout(ctx, r.timeout())
	defer cancel()
	resp, err := c.Call(cctx, method, params)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	return resp.Result, nil
}

// List calls ipc.list (falling back to lifecycle.composition when the
// registry does not know ipc.list).
func (r *Registry) List(ctx context.Context) ([]Registration, error) {
	var out []Registration
	err := r.session(ctx, func(c *ipc.Conn) error {
		var err error
		out, err = r.list(ctx, c)
		return err
	})
	return out, err
}

func (r *Registry) list(ctx context.Context, c *ipc.Conn) ([]Registration, error) {
	res, err := r.call(ctx, c, "ipc.list", nil)
	var rpc *ipc.RPCError
	if errors.As(err, &rpc) && rpc.Code == -32601 {
		res, err = r.call(ctx, c, "lifecycle.composition", nil)
	}
	if err != nil {
		return nil, err
	}
	return ParseIPCList(res)
}

// Discover calls ipc.discover {capability} (falling back to its aliases
// capability.discover and discovery.find_by_capability).
func (r *Registry) Discover(ctx context.Context, capability string) ([]Registration, error) {
	var out []Registration
	err := r.session(ctx, func(c *ipc.Conn) error {
		var res json.RawMessage
		var err error
		for _, m := range []string{"ipc.discover", "capability.discover", "discovery.find_by_capability"} {
			res, err = r.call(ctx, c, m, map[string]string{"capability": capability})
			var rpc *ipc.RPCError
			if !errors.As(err, &rpc) || rpc.Code != -32601 {
				break
			}
		}
		if err != nil {
			return err
		}
		out, err = ParseDiscover(res)
		return err
	})
	return out, err
}

// Resolve calls ipc.resolve {primal_id}.
func (r *Registry) Resolve(ctx context.Context, primalID string) (Registration, error) {
	var out Registration
	err := r.session(ctx, func(c *ipc.Conn) error {
		res, err := r.call(ctx, c, "ipc.resolve", map[string]string{"primal_id": primalID})
		if err != nil {
			return err
		}
		out, err = ParseResolve(res)
		return err
	})
	return out, err
}

// Watch calls ipc.watch {since_revision}: the registrations since that
// revision (polling; Songbird does not push).
func (r *Registry) Watch(ctx context.Context, since int64) (WatchResult, error) {
	var out WatchResult
	err := r.session(ctx, func(c *ipc.Conn) error {
		res, err := r.call(ctx, c, "ipc.watch", map[string]int64{"since_revision": since})
		if err != nil {
			return err
		}
		out, err = ParseWatch(res)
		return err
	})
	return out, err
}

// Peers calls discovery.peers: the other nodes this registry knows.
func (r *Registry) Peers(ctx context.Context) ([]Peer, error) {
	var out []Peer
	err := r.session(ctx, func(c *ipc.Conn) error {
		res, err := r.call(ctx, c, "discovery.peers", nil)
		if err != nil {
			return err
		}
		out, err = ParsePeers(res)
		return err
	})
	return out, err
}

// SongbirdSource lists what one Songbird registry knows: ipc.list, an
// ipc.resolve for each service the list gives no native endpoint for, and
// the other nodes of discovery.peers (as remote registry targets).
type SongbirdSource struct {
	Registry
	// Label names the registry in Found.Detail (its socket path).
	Label string
	// MaxResolve bounds the ipc.resolve calls per sweep (default 64).
	MaxResolve int
	// Federation asks discovery.peers for the other nodes the registry
	// knows (remote registry targets). Off, they are not asked for: a
	// registry must not steer discovery to other machines (or to 2,000
	// ports of this one) unless the user asked for federation by name.
	Federation bool
}

// Name implements Source.
func (s *SongbirdSource) Name() string { return SrcSongbird }

// Discover implements Source.
func (s *SongbirdSource) Discover(ctx context.Context) ([]Found, error) {
	label := s.Label
	if label == "" {
		label = s.Endpoint.String()
	}
	var out []Found
	var errs []error
	err := s.session(ctx, func(c *ipc.Conn) error {
		regs, err := s.list(ctx, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("songbird %s: %w", label, err))
		}
		max := s.MaxResolve
		if max <= 0 {
			max = 64
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range regs {
			if regs[i].Endpoint.Transport != "" || regs[i].Relay || regs[i].PrimalID == "" || max == 0 {
				continue
			}
			max--
			wg.Add(1)
			sem <- struct{}{}
			go func(r *Registration) {
				defer func() { <-sem; wg.Done() }()
				res, err := s.call(ctx, c, "ipc.resolve", map[string]string{"primal_id": r.PrimalID})
				if err != nil {
					return
				}
				rr, err := ParseResolve(res)
				mu.Lock()
				defer mu.Unlock()
				if err == nil || rr.Relay {
					r.Endpoint, r.Relay = rr.Endpoint, rr.Relay
					if rr.Native != "" {
						r.Native = rr.Native
					}
				}
			}(&regs[i])
		}
		wg.Wait()
		for _, r := range regs {
			f := Found{Endpoint: r.Endpoint, Name: r.PrimalID, Source: SrcSongbird, Detail: label,
				Capabilities: r.Capabilities, Kind: kindForName(r.PrimalID)}
			switch {
			case r.Relay:
				f.NoProbe = true
				f.Note = "registered with " + label + " behind a mesh relay"
			case r.Endpoint.Transport == "":
				f.NoProbe = true
				f.Note = "registered with " + label + " without a native endpoint"
			}
			if r.Available != nil && !*r.Available {
				f.Note = "registry says unavailable"
			}
			out = append(out, f)
		}
		if !s.Federation {
			return nil
		}
		res, err := s.call(ctx, c, "discovery.peers", nil)
		var rpc *ipc.RPCError
		if err != nil && !(errors.As(err, &rpc) && rpc.Code == -32601) {
			errs = append(errs, fmt.Errorf("songbird %s: %w", label, err))
		}
		if err == nil {
			peers, perr := ParsePeers(res)
			if perr != nil {
				errs = append(errs, fmt.Errorf("songbird %s: discovery.peers: %w", label, perr))
			}
			for _, p := range peers {
				port := p.TCPPort
				if port == 0 {
					port = 9200
				}
				ep, err := tcpFrom(p.Address, json.Number(fmt.Sprint(port)))
				if err != nil {
					continue
				}
				name := "songbird@" + p.NodeID
				if p.NodeID == "" {
					name = "songbird@" + p.Address
				}
				out = append(out, Found{Endpoint: ep, Name: name, Kind: KindRemote, Source: SrcPeers, Detail: label})
			}
		}
		return nil
	})
	if lockedWithoutSeed(err) {
		return nil, nil // listed as locked, with what to set, by its own probe
	}
	if err != nil {
		return out, fmt.Errorf("songbird %s: %w", label, err)
	}
	return out, errors.Join(errs...)
}
