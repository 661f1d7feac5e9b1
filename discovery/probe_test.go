package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func unixEP(p string) ipc.Endpoint { return ipc.Endpoint{Transport: ipc.Unix, Path: p} }

func TestProbeLiveFull(t *testing.T) {
	dir := tempDir(t)
	p := primal("rhizocrypt", true)
	p.Sign, p.NodeID = true, "n1"
	serve(t, dir, "rhizocrypt.sock", p.Config())
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 2 * time.Second})
	r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "rhizocrypt.sock")), Full: true})
	if r.State != StateLive || r.Err != "" {
		t.Fatalf("%+v", r)
	}
	if r.Wire != "jsonrpc" || r.Liveness == nil || !r.Liveness.Alive {
		t.Errorf("liveness: %+v", r)
	}
	if r.Identity == nil || r.Identity.Primal != "rhizocrypt" || r.Identity.Method != capability.MethodIdentityGet {
		t.Errorf("identity: %+v", r.Identity)
	}
	if r.Capabilities == nil || r.CapsMethod != "capabilities.list" || len(r.Capabilities.Methods) == 0 {
		t.Errorf("caps: %+v", r.Capabilities)
	}
	if r.Capabilities.Signature.State != capability.Verified {
		t.Errorf("signature: %+v", r.Capabilities.Signature)
	}
	for _, m := range []string{"health.liveness", "health.check", "health.readiness"} {
		if !r.Calls[m].OK {
			t.Errorf("%s: %+v", m, r.Calls[m])
		}
	}
	tg := &Target{Name: "rhizocrypt", Endpoint: unixEP(""), Probe: &r}
	if rep := Audit(tg, AuditOptions{}); rep.Level != 3 {
		t.Errorf("level %d: %+v", rep.Level, rep.Points)
	}
}

func TestProbeFallbacks(t *testing.T) {
	dir := tempDir(t)
	p := primal("oldone", false)
	p.IdentityOnly = true
	p.Format = ipctest.FormatE
	cfg := p.Config()
	cfg.Methods["capability.list"] = cfg.Methods["capabilities.list"]
	delete(cfg.Methods, "capabilities.list")
	serve(t, dir, "old.sock", cfg)
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "old.sock")), Full: true})
	if r.State != StateLive {
		t.Fatalf("%+v", r)
	}
	if r.Identity == nil || r.Identity.Method != capability.MethodIdentity {
		t.Errorf("identity fallback: %+v", r.Identity)
	}
	if r.CapsMethod != "capability.list" || r.Capabilities.Format != capability.FormatE {
		t.Errorf("caps fallback: %q %+v", r.CapsMethod, r.Capabilities)
	}
	rep := Audit(&Target{Name: "oldone", Probe: &r}, AuditOptions{})
	if rep.Level != 1 {
		t.Errorf("level %d", rep.Level)
	}
	fails := map[string]bool{}
	for _, pt := range rep.Points {
		if pt.Result == Fail {
			fails[pt.ID] = true
		}
	}
	for _, id := range []string{"l2.methods", "l2.identity"} {
		if !fails[id] {
			t.Errorf("%s did not fail: %+v", id, rep.Points)
		}
	}
}

func TestProbeStaleDeadGarbage(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "silent.sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	serve(t, dir, "garbage.sock", ipctest.Config{Behavior: ipctest.Behavior{Garbage: true}})
	serve(t, dir, "closer.sock", ipctest.Config{Behavior: ipctest.Behavior{CloseMidLine: true}})
	staleFile(t, filepath.Join(dir, "dead.sock"))
	os.WriteFile(filepath.Join(dir, "file.sock"), nil, 0o600)
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second})
	ctx := ctxT(t)
	cases := map[string]State{
		"silent.sock": StateStale, "garbage.sock": StateError, "closer.sock": StateError,
		"dead.sock": StateDead, "file.sock": StateDead, "missing.sock": StateDead,
	}
	for name, want := range cases {
		r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, name)), Full: true})
		if r.State != want {
			t.Errorf("%s: state %s (%s), want %s", name, r.State, r.Err, want)
		}
		if r.Err == "" {
			t.Errorf("%s: no reason given", name)
		}
	}
	if r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "garbage.sock"))}); !strings.Contains(r.Err, "not JSON-RPC") {
		t.Errorf("garbage reason: %q", r.Err)
	}
}

