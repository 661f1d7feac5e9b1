package discovery

import (
	"context"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/ipc"
)

// Kind says what sort of thing a target is.
type Kind string

// Kinds of target.
const (
	KindPrimal   Kind = "primal"   // a JSON-RPC primal
	KindRegistry Kind = "registry" // a Songbird registry (or discovery socket)
	KindNeural   Kind = "neural"   // the biomeOS Neural API
	KindBus      Kind = "bus"      // a stdio Bus daemon (one target per pool)
	KindLean     Kind = "lean"     // a lean NDJSON daemon
	KindTarpc    Kind = "tarpc"    // a binary tarpc sidecar: listed, never spoken to
	KindRemote   Kind = "remote"   // another node's registry (discovery.peers)
)

// Source names, as they appear in Found.Source and Target.Sources.
const (
	SrcSocketDir   = "socket-dir"
	SrcSymlink     = "symlink"
	SrcEnv         = "env"
	SrcManifest    = "manifest"
	SrcRegistry    = "socket-registry"
	SrcSongbird    = "songbird"
	SrcPeers       = "songbird-peers"
	SrcNeural      = "neural-api"
	SrcProc        = "proc"
	SrcLean        = "lean"
	SrcConfig      = "config"
	SrcCommandLine = "command-line"
)

// Found is one sighting of an endpoint by one source. Several Founds for the
// same endpoint are merged into one Target.
type Found struct {
	// Endpoint is where the thing is reached. It is the zero Endpoint
	// for a registration that names no dialable address (a mesh relay).
	Endpoint ipc.Endpoint `json:"endpoint"`
	// Name is what this source calls it (a primal name, a domain alias...).
	Name string `json:"name,omitempty"`
	// Alias marks Name as another name for the target (a capability-domain
	// symlink, an env domain variable), not its own name.
	Alias bool `json:"alias,omitempty"`
	// Family is the family id when the source knows it.
	Family string `json:"family,omitempty"`
	// Kind is what the source believes the endpoint is ("" means primal).
	Kind Kind `json:"kind,omitempty"`
	// Wire is the wire to speak ("" means detect; "lean" for lean daemons).
	Wire string `json:"wire,omitempty"`
	// Pool is the stdio Bus pool id, for bus targets.
	Pool string `json:"pool,omitempty"`
	// Source names the source (SrcSocketDir, SrcEnv, ...).
	Source string `json:"source"`
	// Detail says where exactly ("BEARDOG_SOCKET", a manifest path, a
	// registry's endpoint, a pid).
	Detail string `json:"detail,omitempty"`
	// Capabilities are capability names a registry or manifest listed.
	Capabilities []string `json:"capabilities,omitempty"`
	// NoProbe means never speak to it (tarpc sidecars, stdio commands the
	// user did not allow, relay-only registrations).
	NoProbe bool `json:"no_probe,omitempty"`
	// Note is a remark for people (a dangling symlink's destination...).
	Note string `json:"note,omitempty"`
	// Warnings are security concerns about the endpoint itself (a socket
	// or socket directory any local user can write).
	Warnings []string `json:"warnings,omitempty"`
}

// Source finds endpoints. Each source is a small type that looks in one
// place; Discover returns what it found now. An error means the source
// could not look (what it found before the error is still returned).
type Source interface {
	// Name identifies the source in Target.Sources and in errors.
	Name() string
	// Discover looks once. It must honour ctx and must not panic on any
	// input it reads.
	Discover(ctx context.Context) ([]Found, error)
}

// SourceRef records one source that found a target, under which name.
type SourceRef struct {
	Source string `json:"source"`
	Name   string `json:"name,omitempty"`
	Detail string `json:"detail,omitempty"`
	// Alias is true when Name is another name for the target (a
	// capability-domain symlink or variable), not its own.
	Alias bool `json:"alias,omitempty"`
}

// State is a target's health as the last probe saw it.
type State string

// Target states.
const (
	// StateUnknown: not probed yet.
	StateUnknown State = "unknown"
	// StateLive: connected and answered health.liveness in time.
	StateLive State = "live"
	// StateStale: connected (or the file exists) but no answer in time.
	StateStale State = "stale"
	// StateDead: nothing is listening (refused, no such socket, dangling link).
	StateDead State = "dead"
	// StateLocked: the peer is alive but demands a BTSP handshake first.
	StateLocked State = "btsp"
	// StateError: it answered, but not in a way primalscope understands.
	StateError State = "error"
	// StateUnprobed: never spoken to by design (tarpc sidecars, stdio
	// commands, relay-only registrations).
	StateUnprobed State = "unprobed"
)

