package demo

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

const nodeID = "demo-node-1"

func (e *Ecosystem) serveAndRegister(file string, p *peer.Primal, what string, cfg peer.Config) error {
	if _, err := e.Serve(file, cfg); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: strings.TrimSuffix(file, ".sock"), Path: e.Path(file), What: what})
	var domains []string
	for _, g := range p.Groups {
		domains = append(domains, g.Type)
	}
	e.Registry.Register(Registration{PrimalID: p.Name, Capabilities: domains, Endpoint: e.Path(file)})
	return nil
}

// beardogPrimal is a BearDog-like crypto primal: format E, signed, with
// real Ed25519 signing under its identity key.
func (e *Ecosystem) beardogPrimal(familyScoped bool) *peer.Primal {
	key := peer.IdentityKey("beardog", nodeID)
	ts := map[string]any{"btsp_required": familyScoped, "btsp_version": "2.0", "btsp_server_available": true,
		"cleartext_available": !familyScoped}
	if familyScoped {
		ts["note"] = "Family-scoped socket: BTSP handshake required before JSON-RPC."
	} else {
		ts["note"] = "Standalone socket: cleartext JSON-RPC accepted."
	}
	return &peer.Primal{
		Name: "beardog", Version: "0.9.0", Domain: "crypto", License: "AGPL-3.0-or-later",
		Format: peer.FormatE, Sign: true, NodeID: nodeID,
		Groups: []peer.Group{
			{Type: "crypto", Description: "Ed25519 signatures, hashing and key exchange",
				Methods: []string{"sign_ed25519", "verify_ed25519", "hash", "hmac", "x25519_generate_ephemeral"}},
			{Type: "btsp", Description: "BTSP sessions as a service",
				Methods: []string{"server.create_session", "server.status", "negotiate"}},
		},
		Extra: map[string]any{"btsp_enabled": true, "transport_security": ts, "family_id": e.Family, "node_id": nodeID,
			"protocols": []string{"jsonrpc-2.0", "tarpc"}},
		Handlers: map[string]peer.HandlerFunc{
			"crypto.sign_ed25519": func(_ context.Context, p json.RawMessage) (any, error) {
				var a struct {
					Message string `json:"message"`
				}
				if err := json.Unmarshal(orEmpty(p), &a); err != nil {
					return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: " + err.Error()}
				}
				msg, err := base64.StdEncoding.DecodeString(a.Message)
				if err != nil {
					return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: message is not base64 (message_encoding defaults to base64)"}
				}
				return map[string]any{
					"signature":  base64.StdEncoding.EncodeToString(ed25519.Sign(key, msg)),
					"public_key": base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
					"algorithm":  "ed25519",
				}, nil
			},
			"crypto.verify_ed25519": func(_ context.Context, p json.RawMessage) (any, error) {
				var a struct{ Message, Signature, PublicKey string }
				var raw map[string]string
				if err := json.Unmarshal(orEmpty(p), &raw); err != nil {
					return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: " + err.Error()}
				}
				a.Message, a.Signature, a.PublicKey = raw["message"], raw["signature"], raw["public_key"]
				msg, e1 := base64.StdEncoding.DecodeString(a.Message)
				sig, e2 := base64.StdEncoding.DecodeString(a.Signature)
				pub, e3 := base64.StdEncoding.DecodeString(a.PublicKey)
				if e1 != nil || e2 != nil || e3 != nil || len(pub) != ed25519.PublicKeySize {
					return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: message, signature and public_key must be base64"}
				}
				return map[string]any{"valid": ed25519.Verify(pub, msg, sig)}, nil
			},
			"crypto.hash": func(_ context.Context, p json.RawMessage) (any, error) {
				var a struct {
					Data string `json:"data"`
				}
				_ = json.Unmarshal(orEmpty(p), &a)
				data, err := base64.StdEncoding.DecodeString(a.Data)
				if err != nil {
					return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: data must be base64"}
				}
				sum := sha256.Sum256(data)
				return map[string]any{"hash": base64.StdEncoding.EncodeToString(sum[:]), "algorithm": "sha256"}, nil
			},
			"btsp.server.status": func(context.Context, json.RawMessage) (any, error) {
				return map[string]any{"active_sessions": 1, "btsp_version": "2.0", "ciphers": []string{"null", "chacha20_poly1305", "hmac_plain"}}, nil
			},
		},
	}
}

func (e *Ecosystem) beardog() error {
	p := e.beardogPrimal(false)
	return e.serveAndRegister("beardog.sock", p, "crypto primal (format E, signed announcement)", p.Config())
}

