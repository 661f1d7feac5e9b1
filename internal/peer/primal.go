package peer

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// CapFormat selects the shape of a simulated primal's capabilities.list answer.
type CapFormat string

// The capability shapes of the Capability Wire Standard.
const (
	FormatStandard CapFormat = "standard" // {primal, version, methods, ...}
	FormatA        CapFormat = "A"        // bare array of method names
	FormatB        CapFormat = "B"        // {capabilities:[...], methods:[...]}
	FormatC        CapFormat = "C"        // {method_info:[{name}]}
	FormatD        CapFormat = "D"        // {semantic_mappings:{domain:{method:{}}}}
	FormatE        CapFormat = "E"        // {primal, provided_capabilities:[{type, methods}]}
)

// Group is a capability group (provided_capabilities entry).
type Group struct {
	Type        string   `json:"type"`
	Methods     []string `json:"methods"` // short names within the domain
	Version     string   `json:"version,omitempty"`
	Description string   `json:"description,omitempty"`
}

// Primal describes a simulated primal: what it says about itself and how it
// answers the standard methods.
type Primal struct {
	Name, Version, Domain, License string
	Format                         CapFormat
	// Groups are the capability groups; every method of every group is callable.
	Groups []Group
	// Level3 adds provided_capabilities, consumed_capabilities,
	// cost_estimates and operation_dependencies to a standard answer.
	Level3   bool
	Consumed []string
	Costs    map[string]map[string]any
	OpDeps   map[string][]string
	// Extra fields merged into the capabilities.list result.
	Extra map[string]any
	// Liveness is the health.liveness answer (default {"status":"alive"}).
	Liveness any
	// IdentityOnly answers only the older "identity" method, not identity.get.
	IdentityOnly bool
	// NoIdentity answers neither identity method.
	NoIdentity bool
	// Sign adds a signed_announcement made with the identity key of
	// (Name, NodeID); BadSignature corrupts it.
	Sign         bool
	BadSignature bool
	NodeID       string
	// Handlers answer methods of the groups (and any others); a group
	// method with no handler answers a plain echo of its params.
	Handlers map[string]HandlerFunc
	// Omit lists advertised methods that answer "method not found" anyway
	// (a primal that is not level 2).
	Omit []string
}

// Methods returns every fully qualified method the primal advertises.
func (p *Primal) Methods() []string {
	seen := map[string]bool{}
	var out []string
	add := func(m string) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	for _, g := range p.Groups {
		for _, m := range g.Methods {
			add(g.Type + "." + m)
		}
	}
	for _, m := range []string{"health.liveness", "health.readiness", "health.check", "capabilities.list"} {
		add(m)
	}
	if !p.NoIdentity && !p.IdentityOnly {
		add("identity.get")
	}
	sort.Strings(out)
	return out
}

// Config returns a server Config that answers as this primal.
func (p *Primal) Config() Config {
	start := time.Now()
	methods := map[string]HandlerFunc{}
	for _, g := range p.Groups {
		for _, m := range g.Methods {
			full := g.Type + "." + m
			methods[full] = func(_ context.Context, params json.RawMessage) (any, error) {
				if params == nil {
					params = json.RawMessage("{}")
				}
				return map[string]any{"method": full, "echo": params}, nil
			}
		}
	}
	for name, h := range p.Handlers {
		methods[name] = h
	}
	live := p.Liveness
	if live == nil {
		live = map[string]any{"status": "alive"}
	}
	methods["health.liveness"] = func(context.Context, json.RawMessage) (any, error) { return live, nil }
	methods["health.readiness"] = func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"status": "ready", "subsystems": map[string]string{"ipc": "up", "storage": "up"}}, nil
	}
	methods["health.check"] = func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"status": "healthy", "primal": p.Name, "version": p.Version, "uptime_s": int(time.Since(start).Seconds())}, nil
	}
	caps := p.Capabilities()
	methods["capabilities.list"] = func(context.Context, json.RawMessage) (any, error) { return caps, nil }
	methods["capability.list"] = methods["capabilities.list"]
	ident := map[string]any{"primal": p.Name, "version": p.Version}
	if p.Domain != "" {
		ident["domain"] = p.Domain
	}
	if p.License != "" {
		ident["license"] = p.License
	}
	switch {
	case p.NoIdentity:
	case p.IdentityOnly:
		methods["identity"] = func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primal": p.Name, "version": p.Version, "family_id": "default", "capabilities": domains(p.Groups)}, nil
		}
	default:
		methods["identity.get"] = func(context.Context, json.RawMessage) (any, error) { return ident, nil }
	}
	for _, m := range p.Omit {
		delete(methods, m)
	}
	return Config{Methods: methods}
}

func domains(gs []Group) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.Type)
	}
	return out
}