func TestProbeBTSP(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "b1.sock", ipctest.Config{Behavior: ipctest.Behavior{
		OnConnect: []byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"BTSP handshake required","data":{"btsp_version":"2.0"}},"id":null}` + "\n")}})
	// A peer that answers the first call with the refusal.
	serve(t, dir, "b2.sock", ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"health.liveness": ipctest.Error(-32600, "BTSP handshake required"),
	}})
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second})
	for _, n := range []string{"b1.sock", "b2.sock"} {
		r := pr.Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, n)), Full: true})
		if r.State != StateLocked || !r.BTSPRequired || r.BTSPRejection == nil {
			t.Errorf("%s: %+v", n, r)
		}
		rep := Audit(&Target{Name: n, Probe: &r, Family: "f"}, AuditOptions{})
		found := false
		for _, p := range rep.Points {
			if p.ID == "btsp_rejection" && p.Result == Pass {
				found = true
			}
		}
		if !found || rep.Level != 0 {
			t.Errorf("%s audit: %+v", n, rep)
		}
	}
}

func TestProbeLeanAndPool(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "lean.sock", ipctest.LeanDaemon())
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "lean.sock")), Wire: "lean", Full: true})
	if r.State != StateLive || r.Wire != "lean" {
		t.Errorf("lean: %+v", r)
	}
	if r.Calls["health.liveness"].OK {
		t.Errorf("lean daemon has no health.liveness: %+v", r.Calls)
	}
	// A bus pool: every probe request carries the pool id.
	pools := make(chan string, 8)
	serve(t, dir, "bus.sock", ipctest.Config{Accept: func(c net.Conn, first *bufio.Reader) (ipc.Framer, bool) {
		for {
			line, err := first.ReadBytes('\n')
			if err != nil {
				return nil, false
			}
			var m struct {
				ID   json.RawMessage `json:"id"`
				Pool string          `json:"pool"`
			}
			json.Unmarshal(line, &m)
			select {
			case pools <- m.Pool:
			default:
			}
			c.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"status":"alive"}}` + "\n"))
		}
	}})
	r = NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "bus.sock")), Pool: "echo"})
	if r.State != StateLive {
		t.Errorf("pool: %+v", r)
	}
	if p := <-pools; p != "echo" {
		t.Errorf("pool sent %q", p)
	}
}

func TestProbeVanishesMidProbe(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "fleeting.sock")
	var srv *ipctest.Server
	started := make(chan struct{})
	srv = serve(t, dir, "fleeting.sock", ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"health.liveness": func(ctx context.Context, p json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			time.Sleep(100 * time.Millisecond) // let the connection drop unanswered
			return nil, ctx.Err()
		},
	}})
	go func() {
		<-started
		// The file goes first: Close drops the connection before it
		// removes the file, and the probe must see the file gone.
		_ = os.Remove(path)
		srv.Close()
	}()
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 5 * time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(path), Full: true})
	if r.State != StateDead || !strings.Contains(r.Err, "vanished") {
		t.Errorf("%+v", r)
	}
}

func TestProbeDeadCache(t *testing.T) {
	dir := tempDir(t)
	path := filepath.Join(dir, "p.sock")
	staleFile(t, path)
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, DeadTTL: time.Hour})
	ctx := ctxT(t)
	if r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(path)}); r.State != StateDead || r.Cached {
		t.Fatalf("%+v", r)
	}
	if r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(path)}); r.State != StateDead || !r.Cached {
		t.Fatalf("not cached: %+v", r)
	}
	// A primal starts on the same path: a new inode, so it is probed again.
	os.Remove(path)
	serve(t, dir, "p.sock", primal("p", false).Config())
	if r := pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(path)}); r.State != StateLive || r.Cached {
		t.Fatalf("cache outlived the file: %+v", r)
	}
}

func TestProbeHungNeverDelaysOthers(t *testing.T) {
	dir := tempDir(t)
	for i := 0; i < 6; i++ {
		serve(t, dir, "h"+string(rune('a'+i))+".sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	}
	serve(t, dir, "live.sock", primal("live", false).Config())
	// One dial slot and six hung peers: the live one still gets its answer
	// before the hung ones time out, because waiting holds no dial slot.
	pr := NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second, DialConcurrency: 1})
	ctx := ctxT(t)
	done := make(chan Probe, 7)
	for i := 0; i < 6; i++ {
		go func(i int) {
			done <- pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "h"+string(rune('a'+i))+".sock"))})
		}(i)
	}
	go func() { done <- pr.Probe(ctx, ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "live.sock"))}) }()
	first := <-done
	if first.State != StateLive {
		t.Errorf("a hung socket finished first: %+v", first)
	}
	for i := 0; i < 6; i++ {
		<-done
	}
}

