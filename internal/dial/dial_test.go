package dial_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func TestMain(m *testing.M) {
	ipctest.WorkerMain() // the demo's stdio Bus workers are this binary
	os.Exit(m.Run())
}

func ecosystem(t *testing.T) *demo.Ecosystem {
	t.Helper()
	eco, err := demo.Start(context.Background(), demo.Options{Dir: t.TempDir(), Tick: time.Hour, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eco.Close() })
	return eco
}

// discoverer is what ls runs over the demo's directory (the process table
// included: it names the bus pools).
func discoverer(eco *demo.Ecosystem, sec ipc.Security) *discovery.Discoverer {
	return discovery.New(discovery.Options{
		Getenv: func(string) string { return "" }, SocketDirs: []string{eco.Dir},
		Probe: discovery.ProbeOptions{Security: sec, StaleTimeout: 2 * time.Second},
	})
}

func newDialer(t *testing.T, s dial.Settings) *dial.Dialer {
	t.Helper()
	if s.Getenv == nil {
		s.Getenv = func(string) string { return "" }
	}
	d, err := dial.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestEveryListedNameDials: every name discovery lists (what ls prints in
// its NAME column) resolves to the target it names, with its pool, and
// that target answers through the dialer: stdio Bus pools (stdiobus/echo),
// a lean daemon in a subdirectory, names only Songbird knows, capability
// symlinks, family-scoped names with the family's seed.
func TestEveryListedNameDials(t *testing.T) {
	eco := ecosystem(t)
	sec := ipc.Security{Seed: ipc.NewSeed(eco.Seed()), Family: eco.Family, Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}
	disc := discoverer(eco, sec)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snap, err := disc.Sweep(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := newDialer(t, dial.Settings{SocketDirs: []string{eco.Dir}, Security: sec, Lookup: disc.Lookup})
	names := map[string]int{}
	for _, dt := range snap.Targets {
		names[dt.Name]++
	}
	pools := 0
	for _, dt := range snap.Targets {
		if dt.Kind == discovery.KindTarpc || dt.NoProbe || dt.Endpoint.Transport == "" {
			continue
		}
		if dt.Endpoint.Transport == ipc.Unix && !strings.HasPrefix(dt.Endpoint.Path, eco.Dir+"/") {
			continue // another process's bus, seen in the process table
		}
		name := dt.Name
		if names[name] > 1 && dt.Family != "" {
			name += "@" + dt.Family // as the TUI shows it: beardog and beardog@<family>
		}
		got, err := d.Resolve(ctx, name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if discovery.EndpointKey(got.Endpoint, got.Pool) != discovery.EndpointKey(dt.Endpoint, dt.Pool) {
			t.Errorf("%s resolves to %s pool %q, listed at %s pool %q", name, got.Endpoint, got.Pool, dt.Endpoint, dt.Pool)
			continue
		}
		if dt.Pool != "" {
			pools++
		}
		if st := dt.State(); st != discovery.StateLive && st != discovery.StateLocked || dt.Wire() == discovery.WireHTTP {
			continue // stale, coming and going, HTTP: resolving is what is asked of them
		}
		c, err := d.Dial(ctx, got, dial.Options{})
		if err != nil {
			t.Errorf("dial %s: %v", name, err)
			continue
		}
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		resp, err := c.Send(cctx, ipc.Request{Method: "health.liveness", Pool: got.Pool})
		ccancel()
		c.Close()
		var re *ipc.RPCError
		if err != nil && !(errors.As(err, &re) && resp != nil) {
			t.Errorf("call %s: %v", name, err)
		}
	}
	if pools < 2 {
		t.Errorf("%d bus pools listed; the demo has two", pools)
	}
}

// TestResolveForms: the TARGET forms the CLI documents, each to its
// endpoint.
// sockets makes listening Unix sockets named names in dir.
func sockets(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
}

func TestResolveForms(t *testing.T) {
	dir := t.TempDir()
	sockets(t, dir, "beardog.sock", "beardog-fam1.sock", "stdiobus.sock", "sub/lean.sock")
	ctx := context.Background()
	d := newDialer(t, dial.Settings{SocketDirs: []string{dir}})
	unix := func(p string) ipc.Endpoint { return ipc.Endpoint{Transport: ipc.Unix, Path: p} }
	for _, tc := range []struct {
		arg    string
		ep     ipc.Endpoint
		pool   string
		family string
	}{
		{arg: "beardog", ep: unix(filepath.Join(dir, "beardog.sock"))},
		{arg: "beardog@fam1", ep: unix(filepath.Join(dir, "beardog-fam1.sock")), family: "fam1"},
		{arg: "beardog-fam1", ep: unix(filepath.Join(dir, "beardog-fam1.sock")), family: "fam1"},
		{arg: "stdiobus/echo", ep: unix(filepath.Join(dir, "stdiobus.sock")), pool: "echo"},
		{arg: "sub/lean.sock", ep: unix(filepath.Join(dir, "sub/lean.sock"))},
		{arg: filepath.Join(dir, "beardog.sock"), ep: unix(filepath.Join(dir, "beardog.sock"))},
		{arg: "unix://" + filepath.Join(dir, "beardog-fam1.sock"), ep: unix(filepath.Join(dir, "beardog-fam1.sock")), family: "fam1"},
		{arg: "tcp://127.0.0.1:9200", ep: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9200"}},
		{arg: "127.0.0.1:9200", ep: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9200"}},
		{arg: "stdio_bus@127.0.0.1:9300/echo", ep: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9300"}, pool: "echo"},
		{arg: "@abstract-x", ep: ipc.Endpoint{Transport: ipc.Abstract, Path: "abstract-x"}},
		{arg: "ws://127.0.0.1:8080/rpc", ep: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:8080/rpc"}},
		{arg: `stdio:"cat -u"`, ep: ipc.Endpoint{Transport: ipc.Stdio, Argv: []string{"cat", "-u"}}},
	} {
		got, err := d.Resolve(ctx, tc.arg)
		if err != nil {
			t.Errorf("%s: %v", tc.arg, err)
			continue
		}
		if got.Endpoint.String() != tc.ep.String() || got.Pool != tc.pool || got.Family != tc.family {
			t.Errorf("%s: %s pool %q family %q, want %s pool %q family %q", tc.arg, got.Endpoint, got.Pool, got.Family, tc.ep, tc.pool, tc.family)
		}
		// Its Address reads back to the same place from anywhere, without
		// the socket directories.
		again, err := newDialer(t, dial.Settings{}).Resolve(ctx, got.Address())
		if err != nil || again.Endpoint.String() != got.Endpoint.String() || again.Pool != got.Pool {
			t.Errorf("%s: Address %q reads back as %s pool %q (%v)", tc.arg, got.Address(), again.Endpoint, again.Pool, err)
		}
	}
	// A name found nowhere, and a malformed TARGET, say which they are.
	_, err := d.Resolve(ctx, "nosuch")
	var nf *discovery.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "beardog") {
		t.Errorf("nosuch: %v (want a NotFoundError naming what there is)", err)
	}
	// NAME@FAMILY found nowhere is a name not found, not a malformed TARGET.
	if _, err := d.Resolve(ctx, "beardog@fam9"); !errors.As(err, &nf) {
		t.Errorf("beardog@fam9: %v (want a NotFoundError)", err)
	}
	_, err = d.Resolve(ctx, "no such thing")
	var bad *dial.BadTargetError
	if !errors.As(err, &bad) {
		t.Errorf("malformed: %v", err)
	}
	// With a family in use, the family's socket wins for the bare name.
	df := newDialer(t, dial.Settings{SocketDirs: []string{dir}, Family: "fam1"})
	if got, err := df.Resolve(ctx, "beardog"); err != nil || got.Endpoint.Path != filepath.Join(dir, "beardog-fam1.sock") {
		t.Errorf("beardog with family fam1: %v %v", got.Endpoint, err)
	}
}

// TestResolveLookupCut: a name the socket directories do not carry, whose
// lookup in the other sources is cut by the caller's deadline, is not
// reported as found nowhere: it is a LookupTimeoutError wrapping the
// deadline. A lookup that ends in time and finds nothing is a NotFoundError.
func TestResolveLookupCut(t *testing.T) {
	dir := t.TempDir()
	sockets(t, dir, "beardog.sock")
	blocked := func(ctx context.Context, name string) (*discovery.Target, error) {
		<-ctx.Done() // a registry that never answers
		return nil, &discovery.NotFoundError{Name: name}
	}
	d := newDialer(t, dial.Settings{SocketDirs: []string{dir}, Lookup: blocked})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := d.Resolve(ctx, "nosuch")
	var lt *dial.LookupTimeoutError
	var nf *discovery.NotFoundError
	if !errors.As(err, &lt) || errors.As(err, &nf) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "ran out of time") {
		t.Fatalf("a lookup cut by the deadline: %T %v", err, err)
	}
	done := func(_ context.Context, name string) (*discovery.Target, error) {
		return nil, &discovery.NotFoundError{Name: name}
	}
	_, err = newDialer(t, dial.Settings{SocketDirs: []string{dir}, Lookup: done}).Resolve(context.Background(), "nosuch")
	if !errors.As(err, &nf) || errors.As(err, &lt) {
		t.Fatalf("a lookup that ended: %T %v", err, err)
	}
}

// TestOneDecision: the security a target gets depends on the target and
// the run's settings only: a family-scoped name gets FamilyScoped whether
// it comes from discovery (probe not finished: no family, no BTSP flag) or
// from a TARGET string; a BTSP demand is kept; --wire beats what discovery
// saw, and "auto" keeps it.
func TestOneDecision(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "neural-api-westgate.sock")
	sockets(t, dir, filepath.Base(p))
	ctx := context.Background()
	d := newDialer(t, dial.Settings{SocketDirs: []string{dir}})
	byName, err := d.Resolve(ctx, "neural-api")
	if err != nil {
		t.Fatal(err)
	}
	byPath, err := d.Resolve(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	early := dial.Target{Name: "neural-api", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: p}} // what the TUI has before the probe
	for _, tg := range []dial.Target{byName, byPath, early} {
		if !d.Security(tg).FamilyScoped {
			t.Errorf("%+v: not family-scoped", tg)
		}
	}
	if !d.Security(dial.Target{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:1"}, BTSPRequired: true}).RequireBTSP {
		t.Error("a BTSP demand was lost")
	}
	lean := dial.Target{Endpoint: ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:1"}, Wire: "lean"}
	if w := d.Wire(lean); w != ipc.WireLean {
		t.Errorf("auto wire for a lean target: %v", w)
	}
	forced := newDialer(t, dial.Settings{Wire: "jsonrpc"})
	if w := forced.Wire(lean); w != ipc.WireJSONRPC {
		t.Errorf("--wire jsonrpc for a lean target: %v", w)
	}
	if _, err := dial.New(dial.Settings{Wire: "smoke"}); err == nil {
		t.Error("a bad --wire was accepted")
	}
	// A family-scoped socket without a seed is refused before connecting.
	_, err = d.Dial(ctx, byName, dial.Options{})
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) {
		t.Errorf("family-scoped without a seed: %v (want BTSPRequiredError)", err)
	}
}

// TestBTSPThroughTheDialer: the demo's family-scoped Neural API, reached by
// name, by path and as a discovered target, answers through an
// authenticated encrypted session: the dial the TUI and the CLI share.
func TestBTSPThroughTheDialer(t *testing.T) {
	eco := ecosystem(t)
	sec := ipc.Security{Seed: ipc.NewSeed(eco.Seed()), Family: eco.Family, Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d := newDialer(t, dial.Settings{SocketDirs: []string{eco.Dir}, Security: sec})
	path := eco.Path("neural-api-" + eco.Family + ".sock")
	for _, tg := range []dial.Target{
		{Name: "neural-api", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}},
		{Name: "neural-api", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}, Family: eco.Family, BTSPRequired: true, Wire: "jsonrpc"},
	} {
		c, err := d.Dial(ctx, tg, dial.Options{})
		if err != nil {
			t.Fatalf("%+v: %v", tg, err)
		}
		resp, err := c.Call(ctx, "health.liveness", nil)
		ss, ok := c.Session()
		c.Close()
		if err != nil || !strings.Contains(string(resp.Result), `"alive":true`) {
			t.Fatalf("%+v: %v %v", tg, resp, err)
		}
		if !ok || !ss.BTSP || !ss.Encrypted || !ss.Authenticated {
			t.Errorf("%+v: session %+v", tg, ss)
		}
	}
	tg, err := d.Resolve(ctx, "neural-api")
	if err != nil {
		t.Fatalf("resolve by name: %v", err)
	}
	c, err := d.Dial(ctx, tg, dial.Options{})
	if err != nil {
		t.Fatalf("by name: %v", err)
	}
	defer c.Close()
	if ss, ok := c.Session(); !ok || !ss.Authenticated || tg.Family != eco.Family {
		t.Errorf("by name: %+v %+v", ss, tg)
	}
}

// TestInsecureIsAnOption: --insecure reaches the WebSocket dial as an
// option, for one-shot and persistent (the TUI's) connections alike;
// without it a self-signed certificate is refused.
func TestInsecureIsAnOption(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{holon.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		_, _, _ = ws.Read(r.Context())
	}))
	defer ts.Close()
	url := "wss://" + strings.TrimPrefix(ts.URL, "https://") + "/rpc"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ep, err := ipc.ParseEndpoint(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, persistent := range []bool{false, true} {
		strict := newDialer(t, dial.Settings{})
		if c, err := strict.Dial(ctx, dial.Target{Endpoint: ep}, dial.Options{Persistent: persistent}); err == nil {
			c.Close()
			t.Errorf("persistent=%v: a self-signed certificate was accepted without --insecure", persistent)
		}
		loose := newDialer(t, dial.Settings{Insecure: true})
		c, err := loose.Dial(ctx, dial.Target{Endpoint: ep}, dial.Options{Persistent: persistent})
		if err != nil {
			t.Errorf("persistent=%v: --insecure: %v", persistent, err)
			continue
		}
		c.Close()
	}
}
