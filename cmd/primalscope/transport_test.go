package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestCallFamilySocket: the demo's family-scoped BearDog answers with the
// seed (FAMILY_SEED or --family-seed-file), exits 5 with a message that
// says what to set without one, and exits 5 cleanly with a wrong seed.
func TestCallFamilySocket(t *testing.T) {
	eco := ecosystem(t)
	state := t.TempDir()
	sd := "--socket-dir=" + eco.Dir
	target := "beardog-" + eco.Family
	base := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": state}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}

	r := runCLI(t, base, "", "call", sd, "--no-history", target, "health.liveness")
	if r.code != 5 || !strings.Contains(r.stderr, "BTSP handshake required") || !strings.Contains(r.stderr, "FAMILY_SEED") || !strings.Contains(r.stderr, "--family-seed-file") {
		t.Fatalf("no seed: %+v", r)
	}
	// The endpoint is now known to require BTSP: still exit 5, still clear.
	r = runCLI(t, base, "", "call", sd, "--no-history", target, "health.liveness")
	if r.code != 5 || !strings.Contains(r.stderr, "FAMILY_SEED") {
		t.Fatalf("no seed, known endpoint: %+v", r)
	}

	// A seed given with no family (no FAMILY_ID, no --family) is not
	// offered to the family the socket's name carries: exit 5, saying
	// how to give it for that family.
	r = runCLI(t, with("FAMILY_SEED", eco.Seed()), "", "call", sd, "--no-history", target, "health.liveness")
	if r.code != 5 || !strings.Contains(r.stderr, "--family "+eco.Family) || !strings.Contains(r.stderr, "given with no family") {
		t.Fatalf("FAMILY_SEED without a family: %+v", r)
	}
	base["FAMILY_ID"] = eco.Family
	r = runCLI(t, with("FAMILY_SEED", eco.Seed()), "", "call", sd, "--no-history", target, "health.liveness")
	if r.code != 0 || !strings.Contains(r.stdout, "alive") {
		t.Fatalf("FAMILY_SEED: %+v", r)
	}
	r = runCLI(t, base, "", "call", sd, "--no-history", "--family-seed-file", eco.SeedFile, target, "crypto.sign_ed25519", `{"message":"aGk="}`)
	if r.code != 0 || !strings.Contains(r.stdout, "signature") {
		t.Fatalf("--family-seed-file: %+v", r)
	}
	for _, cipher := range []string{"null", "hmac_plain", "negotiate", "chacha20_poly1305"} {
		r = runCLI(t, with("FAMILY_SEED", eco.Seed()), "", "call", sd, "--no-history", "--btsp-cipher", cipher, target, "health.liveness")
		if r.code != 0 {
			t.Fatalf("--btsp-cipher %s: %+v", cipher, r)
		}
	}
	// --family (or FAMILY_ID) makes the family-scoped name known up front.
	byFlag := with("FAMILY_SEED", eco.Seed())
	delete(byFlag, "FAMILY_ID")
	r = runCLI(t, byFlag, "", "call", sd, "--no-history", "--family", eco.Family, "--prefix", "off", target, "health.liveness")
	if r.code != 0 {
		t.Fatalf("--family: %+v", r)
	}

	const wrong = "WRONG-sentinel-seed-5a5a5a-never-shown"
	r = runCLI(t, with("FAMILY_SEED", wrong), "", "call", sd, "--no-history", target, "health.liveness")
	if r.code != 5 || !strings.Contains(r.stderr, "family_verification") {
		t.Fatalf("wrong seed: %+v", r)
	}
	for _, out := range []string{r.stdout, r.stderr} {
		if strings.Contains(out, wrong) || strings.Contains(out, "5a5a5a") || strings.Contains(out, eco.Seed()) {
			t.Fatalf("a seed reached the screen: %+v", r)
		}
	}

	// The memory's records hold facts only, mode 0600.
	recs := readMemoryFile(t, state)
	for _, b := range recs {
		if strings.Contains(string(b), eco.Seed()) || strings.Contains(string(b), wrong) {
			t.Fatal("the endpoint memory holds a seed")
		}
	}
	var f struct {
		BTSPRequired bool   `json:"btsp_required"`
		Framing      string `json:"btsp_framing"`
	}
	b, ok := recs["unix://"+eco.Path(target+".sock")]
	if !ok || json.Unmarshal(b, &f) != nil || !f.BTSPRequired || f.Framing != "json-line" {
		t.Fatalf("endpoint memory: %s", b)
	}
}

