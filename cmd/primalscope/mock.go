package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/mock"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// maxMockRecordings bounds the calls one mock is built from (newest kept).
const maxMockRecordings = 10_000

type mockFlags struct {
	fromHistory bool
	since       time.Duration
	listen      string
	wire        string
	register    bool
	latency     string
	faults      []string
	ignore      []string
	match       string
	log         string
	speakFirst  bool
	remote      bool
	methods     []string // verify
}

func (a *app) mockCmd() *cobra.Command {
	var f mockFlags
	cmd := &cobra.Command{
		Use:   "mock TARGET",
		Short: "Stand in for a primal: serve what history recorded of it, with faults on demand",
		Long: `Serve a stand-in for TARGET built from its recorded calls (primalscope
history): an answer for every recorded call, and capabilities.list,
identity.get and the health methods as recorded (or made from the recorded
methods). Requests match a recording by method and params, structurally (key
order and spacing never matter; --ignore PATH loosens volatile params;
--match method answers by method alone). Several recordings of one call are
served in sequence (the Nth call gets the Nth answer, then the last again).
The caller's id is always echoed. A request that matches nothing gets
-32601 (method never recorded) or -32602 (params never recorded), and the
nearest recorded params are shown as a diff on stderr and in --log.

The mock goes by the name its target was recorded under (its socket's
name, or for a target known only through a registry the name it was called
by that is no capability of it), whichever call came last; capabilities.list
lists the other names it was called by as aliases.

It listens where TARGET was recorded (a socket nobody answers on is
replaced), or at --listen: a Unix socket path, tcp://HOST:PORT,
ws://HOST:PORT/PATH (Holon-RPC), or stdio (a stdio bus worker on stdin and
stdout); port 0 picks a free port (the endpoint printed has the real one). A target recorded over BTSP is served over BTSP only, with the
seed from $FAMILY_SEED or --family-seed-file. The endpoint is printed alone on
the first line of standard output; Ctrl-C stops the mock and removes its socket
(and, with --register, its registration).

Faults (--fault, repeatable; METHOD may be * or a prefix such as dag.*):
  METHOD=error:CODE[:MESSAGE]  answer this error instead
  METHOD=delay:D               answer D late
  METHOD=drop                  never answer
  METHOD=close                 hang up after reading the request
  METHOD=cut                   hang up in the middle of the answer
  METHOD=garbage               answer a line that is not JSON
each optionally @P% of the time. A call of mock.faults.toggle (the TUI's
key) turns them all off, or on again.

Secrets: history stored them as "[redacted]"; the mock serves the placeholder
as it is (said once on stderr) and never invents a value.`,
		Example: `  primalscope mock ledger
  primalscope mock ledger --listen /tmp/ledger.sock --latency none
  primalscope mock ledger --fault 'ledger.entry.create=error:-32000:busy@25%' --fault '*=delay:200ms'
  primalscope mock ledger --ignore .request_id --register
  primalscope mock verify ledger`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.mock(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.fromHistory, "from-history", true, "build the mock from history (the only source today)")
	fl.DurationVar(&f.since, "since", 0, "only calls recorded within this long (e.g. 24h)")
	fl.StringVar(&f.listen, "listen", "", "where to serve: a socket path, tcp://HOST:PORT, ws://HOST:PORT/PATH or stdio (default: where TARGET was recorded)")
	fl.StringVar(&f.wire, "serve-wire", "", "wire to serve: jsonrpc, lean or holon (default: as recorded)")
	fl.BoolVar(&f.register, "register", false, "register the mock with the Songbird registry (ipc.register) while it runs")
	fl.StringVar(&f.latency, "latency", "recorded", "recorded, none, or xN (recorded times N)")
	fl.StringArrayVar(&f.faults, "fault", nil, "a fault: METHOD=error:CODE:MSG|delay:D|drop|close|cut|garbage[@P%] (repeatable)")
	fl.StringArrayVar(&f.ignore, "ignore", nil, "a params path that never matters to matching, as .request_id or .items[].ts (repeatable)")
	fl.StringVar(&f.match, "match", "params", "params (method and params) or method (method alone)")
	fl.StringVar(&f.log, "log", "", "also write misses and notes to this file")
	fl.BoolVar(&f.speakFirst, "speak-first", false, "a holon mock sends client.v1.Client/Hello first, as go-holons servers do")
	fl.BoolVar(&f.remote, "listen-remote", false, "allow a tcp:// or ws:// --listen address that is not loopback (anyone who reaches it reads the recorded answers and toggles faults)")
	cmd.AddCommand(a.mockVerifyCmd())
	return cmd
}

func (a *app) mockVerifyCmd() *cobra.Command {
	var f mockFlags
	cmd := &cobra.Command{
		Use:   "verify TARGET",
		Short: "Compare what history recorded of TARGET with what it answers today",
		Long: `Send the recorded calls of TARGET that are safe to repeat (read-only in its
capability list or a standard read such as health.* and capabilities.list,
or named with --method) to the real target, and print, per call, the
structural difference between the recording and today's answer (--ignore
paths aside). Each distinct call is sent once. Exit 1 when anything drifted.`,
		Example: `  primalscope mock verify ledger
  primalscope mock verify ledger --method ledger.entry.list --ignore .generated_at`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.mockVerify(cmd.Context(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.since, "since", 0, "only calls recorded within this long")
	fl.StringArrayVar(&f.ignore, "ignore", nil, "a result path whose changes do not count (repeatable)")
	fl.StringArrayVar(&f.methods, "method", nil, "also send recorded calls of this method (repeatable): you vouch it is safe")
	return cmd
}

// recordedCalls reads TARGET's recorded calls: by the name given, or by
// the endpoint it resolves to now; and with them the calls made to the same
// target under another name (a capability symlink such as ai.sock ->
// squirrel.sock: history keeps the name typed and the endpoint it named,
// and the two name one target, endpointIdentity). Nothing recorded is a
// usage error that says what history does have.
func (a *app) recordedCalls(ctx context.Context, arg string, since time.Duration) ([]history.Entry, error) {
	s, err := a.openHistory(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	q := history.Query{Target: arg, Limit: maxMockRecordings, WithResults: true}
	if since > 0 {
		q.Since = time.Now().Add(-since)
	}
	es, err := s.Search(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if len(es) == 0 {
		if t, rerr := a.resolve(ctx, arg); rerr == nil && t.Endpoint.String() != "" {
			q.Target = absEndpoint(t.Endpoint).String()
			if es, err = s.Search(ctx, q); err != nil {
				return nil, fmt.Errorf("history: %w", err)
			}
		}
	}
	if es, err = withAliases(ctx, s, q, es); err != nil {
		return nil, err
	}
	if len(es) > 0 {
		return es, nil
	}
	recent, _ := s.Search(ctx, history.Query{Limit: 1000})
	seen := map[string]int{}
	for _, e := range recent {
		seen[e.Target]++
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) > 20 {
		names = append(names[:20], "…")
	}
	have := "nothing"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return nil, usageErr(fmt.Errorf("history has no calls of %s to serve (it has calls of: %s)", render.Sanitize(arg), render.Sanitize(have)))
}

func (a *app) mock(ctx context.Context, arg string, f mockFlags) error {
	lat, err := mock.ParseLatency(f.latency)
	if err != nil {
		return usageErr(err)
	}
	if f.match != "params" && f.match != "method" {
		return usageErr(fmt.Errorf("--match %q: want params or method", f.match))
	}
	var faults []*mock.Fault
	for _, spec := range f.faults {
		ft, err := mock.ParseFault(spec)
		if err != nil {
			return usageErr(err)
		}
		faults = append(faults, ft)
	}
	entries, err := a.recordedCalls(ctx, arg, f.since)
	if err != nil {
		return err
	}
	newest := entries[0] // Search returns the newest first
	rec, err := recordedAs(arg, entries)
	if err != nil {
		return err
	}
	name, aliases := mockNames(entries)
	newest.Endpoint, newest.Family, newest.Transport = rec.Endpoint, rec.Family, rec.Transport
	var logw io.Writer = a.io.err
	if f.log != "" {
		lf, err := os.OpenFile(f.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return usageErr(fmt.Errorf("--log: %w", err))
		}
		defer lf.Close()
		logw = io.MultiWriter(a.io.err, lf)
	}
	recs := mock.FromHistory(entries)
	m, err := mock.New(recs, mock.Options{Name: name, Aliases: aliases, Ignore: f.ignore, ByMethod: f.match == "method",
		Latency: lat, Faults: faults, Log: logw, BTSPOnly: rec.BTSP})
	if err != nil {
		return usageErr(err)
	}
	l, err := a.mockListen(newest, f)
	if err != nil {
		return err
	}
	if f.listen == "stdio" {
		if err := m.ServeStdio(ctx, a.io.in, a.io.out); err != nil {
			return mockServeErr(arg, f, err)
		}
		return nil
	}
	srv, err := m.Serve(l)
	if err != nil {
		return mockServeErr(arg, f, err)
	}
	if l.Remote && srv.Endpoint.Transport != ipc.Unix {
		fmt.Fprintf(a.io.err, "primalscope: mock: WARNING: --listen-remote: %s may be reachable from other hosts: anyone who reaches it reads the recorded answers and can toggle the faults\n", render.Sanitize(srv.Endpoint.String()))
	}
	defer srv.Close()
	if f.register { // before the endpoint is printed: a script that waits for it finds the mock registered
		unregister, err := a.mockRegister(ctx, name, m.Methods(), srv.Endpoint)
		if err != nil {
			return err
		}
		defer unregister()
	}
	fmt.Fprintln(a.io.out, srv.Endpoint.String())
	btspNote := ""
	if len(l.Seed) > 0 {
		btspNote = ", BTSP only"
	}
	also := ""
	if len(aliases) > 0 {
		also = " (also called " + strings.Join(aliases, ", ") + ")"
	}
	fmt.Fprintf(a.io.err, "primalscope: mock of %s%s: %d recorded call(s) of %d method(s) on %s (%s%s); Ctrl-C stops\n",
		render.Sanitize(name), render.Sanitize(also), len(recs), len(m.Methods()), render.Sanitize(srv.Endpoint.String()), l.Wire, btspNote)
	for _, ft := range faults {
		fmt.Fprintf(a.io.err, "primalscope: mock: fault %s\n", render.Sanitize(ft.Spec))
	}
	<-ctx.Done()
	served, missed := m.Stats()
	fmt.Fprintf(a.io.err, "primalscope: mock of %s stopped: %d answered from recordings, %d matched nothing\n", render.Sanitize(name), served, missed)
	return nil
}

// mockServeErr gives a mock that could not serve its exit code: 5 for a
// BTSP target asked to serve without BTSP, 3 for an address in use, 2 for an
// address off loopback not allowed by --listen-remote.
func mockServeErr(arg string, f mockFlags, err error) error {
	var (
		inUse  *mock.InUseError
		clear  *mock.CleartextError
		remote *mock.RemoteError
	)
	switch {
	case errors.As(err, &clear):
		return &securityError{err: fmt.Errorf("mock %s: %w", render.Sanitize(arg), err)}
	case errors.As(err, &inUse):
		where := "--listen"
		if f.listen == "" {
			where = "where it was recorded"
		}
		return &connectError{err: fmt.Errorf("mock %s %s: %w", render.Sanitize(arg), where, err)}
	case errors.As(err, &remote):
		return usageErr(fmt.Errorf("--listen: %w", err))
	}
	return fmt.Errorf("mock %s: %w", render.Sanitize(arg), err)
}

// recording is how every entry of a mock's history reached its target.
type recording struct {
	Endpoint, Family, Transport string
	// BTSP: some entry was recorded over BTSP, so all are served over it.
	BTSP bool
}

// recordedAs checks that entries were all recorded at one endpoint and in
// one family (a search by name can span several targets, and the mock
// stands in for one): more is a usage error naming them. One entry over
// BTSP makes the whole mock BTSP-only.
func recordedAs(arg string, entries []history.Entry) (recording, error) {
	var rec recording
	// endpoints: one recorded endpoint string per target (endpointIdentity).
	endpoints, families, ids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range entries {
		if id := endpointIdentity(e.Endpoint); e.Endpoint != "" && !ids[id] {
			ids[id] = true
			endpoints[e.Endpoint] = true
		}
		if e.Family != "" {
			families[e.Family] = true
		}
		if strings.Contains(e.Transport, "btsp") && !rec.BTSP {
			rec.BTSP, rec.Transport = true, e.Transport
		}
	}
	for what, set := range map[string]map[string]bool{"endpoints": endpoints, "families": families} {
		if len(set) > 1 {
			names := make([]string, 0, len(set))
			for n := range set {
				names = append(names, n)
			}
			sort.Strings(names)
			if len(names) > 10 {
				names = append(names[:10], "…")
			}
			return rec, usageErr(fmt.Errorf("the calls recorded of %s span %d %s (%s): the mock stands in for one; give that one's endpoint, or --since to keep only the recent ones",
				render.Sanitize(arg), len(set), what, render.Sanitize(strings.Join(names, ", "))))
		}
	}
	for _, e := range entries { // the newest call's, the socket itself
		if e.Endpoint != "" {
			rec.Endpoint = canonicalEndpoint(e.Endpoint)
			break
		}
	}
	for fam := range families {
		rec.Family = fam
	}
	if !rec.BTSP {
		rec.Transport = entries[0].Transport
	}
	return rec, nil
}

// withAliases adds to es (TARGET's calls, found by its name or endpoint,
// newest first) the calls recorded at other endpoints that are the same
// target (endpointIdentity: a symlink to its socket), in the same stdio
// bus pools; newest first, at most maxMockRecordings.
func withAliases(ctx context.Context, s *history.Store, q history.Query, es []history.Entry) ([]history.Entry, error) {
	if len(es) == 0 {
		return es, nil
	}
	targets, pools, seen := map[string]bool{}, map[string]bool{}, map[int64]bool{}
	for _, e := range es {
		targets[endpointIdentity(e.Endpoint)] = true
		pools[e.Pool] = true
		seen[e.ID] = true
	}
	eps, err := s.Endpoints(ctx, q.Since, maxMockEndpoints)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	added := false
	for _, ep := range eps {
		if ep == q.Target || !targets[endpointIdentity(ep)] {
			continue
		}
		aq := q
		aq.Target = ep
		more, err := s.Search(ctx, aq)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		for _, e := range more {
			if !seen[e.ID] && pools[e.Pool] && targets[endpointIdentity(e.Endpoint)] {
				seen[e.ID] = true
				es = append(es, e)
				added = true
			}
		}
	}
	if added {
		sort.SliceStable(es, func(i, j int) bool { return es[i].ID > es[j].ID })
		if len(es) > maxMockRecordings {
			es = es[:maxMockRecordings]
		}
	}
	return es, nil
}

// maxMockEndpoints bounds the distinct recorded endpoints looked through
// for a target's other names.
const maxMockEndpoints = 4096

// endpointIdentity is the target a recorded endpoint names, as discovery
// merges names (discovery.EndpointKey: a Unix socket by its path, symlinks
// followed; TCP by normalised host:port), a symlink whose socket is gone
// followed too (canonicalEndpoint): ai.sock -> squirrel.sock is squirrel
// whether or not squirrel still runs.
func endpointIdentity(s string) string {
	if s == "" {
		return ""
	}
	ep, err := ipc.ParseEndpoint(canonicalEndpoint(s))
	if err != nil {
		return s
	}
	return discovery.EndpointKey(ep, "")
}

// canonicalEndpoint is a recorded endpoint with a Unix socket's symlinks
// followed (the socket it names, there or not, in its directory's real
// path): where the target itself lives. Other endpoints are as recorded.
func canonicalEndpoint(s string) string {
	ep, err := ipc.ParseEndpoint(s)
	if err != nil || ep.Transport != ipc.Unix {
		return s
	}
	p, err := filepath.Abs(ep.Path)
	if err != nil {
		return s
	}
	for i := 0; i < 8; i++ { // a chain of links, bounded
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		dest, err := os.Readlink(p)
		if err != nil {
			break
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(p), dest)
		}
		p = filepath.Clean(dest)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(dir, filepath.Base(p))
	}
	if p == ep.Path {
		return s
	}
	return ipc.Endpoint{Transport: ipc.Unix, Path: p}.String()
}

// mockNames names the target entries are calls of from the names it was
// recorded under, whichever call came last (one history, one name, in
// whatever order its calls were made): the name it goes by, and the others
// it was called by (its aliases), sorted.
//
// The names are the recorded TARGETs that are names (an address names
// nothing, but a Unix socket's file names its primal) and the file name of
// the socket the calls reached, links followed. The target goes by, first,
// a name its socket's file is named after (squirrel for squirrel.sock
// reached through ai.sock; beardog for beardog-<family>.sock); else a name
// that is no domain of its recorded methods: a target known only through
// the registry, over TCP, was called by its registered name (toadstool)
// and by the capabilities the registry also finds it by (compute, the
// domain of compute.status), and goes by the first; the first in byte
// order among equals. It went by the newest call's TARGET: a mock of
// toadstool whose last call was `call compute ...` registered and listed
// itself as compute.
func mockNames(entries []history.Entry) (name string, aliases []string) {
	domains := map[string]bool{}
	rank := map[string]int{}
	var sockets []string
	for _, e := range entries {
		if d, _, ok := strings.Cut(e.Method, "."); ok {
			domains[d] = true
		}
		if ep, err := ipc.ParseEndpoint(canonicalEndpoint(e.Endpoint)); err == nil && ep.Transport == ipc.Unix {
			base := strings.TrimSuffix(filepath.Base(ep.Path), ".sock")
			sockets = append(sockets, base)
			rank[base] = 0
		}
	}
	for _, e := range entries {
		if n := recordedName(e.Target); n != "" {
			if _, seen := rank[n]; !seen {
				rank[n] = 2
			}
		}
	}
	for n := range rank {
		switch {
		case rank[n] == 0:
		case slices.ContainsFunc(sockets, func(base string) bool { return strings.HasPrefix(base, n+"-") }):
			rank[n] = 0 // NAME-<family>.sock
		case !domains[n]:
			rank[n] = 1
		}
	}
	names := make([]string, 0, len(rank))
	for n := range rank {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if rank[names[i]] != rank[names[j]] {
			return rank[names[i]] < rank[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) == 0 { // only addresses: the target's own (one endpoint a mock)
		for _, e := range entries {
			if e.Endpoint != "" {
				n := e.Endpoint
				if i := strings.LastIndexByte(n, '/'); i >= 0 {
					n = n[i+1:]
				}
				if n != "" {
					return n, nil
				}
			}
		}
		return "mock", nil
	}
	return names[0], names[1:]
}

// recordedName is the name a recorded TARGET calls its primal: a name as
// typed (NAME of NAME@FAMILY), a Unix socket's file name without .sock, the
// pool of BUS/POOL; "" for other addresses (tcp://, ws://, stdio:...).
func recordedName(target string) string {
	if ep, err := ipc.ParseEndpoint(target); err == nil && ep.Transport != ipc.Unix {
		return ""
	}
	n := target
	if i := strings.LastIndexByte(n, '/'); i >= 0 {
		n = n[i+1:]
	}
	n = strings.TrimSuffix(n, ".sock")
	if i := strings.IndexByte(n, '@'); i > 0 {
		n = n[:i]
	}
	return n
}

// mockListen decides where and how the mock serves: --listen and
// --serve-wire, else as TARGET was recorded (its endpoint, its wire, BTSP
// when it was reached over BTSP).
func (a *app) mockListen(e history.Entry, f mockFlags) (mock.Listen, error) {
	l := mock.Listen{Wire: mock.Wire(e.Wire), SpeakFirst: f.speakFirst}
	if l.Wire == "" {
		l.Wire = mock.WireJSONRPC
	}
	addr := e.Endpoint
	if f.listen != "" && f.listen != "stdio" {
		addr = f.listen
	}
	if f.listen != "stdio" {
		ep, err := ipc.ParseListenEndpoint(addr)
		if err != nil {
			return l, usageErr(fmt.Errorf("--listen %q: %w", addr, err))
		}
		l.Endpoint = ep
		if ep.Transport == ipc.WS {
			l.Wire = mock.WireHolon
		} else if l.Wire == mock.WireHolon {
			l.Wire = mock.WireJSONRPC
		}
	}
	if f.wire != "" {
		switch mock.Wire(f.wire) {
		case mock.WireJSONRPC, mock.WireLean, mock.WireHolon:
			l.Wire = mock.Wire(f.wire)
		default:
			return l, usageErr(fmt.Errorf("--serve-wire %q: want jsonrpc, lean or holon", f.wire))
		}
	}
	if f.listen == "stdio" && strings.Contains(e.Transport, "btsp") {
		return l, &securityError{err: fmt.Errorf("%s was recorded over BTSP: the mock serves it over BTSP only, and a stdio bus has no BTSP", render.Sanitize(e.Target))}
	}
	l.Remote = f.remote
	if strings.Contains(e.Transport, "btsp") {
		// The seed of the recorded target's family, by the one rule the
		// client uses (ipc.Security.SeedFor): FAMILY_SEED and
		// --family-seed-file belong to --family/FAMILY_ID, another
		// family's seed comes from the config's [families.<id>].
		sec, err := a.security()
		if err != nil {
			return l, err
		}
		sec.TargetFamily = e.Family
		seed, fam, ok := sec.SeedFor(l.Endpoint)
		if !ok || seed.IsZero() {
			return l, &securityError{err: fmt.Errorf("%s was recorded over BTSP: the mock serves it over BTSP only, and needs the seed of family %q ($FAMILY_SEED with FAMILY_ID=%s, --family-seed-file, or [families.%s] seed_file in the config)",
				render.Sanitize(e.Target), render.Sanitize(fam), render.Sanitize(fam), render.Sanitize(fam))}
		}
		l.Seed = seed.ServerKey()
	}
	return l, nil
}

// mockRegister registers the mock with the Songbird registry found by name,
// and returns how to take the registration back (where the registry
// allows: ipc.unregister).
func (a *app) mockRegister(ctx context.Context, name string, methods []string, ep ipc.Endpoint) (func(), error) {
	conn, t, err := a.dial(ctx, "songbird", nil)
	if err != nil {
		return nil, fmt.Errorf("--register: the registry: %w", err)
	}
	domains := map[string]bool{}
	for _, m := range methods {
		if d, _, ok := strings.Cut(m, "."); ok && !standardDomains[d] {
			domains[d] = true
		}
	}
	caps := make([]string, 0, len(domains))
	for d := range domains {
		caps = append(caps, d)
	}
	sort.Strings(caps)
	rctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	// Never take a live primal's place: if the registry has NAME at another
	// endpoint that answers, registering the mock would send the rest of
	// the composition (and what it signs, stores or spends) to the mock.
	if live := registeredLive(rctx, conn, name, ep); live != "" {
		conn.Close()
		return nil, usageErr(fmt.Errorf("--register: %s is registered with %s at %s, which answers: the mock would take its place; stop it first, or run the mock without --register",
			render.Sanitize(name), render.Sanitize(t.Name), render.Sanitize(live)))
	}
	if len(caps) == 0 {
		fmt.Fprintf(a.io.err, "primalscope: mock: warning: no capability to register %s under (its recorded methods are all standard ones): found by name only\n", render.Sanitize(name))
	}
	params, _ := json.Marshal(map[string]any{"primal_id": name, "capabilities": caps, "endpoint": ep.String()})
	if _, err := conn.Send(rctx, ipc.Request{Method: "ipc.register", Params: params}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("--register with %s: %w", render.Sanitize(t.Name), err)
	}
	fmt.Fprintf(a.io.err, "primalscope: mock: registered %s with %s (capabilities %s)\n", render.Sanitize(name), render.Sanitize(t.Name), strings.Join(caps, ", "))
	return func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		up, _ := json.Marshal(map[string]any{"primal_id": name})
		if _, err := conn.Send(uctx, ipc.Request{Method: "ipc.unregister", Params: up}); err != nil {
			fmt.Fprintf(a.io.err, "primalscope: mock: %s keeps the registration (ipc.unregister: %s)\n", render.Sanitize(t.Name), render.Sanitize(err.Error()))
		}
		conn.Close()
	}, nil
}

// registeredLive returns the endpoint the registry has for name when it is
// not ep and something answers there (a connect within 300 ms), else "".
func registeredLive(ctx context.Context, conn *ipc.Conn, name string, ep ipc.Endpoint) string {
	params, _ := json.Marshal(map[string]any{"primal_id": name})
	resp, err := conn.Send(ctx, ipc.Request{Method: "ipc.resolve", Params: params})
	if err != nil {
		return "" // not registered (or the registry cannot say)
	}
	var r struct {
		Native string `json:"native_endpoint"`
		Socket string `json:"socket"`
	}
	if json.Unmarshal(resp.Result, &r) != nil {
		return ""
	}
	addr := r.Native
	if addr == "" {
		addr = r.Socket
	}
	other, err := ipc.ParseEndpoint(addr)
	if err != nil || other.String() == ep.String() {
		return ""
	}
	network, where := "", ""
	switch other.Transport {
	case ipc.Unix:
		network, where = "unix", other.Path
	case ipc.TCP:
		network, where = "tcp", other.Address
	default:
		return ""
	}
	c, err := (&net.Dialer{Timeout: 300 * time.Millisecond}).DialContext(ctx, network, where)
	if err != nil {
		return ""
	}
	c.Close()
	return other.String()
}

// standardDomains are the methods every primal has, not a capability.
var standardDomains = map[string]bool{"health": true, "capabilities": true, "capability": true, "identity": true, "rpc": true, "mock": true}

// standardReads are methods the standards define as reads: safe to send
// again to compare.
var standardReads = map[string]bool{
	"health.liveness": true, "health.readiness": true, "health.check": true,
	"capabilities.list": true, "identity.get": true, "ipc.list": true,
	"lifecycle.status": true, "topology.get": true, "graph.list": true,
}

func (a *app) mockVerify(ctx context.Context, arg string, f mockFlags) error {
	for _, p := range f.ignore {
		if !history.ValidPath(p) {
			return usageErr(fmt.Errorf("--ignore %q: not a path such as .a.b or .items[].id", p))
		}
	}
	entries, err := a.recordedCalls(ctx, arg, f.since)
	if err != nil {
		return err
	}
	// One target, as the mock: recordings of two are not compared with
	// the answers of one of them.
	if _, err := recordedAs(arg, entries); err != nil {
		return err
	}
	conn, t, err := a.dial(ctx, arg, nil)
	if err != nil {
		return err
	}
	defer closeConn(ctx, conn)
	named := map[string]bool{}
	for _, m := range f.methods {
		named[m] = true
	}
	readOnly := map[string]bool{}
	if resp, err := conn.Send(ctx, ipc.Request{Method: "capabilities.list", Pool: t.Pool}); err == nil {
		if caps, err := capability.Parse(resp.Result); err == nil {
			for m, info := range caps.MethodInfo {
				if string(info.Extra["read_only"]) == "true" || string(info.Extra["idempotent"]) == "true" {
					readOnly[m] = true
				}
			}
		}
	}
	// The newest recording of each distinct call, sent once.
	type call struct {
		e history.Entry
	}
	seen := map[string]bool{}
	var calls []call
	skipped := map[string]int{}
	for _, e := range entries {
		if e.Outcome != history.OutcomeOK || e.Truncated || e.ParamsTruncated || history.HasRedacted(e.Params) {
			continue
		}
		if !(standardReads[e.Method] || readOnly[e.Method] || named[e.Method]) {
			skipped[e.Method]++
			continue
		}
		p := string(e.Params)
		if history.NoParams(e.Params) {
			p = "" // left out, null, {} and []: one call (as the mock matches them)
		}
		k := e.Method + "\x00" + p
		if seen[k] {
			continue
		}
		seen[k] = true
		calls = append(calls, call{e})
	}
	drifted := 0
	for _, c := range calls {
		resp, err := conn.Send(ctx, ipc.Request{Method: c.e.Method, Params: c.e.Params, Pool: t.Pool, SessionID: c.e.Session})
		label := c.e.Method + " " + string(orEmpty(c.e.Params))
		if err != nil && exitCode(err) == exitSecurity {
			// A refusal for security is not drift: it says nothing of
			// what the target answers, and it must not read as a diff.
			return &securityError{err: fmt.Errorf("verify %s: %s refused for security: %w", render.Sanitize(c.e.Method), render.Sanitize(t.Name), err)}
		}
		if err != nil {
			drifted++
			fmt.Fprintf(a.io.out, "✗ %s: %s\n", render.Sanitize(label), render.Sanitize(err.Error()))
			continue
		}
		changes, err := history.Match(c.e.Result, resp.Result, f.ignore)
		if err != nil {
			return fmt.Errorf("verify %s: %w", c.e.Method, err)
		}
		changes = verifyChanges(changes)
		if len(changes) == 0 {
			fmt.Fprintf(a.io.out, "✓ %s: as recorded\n", render.Sanitize(label))
			continue
		}
		drifted++
		fmt.Fprintf(a.io.out, "✗ %s: %d field(s) drifted\n", render.Sanitize(label), len(changes))
		var b strings.Builder
		_ = history.FormatDiff(&b, changes, history.DiffFormat{})
		for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
			fmt.Fprintf(a.io.out, "    %s\n", line)
		}
	}
	if len(skipped) > 0 {
		var ms []string
		for m := range skipped {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		fmt.Fprintf(a.io.err, "primalscope: not sent (not read-only; name one with --method if it is safe to repeat): %s\n", render.Sanitize(strings.Join(ms, ", ")))
	}
	if drifted > 0 {
		return &quietError{code: exitPeer, err: fmt.Errorf("%d call(s) drifted", drifted)}
	}
	fmt.Fprintf(a.io.err, "primalscope: %d call(s) answered as recorded\n", len(calls))
	return nil
}

// verifyChanges keeps the drift that says something: a recorded
// "[redacted]" was a secret whose value history never kept, so today's
// value there is no drift; and a value under a secret-looking key is shown
// as [redacted], whatever the target answers today.
func verifyChanges(changes []history.Change) []history.Change {
	redacted := json.RawMessage(`"` + history.Redacted + `"`)
	kept := changes[:0]
	for _, c := range changes {
		if c.Kind == history.Changed && string(c.Old) == string(redacted) {
			continue
		}
		if history.SecretPath(c.Path) {
			if c.Old != nil {
				c.Old = redacted
			}
			if c.New != nil {
				c.New = redacted
			}
		}
		kept = append(kept, c)
	}
	return kept
}

func orEmpty(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("")
	}
	return b
}