func TestProbeThroughBTSP(t *testing.T) {
	dir := tempDir(t)
	const seed = "0123456789abcdef-family-seed"
	cfg := primal("beardog", false).Config()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(seed)}, false)
	serve(t, dir, "beardog-west-1.sock", cfg)
	ep := unixEP(filepath.Join(dir, "beardog-west-1.sock"))
	ctx := ctxT(t)

	r := NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctx, ProbeSpec{Endpoint: ep, Full: true})
	if r.State != StateLocked || !r.BTSPRequired {
		t.Errorf("no seed: %+v", r)
	}
	sec := ipc.Security{Seed: ipc.NewSeed(seed), Family: "west-1"}
	r = NewProber(ProbeOptions{ConnectTimeout: time.Second, Security: sec}).Probe(ctx, ProbeSpec{Endpoint: ep, Full: true})
	if r.State != StateLive || !r.Secured || r.Capabilities == nil {
		t.Errorf("with the seed: %+v", r)
	}
	sec.Seed = ipc.NewSeed("another-seed-entirely-wrong")
	r = NewProber(ProbeOptions{ConnectTimeout: time.Second, Security: sec}).Probe(ctx, ProbeSpec{Endpoint: ep, Full: true})
	if r.State != StateLocked || r.Err == "" || strings.Contains(r.Err, "another-seed") {
		t.Errorf("wrong seed: %+v", r)
	}
}

// TestProbeSessionSecurity: the probe says what protected its connection:
// the default (auto) session is authenticated and encrypted; a cipher named
// on the JSON-line handshake is not authenticated; null is cleartext.
func TestProbeSessionSecurity(t *testing.T) {
	dir := tempDir(t)
	const seed = "0123456789abcdef-family-seed"
	cfg := primal("beardog", false).Config()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(seed)}, false)
	serve(t, dir, "beardog-west-1.sock", cfg)
	ep := unixEP(filepath.Join(dir, "beardog-west-1.sock"))
	for _, tc := range []struct {
		cipher, weak string
	}{{"auto", ""}, {"chacha20_poly1305", "unauthenticated"}, {"null", "cleartext"}} {
		cipher, negotiate, err := ipc.ParseBTSPCipher(tc.cipher)
		if err != nil {
			t.Fatal(err)
		}
		sec := ipc.Security{Seed: ipc.NewSeed(seed), Family: "west-1", Cipher: cipher, Negotiate: negotiate}
		r := NewProber(ProbeOptions{ConnectTimeout: time.Second, Security: sec}).Probe(ctxT(t), ProbeSpec{Endpoint: ep})
		if r.State != StateLive || !r.Secured || r.Session == nil || !r.Session.BTSP {
			t.Fatalf("%s: %+v", tc.cipher, r)
		}
		tg := &Target{Probe: &r}
		if got := tg.WeakSession(); got != tc.weak || r.Session.Authenticated != (tc.weak == "") {
			t.Errorf("%s: session %+v, weakness %q, want %q", tc.cipher, *r.Session, got, tc.weak)
		}
	}
	// No BTSP involved: nothing to say.
	serve(t, dir, "plain.sock", primal("towerd", false).Config())
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second, Security: ipc.Security{Prefix: ipc.PrefixAuto}}).Probe(ctxT(t), ProbeSpec{Endpoint: unixEP(filepath.Join(dir, "plain.sock"))})
	if r.State != StateLive || r.Session != nil || r.Secured {
		t.Errorf("plain: %+v", r)
	}
}

func TestProbeTCPAndStdio(t *testing.T) {
	srv, err := ipctest.ListenTCP("127.0.0.1:0", primal("towerd", false).Config())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: srv.Endpoint(), Full: true})
	if r.State != StateLive || r.Identity == nil {
		t.Errorf("tcp: %+v", r)
	}
	// A stdio command that answers nothing and exits: an error, not a hang.
	ep, _ := ipc.ParseEndpoint(`stdio:"true"`)
	r = NewProber(ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: ep})
	if r.State == StateLive {
		t.Errorf("stdio true: %+v", r)
	}
}