// Target is one thing discovery found: one endpoint (and, for a stdio Bus,
// one pool), with every name and every source that led to it, and the
// result of its last probe. Targets handed out by this package are
// snapshots: they are never modified afterwards, and may be shared.
type Target struct {
	// ID is stable for the same endpoint across sweeps (the resolved socket
	// path, the normalised host:port, plus the pool).
	ID       string       `json:"id"`
	Name     string       `json:"name"`
	Aliases  []string     `json:"aliases,omitempty"`
	Family   string       `json:"family,omitempty"`
	Kind     Kind         `json:"kind"`
	Endpoint ipc.Endpoint `json:"endpoint"`
	// Address is Endpoint as a string ("" when there is nothing to dial).
	Address string `json:"address,omitempty"`
	// Paths lists every path that leads to the socket (the file and its
	// symlinks), when it is a Unix socket.
	Paths []string `json:"paths,omitempty"`
	Pool  string   `json:"pool,omitempty"`
	// WireHint is the wire sources asked for ("" means detect).
	WireHint string      `json:"wire_hint,omitempty"`
	Sources  []SourceRef `json:"sources"`
	// Capabilities are capability names registries or manifests listed.
	Capabilities []string `json:"capabilities,omitempty"`
	NoProbe      bool     `json:"no_probe,omitempty"`
	Notes        []string `json:"notes,omitempty"`
	// Warnings are security concerns about how the target is reached
	// (world-writable socket or socket directory).
	Warnings []string `json:"warnings,omitempty"`

	// Probe is the last probe's result (nil before the first).
	Probe *Probe `json:"probe,omitempty"`
	// Level is the Capability Wire Standard level (0–3) the last probe
	// supports; callability of every method is not checked here (see Audit).
	Level int `json:"level"`
}

// State returns the target's health state.
func (t *Target) State() State {
	if t.NoProbe {
		return StateUnprobed
	}
	if t.Probe == nil {
		return StateUnknown
	}
	return t.Probe.State
}

// Names returns the name and every alias.
func (t *Target) Names() []string {
	return append([]string{t.Name}, t.Aliases...)
}

// HasName reports whether s is the target's name, one of its aliases, its
// address or one of its paths.
func (t *Target) HasName(s string) bool {
	if s == "" {
		return false
	}
	if s == t.Name || s == t.ID || s == t.Address {
		return true
	}
	for _, a := range t.Aliases {
		if a == s {
			return true
		}
	}
	for _, p := range t.Paths {
		if p == s {
			return true
		}
	}
	return false
}

// WeakSession says what the BTSP session the target was last probed
// through does not guarantee ("unauthenticated", "cleartext", ...; see
// ipc.SessionSecurity.Weakness); "" when it was authenticated and
// encrypted, or no BTSP was involved.
func (t *Target) WeakSession() string {
	if t.Probe == nil || t.Probe.Session == nil {
		return ""
	}
	return t.Probe.Session.Weakness()
}

// ForeignOwner is who serves the target's socket when it is a local user
// the user does not trust (see Probe.Owner); nil when it is the user's
// own, root's, trusted, or not known.
func (t *Target) ForeignOwner() *ipc.PeerIdentity {
	if t.Probe == nil {
		return nil
	}
	return t.Probe.Owner
}

// OwnerWarning says what a foreign owner means for the user: the probe
// looked, calls are refused until that user is trusted.
func OwnerWarning(o *ipc.PeerIdentity) string {
	return o.Why + ": probed only, calls are refused (exit 5) unless you trust that user (--trust-uid)"
}

// BTSP reports whether the target needs (or says it needs) a BTSP handshake.
func (t *Target) BTSP() bool {
	if t.Probe == nil {
		return false
	}
	return t.Probe.BTSPRequired || t.Probe.Secured
}

// Latency is the liveness round trip of the last probe (0 when none).
func (t *Target) Latency() time.Duration {
	if t.Probe == nil {
		return 0
	}
	return t.Probe.Latency
}

// Wire is the wire the target speaks as far as discovery knows.
func (t *Target) Wire() string {
	if t.Kind == KindTarpc {
		return "tarpc"
	}
	if t.Probe != nil && t.Probe.Wire != "" {
		return t.Probe.Wire
	}
	if t.WireHint != "" {
		return t.WireHint
	}
	return ""
}

// clone returns a deep enough copy for a snapshot.
func (t *Target) clone() *Target {
	c := *t
	c.Aliases = append([]string(nil), t.Aliases...)
	c.Paths = append([]string(nil), t.Paths...)
	c.Sources = append([]SourceRef(nil), t.Sources...)
	c.Capabilities = append([]string(nil), t.Capabilities...)
	c.Notes = append([]string(nil), t.Notes...)
	return &c
}