// Capabilities builds the capabilities.list result in the primal's format.
func (p *Primal) Capabilities() json.RawMessage {
	methods := p.Methods()
	var v any
	switch p.Format {
	case FormatA:
		v = methods
	case FormatB:
		v = map[string]any{"capabilities": domains(p.Groups), "methods": methods}
	case FormatC:
		info := make([]map[string]any, 0, len(methods))
		for _, m := range methods {
			info = append(info, map[string]any{"name": m, "description": "calls " + m})
		}
		v = map[string]any{"method_info": info}
	case FormatD:
		sm := map[string]map[string]any{}
		for _, m := range methods {
			d, op, _ := strings.Cut(m, ".")
			if sm[d] == nil {
				sm[d] = map[string]any{}
			}
			sm[d][op] = map[string]any{}
		}
		v = map[string]any{"semantic_mappings": sm}
	case FormatE:
		// Format E carries no flat method list: the signature covers the
		// methods its groups expand to, which is what a verifier can rebuild.
		r := map[string]any{"primal": p.Name, "version": p.Version, "provided_capabilities": p.groupsWithVersion()}
		var groupMethods []string
		for _, g := range p.Groups {
			for _, m := range g.Methods {
				groupMethods = append(groupMethods, g.Type+"."+m)
			}
		}
		p.addSigned(r, groupMethods)
		v = merge(r, p.Extra)
	default:
		r := map[string]any{"primal": p.Name, "version": p.Version, "methods": methods}
		if p.Level3 {
			r["provided_capabilities"] = p.groupsWithVersion()
			r["consumed_capabilities"] = orEmpty(p.Consumed)
			if p.Costs != nil {
				r["cost_estimates"] = p.Costs
			}
			if p.OpDeps != nil {
				r["operation_dependencies"] = p.OpDeps
			}
			r["protocol"] = "jsonrpc-2.0"
			r["transport"] = []string{"uds"}
		}
		p.addSigned(r, methods)
		v = merge(r, p.Extra)
	}
	b, _ := json.Marshal(v)
	return b
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (p *Primal) groupsWithVersion() []Group {
	out := make([]Group, len(p.Groups))
	for i, g := range p.Groups {
		if g.Version == "" {
			g.Version = p.Version
		}
		out[i] = g
	}
	return out
}

func merge(r map[string]any, extra map[string]any) map[string]any {
	for k, v := range extra {
		r[k] = v
	}
	return r
}

func (p *Primal) addSigned(r map[string]any, methods []string) {
	if !p.Sign {
		return
	}
	key := IdentityKey(p.Name, p.NodeID)
	sig := ed25519.Sign(key, AnnouncementDigest(p.Name, p.Version, methods))
	if p.BadSignature {
		sig[0] ^= 0xff
	}
	r["signed_announcement"] = map[string]any{
		"schema_version": 2,
		"algorithm":      "ed25519",
		"public_key":     hex.EncodeToString(key.Public().(ed25519.PublicKey)),
		"signature":      hex.EncodeToString(sig),
		"signed_fields":  []string{"primal", "version", "methods"},
	}
}

// IdentityKey derives a primal instance's Ed25519 key as the Capability Wire
// Standard says: seed = SHA-256("primal-identity-key:" || primal || ":" || node_id).
func IdentityKey(primal, nodeID string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("primal-identity-key:" + primal + ":" + nodeID))
	return ed25519.NewKeyFromSeed(seed[:])
}

// AnnouncementDigest is SHA-256(primal ":" version ":" sorted methods each followed by ",").
func AnnouncementDigest(primal, version string, methods []string) []byte {
	ms := append([]string(nil), methods...)
	sort.Strings(ms)
	h := sha256.New()
	h.Write([]byte(primal + ":" + version + ":"))
	for _, m := range ms {
		h.Write([]byte(m + ","))
	}
	return h.Sum(nil)
}

// StartPrimal listens on path and answers as p.
func StartPrimal(path string, p *Primal) (*Server, error) { return Listen(path, p.Config()) }

// LeanDaemon returns the config of a lean NDJSON daemon (floatpane/go-uds-jsonrpc
// style) with Ping, Echo and Sleep methods; Sleep {"ms":N} answers after N ms,
// so replies come back out of order.
func LeanDaemon() Config {
	return Config{Lean: true, Methods: map[string]HandlerFunc{
		"Ping": func(context.Context, json.RawMessage) (any, error) { return map[string]any{"pong": true}, nil },
		"Echo": func(_ context.Context, p json.RawMessage) (any, error) {
			if p == nil {
				p = json.RawMessage("null")
			}
			return p, nil
		},
		"Sleep": func(ctx context.Context, p json.RawMessage) (any, error) {
			var a struct{ MS int }
			_ = json.Unmarshal(p, &a)
			if a.MS > 10000 {
				a.MS = 10000
			}
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
			case <-ctx.Done():
			}
			return map[string]any{"slept_ms": a.MS}, nil
		},
	}}
}

// Error returns a handler that always answers with the given error object.
func Error(code int64, msg string) HandlerFunc {
	return func(context.Context, json.RawMessage) (any, error) {
		return nil, &ipc.RPCError{Code: code, Message: msg}
	}
}
