package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// replayEnv is a fresh HOME with its own history.
func replayEnv(t *testing.T) map[string]string {
	t.Helper()
	home := t.TempDir()
	return map[string]string{"HOME": home, "XDG_STATE_HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")}
}

// noSentinel fails when any connection a peer took carried the sentinel
// call readable.
func noSentinel(t *testing.T, what string, conns [][]byte) {
	t.Helper()
	for i, b := range conns {
		if bytes.Contains(b, []byte(sentinelParam)) || bytes.Contains(b, []byte(sentinelMethod)) {
			t.Fatalf("%s: connection %d carried the call in cleartext: %q", what, i+1, cut(b))
		}
	}
}

// TestReplayKeepsTheNamesFamily: a call made to "foo" at a plain foo.sock
// is replayed after foo.sock gave way to foo-fam1.sock. The name now
// resolves to a socket whose name says it is family-scoped, so replay
// refuses it as call does (exit 5) and nothing reaches the peer: the
// resolved target is dialled as resolved, not its endpoint's string again.
func TestReplayKeepsTheNamesFamily(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	env := replayEnv(t)
	plain, err := ipctest.ListenPrefixPeer(filepath.Join(dir, "foo.sock"), &ipctest.PrefixPeer{})
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, env, "", "call", "--socket-dir", dir, "foo", sentinelMethod, sentinelParams); r.code != exitOK {
		plain.Close()
		t.Fatalf("call foo: %+v", r)
	}
	id := lastCallID(t, env)
	plain.Close()

	scoped, err := ipctest.ListenPrefixPeer(filepath.Join(dir, "foo-fam1.sock"), &ipctest.PrefixPeer{})
	if err != nil {
		t.Fatal(err)
	}
	defer scoped.Close()
	if r := runCLI(t, env, "", "call", "--socket-dir", dir, "foo", sentinelMethod, sentinelParams); r.code != exitSecurity {
		t.Fatalf("call foo → foo-fam1.sock: %+v", r)
	}
	r := runCLI(t, env, "", "replay", "--socket-dir", dir, id)
	if r.code != exitSecurity {
		t.Fatalf("replay %s → foo-fam1.sock: want exit 5 as call, got %+v", id, r)
	}
	noSentinel(t, "foo-fam1.sock", scoped.Received())
	if reqs := scoped.Requests(); len(reqs) != 0 {
		t.Fatalf("foo-fam1.sock read requests: %q", reqs)
	}
}

// TestReplayOverBTSPOnly: a call made over BTSP to neural-api (resolved to
// neural-api-fam1.sock) is replayed after that socket went away and another
// neural-api.sock took the name. An impostor that speaks BTSP without the
// family seed: with the seed the handshake fails (exit 5), without it
// nothing is dialled (exit 5), and stderr says the call is replayed only
// over BTSP. A plain peer that ignores the hello: nothing readable reaches
// it, and the replay ends within --timeout without an answer. Neither ever
// reads the call.
func TestReplayOverBTSPOnly(t *testing.T) {
	t.Parallel()
	const seed = "family-seed-for-replay-tests-0123456789"
	dir := wireDir(t)
	env := replayEnv(t)
	cfg := healthy()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(seed)}, false)
	srv, err := ipctest.Listen(filepath.Join(dir, "neural-api-fam1.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	env["FAMILY_SEED"], env["FAMILY_ID"] = seed, "fam1"
	r := runCLI(t, env, "", "call", "--socket-dir", dir, "neural-api", sentinelMethod, sentinelParams)
	srv.Close()
	if r.code != exitOK && r.code != exitPeer {
		t.Fatalf("call neural-api over BTSP: %+v", r)
	}
	hr := runCLI(t, env, "", "history", "--json", "--limit", "1")
	var es []history.Entry
	if err := json.Unmarshal([]byte(hr.stdout), &es); err != nil || len(es) != 1 || !strings.Contains(es[0].Transport, "+btsp") {
		t.Fatalf("the call as recorded: %v %+v", err, hr)
	}
	id := lastCallID(t, env)

	imp, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "neural-api.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Close()
	r = runCLI(t, env, "", "replay", "--socket-dir", dir, id)
	noCleartextCall(t, imp.Received())
	if r.code != exitSecurity || !strings.Contains(r.stderr, "replayed only over BTSP") {
		t.Fatalf("replay with the seed to an impostor: %+v", r)
	}
	delete(env, "FAMILY_SEED")
	before := len(imp.Received())
	r = runCLI(t, env, "", "replay", "--socket-dir", dir, id)
	if r.code != exitSecurity || !strings.Contains(r.stderr, "replayed only over BTSP") {
		t.Fatalf("replay without the seed: %+v", r)
	}
	if n := len(imp.Received()) - before; n != 0 {
		t.Fatalf("without a seed the impostor got %d connection(s)", n)
	}
	// --target does not lift it either.
	if r := runCLI(t, env, "", "replay", "--target", imp.Path(), id); r.code != exitSecurity {
		t.Fatalf("replay --target to the impostor: %+v", r)
	}
	imp.Close()
	noCleartextCall(t, imp.Received())

	plain, err := ipctest.ListenPrefixPeer(filepath.Join(dir, "neural-api.sock"), &ipctest.PrefixPeer{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	env["FAMILY_SEED"] = seed
	r = runCLI(t, env, "", "replay", "--timeout", "2s", "--socket-dir", dir, id)
	if r.code == exitOK || r.code == exitPeer || !strings.Contains(r.stderr, "replayed only over BTSP") {
		t.Fatalf("replay with the seed to a plain peer: %+v", r)
	}
	noSentinel(t, "the plain peer", plain.Received())
	for _, q := range plain.Requests() {
		if strings.HasPrefix(q, sentinelMethod) {
			t.Fatalf("the plain peer read the call: %q", plain.Requests())
		}
	}
}

// TestLookupCutIsATimeout: a name no socket carries, looked up in a
// directory whose Songbird never answers, runs out of --timeout: that is
// exit 4 ("ran out of time"), not exit 3 ("no socket for"); and replay does
// not take it for "does not resolve now" and go elsewhere.
func TestLookupCutIsATimeout(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	env := replayEnv(t)
	plain, err := ipctest.ListenPrefixPeer(filepath.Join(dir, "foo.sock"), &ipctest.PrefixPeer{})
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, env, "", "call", "--socket-dir", dir, "foo", "test.echo"); r.code != exitOK {
		plain.Close()
		t.Fatalf("call foo: %+v", r)
	}
	id := lastCallID(t, env)
	plain.Close()
	sb, err := ipctest.Listen(filepath.Join(dir, "songbird.sock"), ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()

	r := runCLI(t, env, "", "call", "--no-history", "--timeout", "700ms", "--socket-dir", dir, "nosuch", "test.echo")
	if r.code != exitTimeout || !strings.Contains(r.stderr, "ran out of time") || strings.Contains(r.stderr, "no socket for") {
		t.Fatalf("call to a name whose lookup was cut: %+v", r)
	}
	r = runCLI(t, env, "", "replay", "--timeout", "700ms", "--socket-dir", dir, id)
	if r.code != exitTimeout || strings.Contains(r.stderr, "does not resolve now") {
		t.Fatalf("replay whose lookup was cut: %+v", r)
	}
	// A lookup cut by its own bound (the registry's answer time, well
	// inside a long --timeout) is no "found nowhere" either.
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "20s", "--socket-dir", dir, "nosuch", "test.echo")
	if r.code != exitTimeout || !strings.Contains(r.stderr, "ran out of time") {
		t.Fatalf("call to a name whose lookup hit its own bound: %+v", r)
	}
}