// EndpointKey returns the identity of an endpoint for merging: a Unix
// socket by its resolved path (symlinks followed), TCP by normalised
// host:port, and the rest by their string form. A stdio Bus pool is a
// separate target: pool is appended when non-empty.
func EndpointKey(ep ipc.Endpoint, pool string) string {
	var k string
	switch ep.Transport {
	case "":
		k = ""
	case ipc.Unix:
		p := ep.Path
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		k = "unix:" + filepath.Clean(p)
	case ipc.TCP:
		k = "tcp:" + normalizeHostPort(ep.Address)
	default:
		k = ep.String()
	}
	if pool != "" && k != "" {
		k += "#pool=" + pool
	}
	return k
}

// keyer computes EndpointKey for many endpoints at once (a sweep's
// sightings): the folders' symbolic links are resolved once a folder, and
// each socket costs one lstat, not one a step of its path
// (filepath.EvalSymlinks: 2,000 sockets at every sweep). The keys are
// EndpointKey's: a socket that is itself a link, or whose path cannot be
// resolved, goes through EvalSymlinks as there. Use one for one pass only
// (folders are not looked at again).
type keyer struct {
	dirs map[string]resolvedDir
	// lstats counts the system calls made (tests).
	lstats int
}

type resolvedDir struct {
	path string
	ok   bool
}

func newKeyer() *keyer { return &keyer{dirs: map[string]resolvedDir{}} }

// key is EndpointKey(ep, pool).
func (k *keyer) key(ep ipc.Endpoint, pool string) string {
	if ep.Transport != ipc.Unix {
		return EndpointKey(ep, pool)
	}
	p := ep.Path
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	p = filepath.Clean(p)
	dir, base := filepath.Split(p)
	var st unix.Stat_t
	k.lstats++
	if base == "" || unix.Lstat(p, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return EndpointKey(ep, pool) // missing (kept as is) or a link: as EndpointKey does
	}
	rd, seen := k.dirs[dir]
	if !seen {
		r, err := filepath.EvalSymlinks(dir)
		rd = resolvedDir{path: r, ok: err == nil}
		k.dirs[dir] = rd
	}
	if !rd.ok {
		return EndpointKey(ep, pool)
	}
	key := "unix:" + filepath.Join(rd.path, base)
	if pool != "" {
		key += "#pool=" + pool
	}
	return key
}

func normalizeHostPort(a string) string {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return strings.ToLower(a)
	}
	h = strings.ToLower(h)
	switch h {
	case "localhost", "", "0.0.0.0":
		h = "127.0.0.1"
	case "::", "ip6-localhost":
		h = "::1"
	}
	return net.JoinHostPort(h, p)
}

// merge folds sightings into targets: one target per endpoint key, and
// sightings with no endpoint joined to a target of the same name (or kept as
// their own target). The result is sorted by name then ID.
func merge(found []Found) []*Target {
	keys := newKeyer()
	byKey := map[string]*Target{}
	foundBy := map[string][]Found{}
	var order []*Target
	var loose []Found
	for _, f := range found {
		k := keys.key(f.Endpoint, f.Pool)
		if k == "" {
			loose = append(loose, f)
			continue
		}
		t := byKey[k]
		if t == nil {
			t = &Target{ID: k, Endpoint: f.Endpoint, Pool: f.Pool, Kind: KindPrimal}
			byKey[k] = t
			order = append(order, t)
		}
		foundBy[k] = append(foundBy[k], f)
		addFound(t, f)
	}
	order = foldBusSockets(order, byKey, foundBy, keys)
	for _, f := range loose {
		var into *Target
		for _, t := range order {
			if f.Name != "" && hasSourceName(t, f.Name) {
				if into == nil || into.Endpoint.Transport == "" && t.Endpoint.Transport != "" {
					into = t // a target with an endpoint wins
				}
			}
		}
		if into == nil {
			into = &Target{ID: "name:" + f.Source + ":" + f.Name, Kind: KindPrimal}
			byKey[into.ID] = into
			order = append(order, into)
		}
		addFound(into, f)
		if into.Endpoint.Transport == "" {
			into.NoProbe = true
		}
	}
	for _, t := range order {
		finish(t)
	}
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].Name != order[j].Name {
			return order[i].Name < order[j].Name
		}
		return order[i].ID < order[j].ID
	})
	return order
}

// foldBusSockets folds a bus socket seen without a pool (the socket
// directory lists every socket) into the targets of its pools: a bus with
// pools drops a message that names none, so on its own it could only ever
// look stale. Its names become aliases of each pool target.
func foldBusSockets(order []*Target, byKey map[string]*Target, foundBy map[string][]Found, keys *keyer) []*Target {
	pools := map[string][]*Target{}
	for _, t := range order {
		if t.Pool != "" {
			k := keys.key(t.Endpoint, "")
			pools[k] = append(pools[k], t)
		}
	}
	if len(pools) == 0 {
		return order
	}
	kept := order[:0]
	for _, t := range order {
		k := keys.key(t.Endpoint, "")
		if t.Pool != "" || len(pools[k]) == 0 || byKey[k] != t {
			kept = append(kept, t)
			continue
		}
		for _, p := range pools[k] {
			for _, f := range foundBy[k] {
				f.Alias = true
				f.Pool = p.Pool
				addFound(p, f)
			}
		}
		delete(byKey, k)
	}
	return kept
}

