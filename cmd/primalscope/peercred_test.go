package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// foreignEcosystem is a shared sticky socket directory (as /tmp/biomeos
// is on many machines) holding a primal another local user (nobody)
// serves. It skips when the tests cannot be root.
func foreignEcosystem(t *testing.T) (dir string, fp *ipctest.ForeignPeer) {
	t.Helper()
	fp, dir = ipctest.ServeForeign(t, "beardog.sock")
	return dir, fp
}

// call refuses a primal another user serves (exit 5) before sending its
// params; history records the refusal without them; caps, ls and check
// still show it, marked with its owner; --trust-uid makes it callable.
func TestForeignSocketRefusedForCalls(t *testing.T) {
	dir, fp := foreignEcosystem(t)
	env := map[string]string{"HOME": t.TempDir()}
	db := filepath.Join(t.TempDir(), "h.db")
	sd := "--socket-dir=" + dir
	secret := `{"password":"hunter2","api_key":"sk-live-123"}`

	for _, target := range []string{"beardog", fp.Path} {
		r := runCLI(t, env, "", "call", sd, "--history", db, target, "secrets.store", secret)
		if r.code != exitSecurity || !strings.Contains(r.stderr, "nobody") || !strings.Contains(r.stderr, "--trust-uid") {
			t.Fatalf("call %s: want exit 5 naming the owner, got %+v", target, r)
		}
		if strings.Contains(r.stdout, "hunter2") {
			t.Fatalf("call printed an answer: %s", r.stdout)
		}
	}
	for _, b := range fp.Received() {
		if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("secrets.store")) {
			t.Fatalf("the foreign primal received the call: %q", b)
		}
	}
	h := runCLI(t, env, "", "history", "--history", db, "--json")
	if h.code != 0 || !strings.Contains(strings.ReplaceAll(h.stdout, " ", ""), `"outcome":"refused"`) {
		t.Fatalf("history: %+v", h)
	}
	if strings.Contains(h.stdout, "hunter2") || strings.Contains(h.stdout, "api_key") {
		t.Fatalf("history records params that were never sent: %s", h.stdout)
	}

	c := runCLI(t, env, "", "caps", sd, fp.Path)
	if c.code != exitOK || !strings.Contains(c.stdout, "owner     nobody (uid 65534)") || !strings.Contains(c.stdout, "secrets (1)") {
		t.Fatalf("caps: %+v", c)
	}
	l := runCLI(t, env, "", "ls", sd, "--no-proc")
	if l.code != exitOK || !strings.Contains(l.stdout, "owner=nobody (uid 65534)") || !strings.Contains(l.stderr, "served by nobody") {
		t.Fatalf("ls: %+v", l)
	}
	j := runCLI(t, env, "", "ls", sd, "--no-proc", "--jq", `.targets[] | select(.owner) | .name + " " + .owner.user`)
	if j.code != exitOK || strings.TrimSpace(j.stdout) != "beardog nobody" {
		t.Fatalf("ls --jq on owner: %+v", j)
	}
	k := runCLI(t, env, "", "check", sd, "--no-proc", "--json")
	if !strings.Contains(k.stdout, `"security.owner"`) || !strings.Contains(k.stdout, "served by nobody") {
		t.Fatalf("check: %+v", k)
	}

	tr := runCLI(t, env, "", "call", sd, "--no-history", "--trust-uid", "nobody", "beardog", "secrets.store", `{"x":1}`)
	if tr.code != exitOK || !strings.Contains(tr.stdout, `"x"`) {
		t.Fatalf("call --trust-uid nobody: %+v", tr)
	}
	tl := runCLI(t, env, "", "ls", sd, "--no-proc", "--trust-uid", "65534")
	if tl.code != exitOK || strings.Contains(tl.stdout, "owner=") || strings.Contains(tl.stderr, "served by nobody") {
		t.Fatalf("ls --trust-uid 65534 still marks the trusted owner: %+v", tl)
	}
	bad := runCLI(t, env, "", "call", sd, "--no-history", "--trust-uid", "no-such-user-here", "beardog", "health.liveness")
	if bad.code != exitUsage {
		t.Fatalf("--trust-uid of an unknown user: %+v", bad)
	}
}

// trust_uids in the config file trusts like --trust-uid.
func TestForeignSocketTrustedByConfig(t *testing.T) {
	dir, _ := foreignEcosystem(t)
	cfgHome := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cfgHome, "primalscope"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgHome, "primalscope", "config.toml"), []byte("[discovery]\ntrust_uids = [65534]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": t.TempDir(), "XDG_CONFIG_HOME": cfgHome}
	r := runCLI(t, env, "", "call", "--socket-dir="+dir, "--no-history", "beardog", "health.liveness")
	if r.code != exitOK {
		t.Fatalf("call with trust_uids: %+v", r)
	}
}

// tail refuses an event stream (and a JSON-RPC socket) another user serves:
// nothing is sent, the refusal is on the stream, the exit is 5 and the
// source is not reopened; --trust-uid lets the request out.
func TestTailRefusesForeignSocket(t *testing.T) {
	dir, fp := foreignEcosystem(t)
	api, err := ipctest.ListenForeign(filepath.Join(dir, "biomeos-api.sock"), ipctest.NobodyUID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	env := map[string]string{"HOME": t.TempDir()}
	for _, p := range []*ipctest.ForeignPeer{api, fp} {
		r := runCLI(t, env, "", "tail", "--json", "--interval", "50ms", p.Path)
		if r.code != exitSecurity || !strings.Contains(r.stdout, `"refused"`) || !strings.Contains(r.stdout, "served by nobody") {
			t.Fatalf("tail %s: want exit 5 and a refused event naming the owner, got %+v", p.Path, r)
		}
		for _, b := range p.Received() {
			if len(b) > 0 {
				t.Fatalf("the foreign server received %q", b)
			}
		}
	}
}
