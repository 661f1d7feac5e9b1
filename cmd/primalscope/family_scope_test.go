package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestTailFamilyScopedNoCleartext: tail decides for each source whether it
// is family-scoped (its base options were made for no target): without a
// seed a family-scoped name gets no connection; with one, every connection
// starts with a BTSP hello and never carries JSON-RPC readable.
func TestTailFamilyScopedNoCleartext(t *testing.T) {
	const seed = "family-seed-for-tail-tests-0123456789"
	for _, seeded := range []bool{false, true} {
		name := "no-seed"
		if seeded {
			name = "seed"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			srv := &ipctest.HostileBTSP{}
			env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir}
			if seeded {
				srv.Seed, env["FAMILY_SEED"], env["FAMILY_ID"] = []byte(seed), seed, "westgate"
			}
			h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate.sock"), srv)
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			runCLICtx(ctx, env, "", "tail", "--interval", "100ms", "--no-proc", h.Path())
			cancel()
			conns := h.Received()
			if !seeded && len(conns) > 0 {
				t.Fatalf("%d connection(s) without a seed, the first carrying %q", len(conns), cut(conns[0]))
			}
			if seeded && len(conns) == 0 {
				t.Fatal("no connection with a seed")
			}
			for i, b := range conns {
				if len(b) > 0 && !ipctest.IsBTSPHello(b) {
					t.Fatalf("connection %d did not start with a BTSP hello: %q", i+1, cut(b))
				}
				if (!seeded && ipctest.CleartextJSONRPC(b)) || bytes.Contains(b, []byte("health.liveness")) {
					t.Fatalf("connection %d carried JSON-RPC in cleartext: %q", i+1, cut(b))
				}
			}
		})
	}
}

// TestCallResolvedFamilyNoCleartext: a NAME resolved to NAME-<family>.sock
// (a primal no built-in list knows, no FAMILY_ID, nothing else in the
// directory) is family-scoped: without a seed nothing reaches it; with a
// seed given for no family (FAMILY_SEED alone) nothing reaches it either
// (exit 5, saying to name the family: the seed is not offered to a family
// it was not given for); with the family named the first bytes are a BTSP
// hello. A longer known name is no family: "neural" finding
// neural-api.sock calls it in cleartext as before.
func TestCallResolvedFamilyNoCleartext(t *testing.T) {
	t.Parallel()
	const seed = "family-seed-for-resolve-tests-0123456789"
	dir := wireDir(t)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "myprimal-east.sock"), &ipctest.HostileBTSP{Seed: []byte(seed)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir}
	r, _ := timed(t, env, "call", "--no-history", "--timeout", "3s", "--socket-dir", dir, "myprimal", sentinelMethod, sentinelParams)
	if r.code != exitSecurity {
		t.Fatalf("without a seed: %+v", r)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) without a seed: %q", n, cut(h.Received()[0]))
	}
	env["FAMILY_SEED"] = seed
	r, _ = timed(t, env, "call", "--no-history", "--timeout", "3s", "--socket-dir", dir, "myprimal", sentinelMethod, sentinelParams)
	if r.code != exitSecurity || !strings.Contains(r.stderr, "--family east") {
		t.Fatalf("a seed given for no family, a socket of family east: want exit 5 saying --family east, got %+v", r)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) with a seed given for no family: %q", n, cut(h.Received()[0]))
	}
	timed(t, env, "call", "--no-history", "--timeout", "3s", "--socket-dir", dir, "--family", "east", "myprimal", sentinelMethod, sentinelParams)
	conns := h.Received()
	if len(conns) == 0 {
		t.Fatal("no connection with a seed")
	}
	noCleartextCall(t, conns)

	plain := filepath.Join(dir, "neural-api.sock")
	s, err := ipctest.Listen(plain, healthy())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	delete(env, "FAMILY_SEED")
	if r, _ := timed(t, env, "call", "--no-history", "--timeout", "3s", "--socket-dir", dir, "neural", "test.echo"); r.code != exitOK {
		t.Fatalf("neural → neural-api.sock: %+v", r)
	}
}

// TestTailNameKeepsItsFamily: tail NAME dials the target the name resolved
// to as call does: "foo" found as foo-fam1.sock (a primal no list knows,
// no FAMILY_ID) is family-scoped by its name, so without a seed tail sends
// it nothing (call exits 5), where it used to poll health.liveness in
// cleartext.
func TestTailNameKeepsItsFamily(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	p, err := ipctest.ListenPrefixPeer(filepath.Join(dir, "foo-fam1.sock"), &ipctest.PrefixPeer{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir}
	if r := runCLI(t, env, "", "call", "--no-history", "--socket-dir", dir, "foo", "health.liveness"); r.code != exitSecurity {
		t.Fatalf("call foo: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	r, _ := runCLICtx(ctx, env, "", "tail", "--interval", "100ms", "--no-proc", "--socket-dir", dir, "foo")
	cancel()
	for i, b := range p.Received() {
		if ipctest.CleartextJSONRPC(b) {
			t.Fatalf("tail foo: connection %d carried JSON-RPC in cleartext: %q (%+v)", i+1, cut(b), r)
		}
	}
	if reqs := p.Requests(); len(reqs) != 0 {
		t.Fatalf("tail foo: the peer read %q", reqs)
	}
}