// hasSourceName reports whether a source calls t by name n (its own
// name, not an alias).
func hasSourceName(t *Target, n string) bool {
	for _, s := range t.Sources {
		if s.Name == n && !s.Alias {
			return true
		}
	}
	return false
}

var kindRank = map[Kind]int{KindPrimal: 0, KindLean: 1, KindBus: 2, KindRemote: 3, KindRegistry: 4, KindNeural: 5, KindTarpc: 6}

func addFound(t *Target, f Found) {
	ref := SourceRef{Source: f.Source, Name: f.Name, Detail: f.Detail, Alias: f.Alias}
	dup := false
	for _, s := range t.Sources {
		if s == ref {
			dup = true
			break
		}
	}
	if !dup {
		t.Sources = append(t.Sources, ref)
	}
	if f.Endpoint.Transport == ipc.Unix {
		p := filepath.Clean(f.Endpoint.Path)
		if !contains(t.Paths, p) {
			t.Paths = append(t.Paths, p)
		}
		// Prefer the real file over a symlink as the endpoint shown.
		if !f.Alias && f.Source == SrcSocketDir {
			t.Endpoint = f.Endpoint
		}
	} else if t.Endpoint.Transport == "" && f.Endpoint.Transport != "" {
		t.Endpoint = f.Endpoint
	}
	if f.Kind != "" && kindRank[f.Kind] > kindRank[t.Kind] {
		t.Kind = f.Kind
	}
	if f.Family != "" && t.Family == "" {
		t.Family = f.Family
	}
	if f.Wire != "" && t.WireHint == "" {
		t.WireHint = f.Wire
	}
	loose := f.Endpoint.Transport == "" && t.Endpoint.Transport != ""
	if f.NoProbe && !loose {
		t.NoProbe = true
	}
	for _, w := range f.Warnings {
		if !contains(t.Warnings, w) {
			t.Warnings = append(t.Warnings, w)
		}
	}
	if f.Note != "" && !loose && !contains(t.Notes, f.Note) {
		t.Notes = append(t.Notes, f.Note)
	}
	for _, c := range f.Capabilities {
		if !contains(t.Capabilities, c) && len(t.Capabilities) < 1024 {
			t.Capabilities = append(t.Capabilities, c)
		}
	}
}

// sourceRank orders sources by how much their name says about the primal
// itself: a socket file's own name beats a registry id, which beats an env
// variable's name.
var sourceRank = map[string]int{
	SrcConfig: 0, SrcSocketDir: 1, SrcSongbird: 2, SrcNeural: 3, SrcManifest: 4,
	SrcRegistry: 5, SrcLean: 6, SrcProc: 7, SrcPeers: 8, SrcEnv: 9, SrcCommandLine: 10, SrcSymlink: 11,
}

// finish picks the name and aliases from the sources' names.
func finish(t *Target) {
	type cand struct {
		name  string
		rank  int
		alias bool
	}
	var cs []cand
	for _, s := range t.Sources {
		if s.Name == "" {
			continue
		}
		alias := s.Alias || s.Source == SrcSymlink
		r, ok := sourceRank[s.Source]
		if !ok {
			r = 20
		}
		cs = append(cs, cand{s.Name, r, alias})
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].alias != cs[j].alias {
			return !cs[i].alias
		}
		return cs[i].rank < cs[j].rank
	})
	t.Name, t.Aliases = "", nil
	for _, c := range cs {
		if t.Name == "" {
			t.Name = c.name
			continue
		}
		if c.name != t.Name && !contains(t.Aliases, c.name) {
			t.Aliases = append(t.Aliases, c.name)
		}
	}
	if t.Name == "" {
		t.Name = fallbackName(t)
	}
	sort.Strings(t.Aliases)
	sort.Slice(t.Sources, func(i, j int) bool {
		a, b := t.Sources[i], t.Sources[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Detail < b.Detail
	})
	sort.Strings(t.Paths)
	sort.Strings(t.Capabilities)
	if t.Endpoint.Transport != "" {
		t.Address = t.Endpoint.String()
	}
}

func fallbackName(t *Target) string {
	switch t.Endpoint.Transport {
	case ipc.Unix:
		n := strings.TrimSuffix(filepath.Base(t.Endpoint.Path), ".sock")
		if n == "" || n == "." || n == ".." || n == "/" {
			return t.Endpoint.Path // never a name that is a directory (`call ..`)
		}
		return n
	case ipc.TCP:
		return t.Endpoint.Address
	case "":
		return "?"
	}
	return t.Endpoint.String()
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