// beardogFamily serves the family-scoped BearDog that demands BTSP.
func (e *Ecosystem) beardogFamily() error {
	p := e.beardogPrimal(true)
	cfg := p.Config()
	cfg.Accept = peer.BTSPGate(btsp.ServerConfig{Seed: []byte(e.seed)}, false)
	file := "beardog-" + e.Family + ".sock"
	if _, err := e.Serve(file, cfg); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "beardog-" + e.Family, Path: e.Path(file), What: "family-scoped crypto primal: BTSP required (seed in family.seed)"})
	return nil
}

// registryPrimal is a Songbird-like registry answering from r.
func (e *Ecosystem) registryPrimal(r *Registry, family string) *peer.Primal {
	return &peer.Primal{
		Name: "songbird", Version: "0.12.3", Format: peer.FormatA,
		Groups: []peer.Group{
			{Type: "ipc", Methods: []string{"list", "discover", "resolve", "watch", "register"}},
			{Type: "lifecycle", Methods: []string{"composition"}},
			{Type: "discovery", Methods: []string{"peers", "find_by_capability"}},
		},
		IdentityOnly: true,
		Handlers:     r.Handlers(family),
	}
}

// songbirdPrimal is the demo's own registry.
func (e *Ecosystem) songbirdPrimal() *peer.Primal { return e.registryPrimal(e.Registry, e.Family) }

func (e *Ecosystem) songbird() error {
	p := e.songbirdPrimal()
	return e.serveAndRegister("songbird.sock", p, "registry (ipc.list, ipc.discover, ipc.resolve, ipc.watch, discovery.peers; format A)", p.Config())
}

func (e *Ecosystem) rhizocrypt() error {
	var sessions atomic.Int64
	lat := func(ms float64) map[string]any { return map[string]any{"latency_ms": ms} }
	p := &peer.Primal{
		Name: "rhizocrypt", Version: "0.14.0", Domain: "dag", License: "AGPL-3.0-or-later", Level3: true,
		Groups: []peer.Group{{Type: "dag", Description: "Ephemeral content-addressed DAG engine",
			Methods: []string{"session.create", "session.list", "event.append", "event.get", "merkle.root", "dehydrate"}}},
		Consumed: []string{"crypto.sign_ed25519", "storage.artifact.store"},
		Costs: map[string]map[string]any{
			"dag.session.create": {"cpu": "low", "latency_ms": 1},
			"dag.event.append":   {"cpu": "low", "latency_ms": 2},
			"dag.merkle.root":    {"cpu": "medium", "latency_ms": 15},
			"dag.dehydrate":      {"cpu": "high", "latency_ms": 120, "memory_bytes": 64 << 20},
			"dag":                lat(5),
		},
		// dag.session.create stores a genesis artifact through nestgate,
		// whose store appends a provenance event here, which needs a
		// session: a cycle of operation dependencies across two primals.
		OpDeps: map[string][]string{
			"dag.session.create": {"storage.artifact.store"},
			"dag.event.append":   {"dag.session.create"},
			"dag.merkle.root":    {"dag.event.append"},
			"dag.dehydrate":      {"dag.merkle.root", "storage.artifact.store"},
		},
		Handlers: map[string]peer.HandlerFunc{
			"dag.session.create": func(context.Context, json.RawMessage) (any, error) {
				n := sessions.Add(1)
				return map[string]any{"session_id": fmt.Sprintf("sess-%04d", n), "created_at": time.Now().UTC().Format(time.RFC3339)}, nil
			},
			"dag.session.list": func(context.Context, json.RawMessage) (any, error) {
				out := []string{}
				for i := int64(1); i <= sessions.Load(); i++ {
					out = append(out, fmt.Sprintf("sess-%04d", i))
				}
				return map[string]any{"sessions": out}, nil
			},
			"dag.merkle.root": func(_ context.Context, p json.RawMessage) (any, error) {
				sum := sha256.Sum256(p)
				return map[string]any{"root": hex.EncodeToString(sum[:]), "events": rand.IntN(500)}, nil
			},
		},
	}
	// Like the real rhizoCrypt, it requires the riboCipher first-byte
	// signal (EC 01): raw JSON gets error -32002.
	cfg := p.Config()
	cfg.Accept = peer.RiboCipher(peer.PrefixRequired, "rhizocrypt", nil)
	if err := e.serveAndRegister("rhizocrypt.sock", p, "DAG primal, compliance level 3 (cost estimates, dependencies); requires the riboCipher prefix", cfg); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "dag", Path: e.Path("dag.sock"), What: "capability symlink -> rhizocrypt.sock"})
	return e.Symlink("dag.sock", "rhizocrypt.sock")
}

