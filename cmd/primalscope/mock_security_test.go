package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

const mockTestSeed = "mock-test-family-seed-0123456789"

// btspSigner serves crypto.sign behind a BTSP gate at sock; with raw, it
// first writes a cleartext line into the session.
func btspSigner(t *testing.T, sock string, raw bool) *peer.Server {
	t.Helper()
	var self atomic.Pointer[peer.Server]
	p := &peer.Primal{Name: "beardog", Version: "1", Domain: "crypto", Format: peer.FormatStandard,
		Groups: []peer.Group{{Type: "crypto", Methods: []string{"sign"}}},
		Handlers: map[string]peer.HandlerFunc{
			"crypto.sign": func(context.Context, json.RawMessage) (any, error) {
				if raw { // a cleartext line inside the BTSP session: a frame that does not authenticate
					for _, c := range self.Load().Conns() {
						_ = c.WriteRaw([]byte(`{"jsonrpc":"2.0","id":2,"result":{"signature":"c2ln"}}` + "\n"))
					}
				}
				return map[string]string{"signature": "c2ln"}, nil
			},
		}}
	cfg := p.Config()
	cfg.Accept = peer.BTSPGate(btsp.ServerConfig{Seed: []byte(mockTestSeed)}, false)
	srv, err := peer.Listen(sock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	self.Store(srv)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// A target recorded over BTSP is never served in cleartext: not over
// Holon-RPC, not as a stdio bus worker, even with the seed at hand. Nor is
// it served off loopback unless --listen-remote says so.
func TestMockRefusesToServeABTSPRecordingInCleartext(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "beardog-fam1.sock")
	srv := btspSigner(t, sock, false)
	env := runEnv(t)
	env["FAMILY_SEED"], env["FAMILY_ID"] = mockTestSeed, "fam1"
	if r := runCLI(t, env, "", "--family", "fam1", "call", sock, "crypto.sign", `{"msg":"aGk="}`); r.code != 0 {
		t.Fatalf("recording over BTSP: %+v", r)
	}
	srv.Close()
	if m, code := startMock(t, env, "mock", sock, "--latency", "none", "--listen", "ws://127.0.0.1:0/rpc"); code != exitSecurity {
		t.Errorf("--listen ws:// for a BTSP recording: want exit 5, got %d (endpoint %q) %s", code, m.endpoint, m.stderr())
	}
	if m, code := startMock(t, env, "mock", sock, "--latency", "none", "--listen", "tcp://0.0.0.0:1"); code != exitUsage || !strings.Contains(m.stderr(), "--listen-remote") {
		t.Errorf("--listen off loopback without --listen-remote: want exit 2 naming the flag, got %d (endpoint %q) %s", code, m.endpoint, m.stderr())
	}
	r := runCLI(t, env, `{"jsonrpc":"2.0","id":1,"method":"crypto.sign","params":{"msg":"aGk="}}`+"\n", "mock", sock, "--latency", "none", "--listen", "stdio")
	if r.code != exitSecurity || strings.Contains(r.stdout, "c2ln") {
		t.Errorf("--listen stdio for a BTSP recording: want exit 5 and no answer, got %+v", r)
	}
}

// mock verify: a target that refuses for security (here a frame that does
// not authenticate) is exit 5, not drift.
func TestMockVerifySecurityRefusalIsExit5(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "beardog-fam1.sock")
	srv := btspSigner(t, sock, false)
	env := runEnv(t)
	env["FAMILY_SEED"], env["FAMILY_ID"] = mockTestSeed, "fam1"
	if r := runCLI(t, env, "", "--family", "fam1", "call", sock, "crypto.sign", `{"msg":"aGk="}`); r.code != 0 {
		t.Fatalf("recording over BTSP: %+v", r)
	}
	srv.Close()
	btspSigner(t, sock, true)
	r := runCLI(t, env, "", "--family", "fam1", "mock", "verify", sock, "--method", "crypto.sign")
	if r.code != exitSecurity {
		t.Errorf("verify against a target whose frames do not authenticate: want exit 5, got %+v", r)
	}
}

// The calls found by a name can span several targets; the mock stands in
// for one, and serves BTSP only when any call was recorded over it.
func TestMockRecordedAsOneTarget(t *testing.T) {
	e := func(ep, fam, tr string) history.Entry { return history.Entry{Endpoint: ep, Family: fam, Transport: tr} }
	for name, tc := range map[string]struct {
		entries []history.Entry
		err     string
		btsp    bool
	}{
		"two endpoints": {entries: []history.Entry{e("unix:///a/ledger.sock", "", "unix"), e("unix:///b/ledger.sock", "", "unix")},
			err: "span 2 endpoints (unix:///a/ledger.sock, unix:///b/ledger.sock)"},
		"two families": {entries: []history.Entry{e("unix:///a/bd.sock", "fam1", "unix+btsp"), e("unix:///a/bd.sock", "fam2", "unix+btsp")},
			err: "span 2 families (fam1, fam2)"},
		"BTSP in an older call": {entries: []history.Entry{e("unix:///a/bd.sock", "", "unix"), e("unix:///a/bd.sock", "fam1", "unix+btsp")}, btsp: true},
		"one target":            {entries: []history.Entry{e("unix:///a/l.sock", "", "unix"), e("unix:///a/l.sock", "", "unix")}},
	} {
		rec, err := recordedAs("x", tc.entries)
		switch {
		case tc.err != "":
			if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want a usage error saying %q", name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		case rec.BTSP != tc.btsp || tc.btsp && (rec.Family != "fam1" || !strings.Contains(rec.Transport, "btsp")):
			t.Errorf("%s: %+v, want BTSP %v", name, rec, tc.btsp)
		}
	}
}