func TestSecurityFlagErrors(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	env := map[string]string{"HOME": t.TempDir()}
	r := runCLI(t, env, "", "call", sd, "--no-history", "--prefix", "maybe", "beardog", "health.liveness")
	if r.code != 2 || !strings.Contains(r.stderr, "--prefix") {
		t.Fatalf("bad --prefix: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "--btsp-cipher", "rot13", "beardog", "health.liveness")
	if r.code != 2 || !strings.Contains(r.stderr, "--btsp-cipher") {
		t.Fatalf("bad --btsp-cipher: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "--family-seed-file", filepath.Join(t.TempDir(), "none"), "beardog", "health.liveness")
	if r.code != 2 || !strings.Contains(r.stderr, "--family-seed-file") {
		t.Fatalf("missing seed file: %+v", r)
	}
	open := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(open, []byte(eco.Seed()), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "--family-seed-file", open, "beardog-"+eco.Family, "health.liveness")
	if r.code != 5 || strings.Contains(r.stderr, eco.Seed()) {
		t.Fatalf("seed file readable by others: %+v", r)
	}
}

// TestCallPrefixModes: --prefix against primals that require the
// riboCipher prefix, reject it, or drop a connection without it.
func TestCallPrefixModes(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	serve := func(name string, policy ipctest.PrefixPolicy) string {
		p := &ipctest.Primal{Name: name, Version: "1.0.0"}
		cfg := p.Config()
		cfg.Accept = ipctest.RiboCipher(policy, name, nil)
		s, err := ipctest.Listen(filepath.Join(dir, name+".sock"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s.Path
	}
	required := serve("sweetgrass", ipctest.PrefixRequired)
	rejected := serve("petaltongue", ipctest.PrefixRejected)
	dropped := serve("biomeos-api", ipctest.PrefixDropWithout)
	env := map[string]string{"HOME": t.TempDir()}
	for _, tc := range []struct {
		path, mode string
		code       int
		stderr     string
	}{
		{required, "auto", 0, ""},
		{required, "on", 0, ""},
		{required, "off", 1, "riboCipher prefix required"},
		{rejected, "auto", 0, ""},
		{rejected, "off", 0, ""},
		{rejected, "on", -1, "-32700"}, // the error answers the call (1) or the close wins the race (3)
		// A silent drop proves nothing: not resent, exit 3 with a hint.
		{dropped, "auto", 3, "--prefix on"},
		{dropped, "on", 0, ""},
		{dropped, "auto", 0, ""}, // the answer to --prefix on was remembered
		{dropped, "off", 3, "closed"},
	} {
		r := runCLI(t, env, "", "call", "--no-history", "--prefix", tc.mode, tc.path, "health.liveness")
		if (r.code != tc.code && !(tc.code == -1 && (r.code == 1 || r.code == 3))) || !strings.Contains(r.stderr, tc.stderr) {
			t.Fatalf("%s --prefix %s: %+v", filepath.Base(tc.path), tc.mode, r)
		}
	}
}

// busPool is a stdio Bus pool of this test binary acting as primalscope,
// which serves as a worker when asked (main calls ipctest.WorkerMain).
func busPool(t *testing.T, id string, instances int) ipctest.BusPool {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ipctest.BusPool{ID: id, Command: exe, Instances: instances, Env: map[string]string{
		"PRIMALSCOPE_TEST_AS_MAIN": "1", ipctest.WorkerEnv: id, "GORACE": "atexit_sleep_ms=0"}}
}

// TestCallStdioBus: --pool and --session route a call through a stdio Bus
// (a real daemon fake with worker processes), and a call the bus drops or a
// worker never answers times out (exit 4) naming the pool and session.
func TestCallStdioBus(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cfg := ipctest.BusConfig{Pools: []ipctest.BusPool{busPool(t, "echo", 2), busPool(t, "agent", 1)}}
	bus, err := ipctest.StartStdioBus(filepath.Join(dir, "bus.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	env := map[string]string{"HOME": t.TempDir()}

	r := runCLI(t, env, "", "call", "--no-history", "--pool", "agent", "--session", "S1", bus.Path, "session.count")
	if r.code != 0 || !strings.Contains(r.stdout, `"count": 1`) || !strings.Contains(r.stdout, `"pool": "agent"`) {
		t.Fatalf("--pool agent --session S1: %+v", r)
	}
	r = runCLI(t, env, "", "call", "--no-history", "--raw", "--pool", "echo", "--session", "S1", bus.Path, "x.y", `{"a":1}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"sessionId":"S1"`) || !strings.Contains(r.stdout, `"params":{"a":1}`) {
		t.Fatalf("--raw: %+v", r)
	}
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "300ms", "--pool", "echo", "--session", "S2", bus.Path, "bus.silent")
	if r.code != 4 || !strings.Contains(r.stderr, "pool echo, session S2") {
		t.Fatalf("unanswered: %+v", r)
	}
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "300ms", bus.Path, "health.liveness")
	if r.code != 4 || !strings.Contains(r.stderr, "no answer") {
		t.Fatalf("no pool on a two-pool bus: %+v", r)
	}

	// The pool by the name ls prints (BUS/POOL), as every command takes it:
	// call and caps route to the pool without --pool.
	sd := "--socket-dir=" + dir
	r = runCLI(t, env, "", "call", sd, "--no-history", "bus/echo", "echo", `{"a":1}`)
	if r.code != 0 || !strings.Contains(r.stdout, `"pool": "echo"`) || !strings.Contains(r.stdout, `"a": 1`) {
		t.Fatalf("call bus/echo: %+v", r)
	}
	r = runCLI(t, env, "", "caps", sd, "bus/agent")
	if r.code != 0 || !strings.Contains(r.stdout, "health    alive") {
		t.Fatalf("caps bus/agent: %+v", r)
	}

	// The same daemon in --stdio mode, reached as a stdio: target.
	cfgFile := filepath.Join(dir, "bus.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	target := fmt.Sprintf(`stdio:"env PRIMALSCOPE_TEST_AS_MAIN=1 %s=1 GORACE=atexit_sleep_ms=0 %s --stdio --config %s"`, ipctest.DaemonEnv, exe, cfgFile)
	r = runCLI(t, env, "", "call", "--no-history", "--pool", "echo", target, "health.liveness")
	if r.code != 0 || !strings.Contains(r.stdout, `"pool": "echo"`) {
		t.Fatalf("stdio mode: %+v", r)
	}
}