func (e *Ecosystem) squirrel() error {
	p := &peer.Primal{
		Name: "squirrel", Version: "0.6.1", Domain: "ai",
		Groups: []peer.Group{{Type: "ai", Methods: []string{"complete", "embed", "route"}}},
		// Its params described (format C's method_info): the TUI offers a
		// template from them.
		Extra: map[string]any{"method_info": []map[string]any{
			{"name": "ai.complete", "description": "Complete a prompt", "params": map[string]any{
				"type": "object", "required": []string{"prompt"},
				"properties": map[string]any{
					"prompt":     map[string]any{"type": "string", "examples": []string{"Describe this ecosystem"}},
					"max_tokens": map[string]any{"type": "integer", "default": 64},
				}}},
			{"name": "ai.embed", "description": "Embed a text", "params": map[string]any{"text": "string"}},
		}},
		Handlers: map[string]peer.HandlerFunc{
			"ai.complete": func(_ context.Context, p json.RawMessage) (any, error) {
				var a struct {
					Prompt string `json:"prompt"`
				}
				_ = json.Unmarshal(orEmpty(p), &a)
				return map[string]any{"text": "A composition of " + strconv.Itoa(len(a.Prompt)) + " characters, considered.", "model": "demo-small", "tokens": 12}, nil
			},
			"ai.embed": func(context.Context, json.RawMessage) (any, error) {
				v := make([]float64, 8)
				for i := range v {
					v[i] = float64(int(rand.Float64()*2000-1000)) / 1000
				}
				return map[string]any{"embedding": v, "dim": len(v)}, nil
			},
		},
	}
	if err := e.serveAndRegister("squirrel.sock", p, "AI primal (level 2)", p.Config()); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "ai", Path: e.Path("ai.sock"), What: "capability symlink -> squirrel.sock"})
	return e.Symlink("ai.sock", "squirrel.sock")
}

func (e *Ecosystem) nestgate() error {
	p := &peer.Primal{
		Name: "nestgate", Version: "2.1.0", Domain: "storage", License: "AGPL-3.0-or-later", Level3: true,
		Groups: []peer.Group{{Type: "storage", Description: "Content-addressed artifact storage",
			Methods: []string{"artifact.store", "artifact.get", "artifact.list", "dataset.stats"}}},
		// It records each artifact's provenance in rhizocrypt's DAG, which
		// stores its snapshots here: a consumption cycle.
		Consumed: []string{"crypto.hash", "dag.event.append"},
		Costs:    map[string]map[string]any{"storage.artifact.store": {"cpu": "low", "latency_ms": 4}},
		OpDeps: map[string][]string{"storage.artifact.get": {"storage.artifact.store"},
			"storage.artifact.store": {"dag.event.append"}},
		Handlers: map[string]peer.HandlerFunc{
			"storage.artifact.get": e.bigArtifact(),
			"storage.dataset.stats": func(context.Context, json.RawMessage) (any, error) {
				return map[string]any{"artifacts": 1284, "bytes": 73400320, "pools": []string{"hot", "cold"}}, nil
			},
		},
	}
	return e.serveAndRegister("nestgate.sock", p, "storage primal (level 3)", p.Config())
}

// leanDaemon serves a lean NDJSON daemon where such daemons live:
// <dir>/<app>/<app>.sock beside a pid file.
func (e *Ecosystem) leanDaemon() error {
	dir := e.Path("floatmail")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(dir+"/floatmail.pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := e.Serve("floatmail/floatmail.sock", peer.LeanDaemon()); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "floatmail/floatmail.sock", Path: e.Path("floatmail/floatmail.sock"), What: "lean NDJSON daemon (Ping, Echo, Sleep; {type,data} events)"})
	return nil
}

func (e *Ecosystem) stale() error {
	if _, err := e.Serve("lostprimal.sock", peer.Config{Behavior: peer.Behavior{Silent: true}}); err != nil {
		return err
	}
	e.AddEntry(Entry{Name: "lostprimal", Path: e.Path("lostprimal.sock"), What: "stale: accepts, never answers"})
	return nil
}

// tarpcSidecar is a binary tarpc socket: listed by discovery, never spoken to.
func (e *Ecosystem) tarpcSidecar() error {
	ln, err := net.Listen("unix", e.Path("beardog.tarpc.sock"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	e.OnClose(func() { ln.Close(); os.Remove(e.Path("beardog.tarpc.sock")) })
	e.goLoop(func(ctx context.Context) {
		go func() { <-ctx.Done(); ln.Close() }()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte{0, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef}) // a binary frame
			c.Close()
		}
	})
	e.AddEntry(Entry{Name: "beardog.tarpc", Path: e.Path("beardog.tarpc.sock"), What: "binary tarpc sidecar (never sent JSON)"})
	return nil
}

// transient is a sweetGrass-like primal that comes and goes, registering and
// unregistering with the registry, so live views have something to show.
func (e *Ecosystem) transient() error {
	p := &peer.Primal{
		Name: "sweetgrass", Version: "0.7.27", Domain: "braid", Level3: true,
		Groups:   []peer.Group{{Type: "braid", Methods: []string{"create", "get"}}, {Type: "anchoring", Methods: []string{"anchor"}}},
		Consumed: []string{"crypto.sign_ed25519", "storage.artifact.store", "dag.session.create"},
		Costs:    map[string]map[string]any{"anchoring.anchor": {"cpu": "high", "latency_ms": 50}},
		OpDeps:   map[string][]string{"anchoring.anchor": {"braid.create"}},
	}
	cfg := p.Config()
	e.AddEntry(Entry{Name: "sweetgrass", Path: e.Path("sweetgrass.sock"), What: fmt.Sprintf("comes and goes every %s", e.opts.Churn)})
	come := func() {
		if _, err := e.Serve("sweetgrass.sock", cfg); err == nil {
			e.Registry.Register(Registration{PrimalID: "sweetgrass", Capabilities: []string{"braid", "anchoring"}, Endpoint: e.Path("sweetgrass.sock")})
			e.publish("primal_discovered", map[string]any{"primal": "sweetgrass", "socket_path": e.Path("sweetgrass.sock"),
				"timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
		}
	}
	come()
	e.every(e.opts.Churn, func(n int64) {
		if n%2 == 0 {
			come()
			return
		}
		e.Stop("sweetgrass.sock")
		e.Registry.Unregister("sweetgrass")
	})
	return nil
}

// pulse returns what pushes heartbeats and events to every connected client
// on tick seq.
func (e *Ecosystem) pulse() func(seq int64) {
	lastRev := int64(0)
	return func(seq int64) {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		for file, s := range e.Servers() {
			name := strings.TrimSuffix(file, ".sock")
			switch {
			case name == "lostprimal" || strings.HasPrefix(name, "beardog-"):
				continue // the stale primal says nothing; BTSP sessions get no cleartext
			case name == StaleProvider && e.stall.Stalled():
				continue
			case name == "floatmail/floatmail":
				if seq%3 == 0 {
					s.Notify("NewMail", map[string]any{"account_id": "abc", "unread": int(seq / 3), "at": now})
				}
				continue
			}
			s.Notify("health.heartbeat", map[string]any{"primal": name, "seq": seq, "status": "alive", "timestamp": now})
			if name == "rhizocrypt" {
				s.Notify("dag.event.appended", map[string]any{"session_id": "sess-0001", "event_id": fmt.Sprintf("evt-%06d", seq), "seq": seq})
			}
		}
		rev, fresh := e.Registry.Since(lastRev)
		if s := e.Server("songbird.sock"); s != nil {
			for _, ev := range fresh {
				s.Notify("ipc."+ev.Kind, ev)
			}
		}
		lastRev = rev
	}
}

// bigArtifact answers storage.artifact.get {"id", "size_bytes"} with a JSON
// document of about size_bytes (at most 64 MiB; default 4 KiB), so large
// answers can be tried and measured. Documents are cached by size.
func (e *Ecosystem) bigArtifact() peer.HandlerFunc {
	var mu sync.Mutex
	cache := map[int]json.RawMessage{}
	return func(_ context.Context, p json.RawMessage) (any, error) {
		var a struct {
			ID   string `json:"id"`
			Size int    `json:"size_bytes"`
		}
		if err := json.Unmarshal(orEmpty(p), &a); err != nil {
			return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: " + err.Error()}
		}
		if a.Size <= 0 {
			a.Size = 4 << 10
		}
		if a.Size > 64<<20 {
			return nil, &ipc.RPCError{Code: -32602, Message: "Invalid params: size_bytes is at most 67108864"}
		}
		mu.Lock()
		defer mu.Unlock()
		if doc, ok := cache[a.Size]; ok {
			return doc, nil
		}
		doc := artifactDoc(a.ID, a.Size)
		if len(cache) > 4 {
			clear(cache)
		}
		cache[a.Size] = doc
		return doc, nil
	}
}

// artifactDoc builds a realistic nested document of about size bytes.
func artifactDoc(id string, size int) json.RawMessage {
	var b strings.Builder
	b.Grow(size + 512)
	fmt.Fprintf(&b, `{"id":%q,"content_type":"application/x-ndjson","records":[`, id)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"seq":%d,"event_id":"evt-%08x","primal":%q,"ok":%t,"latency_ms":%.3f,"tags":["dag","session-%d"],"payload":{"hash":"%016x%016x","note":null,"parents":[%d,%d]}}`,
			i, r.Uint32(), []string{"beardog", "rhizocrypt", "nestgate", "squirrel"}[i%4], i%7 != 0, r.Float64()*20, i%13, r.Uint64(), r.Uint64(), i-1, i-2)
	}
	fmt.Fprintf(&b, `],"bytes":%d}`, b.Len())
	return json.RawMessage(b.String())
}
