package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestMain lets the test binary run as primalscope itself when asked, so
// tests can drive the real command line in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("PRIMALSCOPE_TEST_AS_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs one command line in-process with a clean environment.
func runCLI(t *testing.T, env map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := run(ctx, args, &stdio{in: strings.NewReader(stdin), out: &out, err: &errb}, getenv, environ)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

func ecosystem(t *testing.T) *demo.Ecosystem {
	t.Helper()
	eco, err := demo.Start(context.Background(), demo.Options{Tick: time.Hour, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eco.Close() })
	return eco
}

func TestCallExitCodes(t *testing.T) {
	eco := ecosystem(t)
	dir := eco.Dir
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + dir

	r := runCLI(t, env, "", "call", sd, "--no-history", "beardog", "health.liveness")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "{\n  \"status\": \"alive\"\n}" {
		t.Fatalf("ok call: %+v", r)
	}

	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog", "no.such")
	if r.code != 1 || !strings.Contains(r.stderr, "-32601") || !strings.Contains(r.stderr, "Method not found") || r.stdout != "" {
		t.Fatalf("peer error: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "--raw", "beardog", "no.such")
	if r.code != 1 || !strings.Contains(r.stdout, `"error":{"code":-32601`) {
		t.Fatalf("peer error --raw: %+v", r)
	}

	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog", "x.y", `{"a":1,}`)
	if r.code != 2 || !strings.Contains(r.stderr, "line 1, column 8") || !strings.Contains(r.stderr, "^") {
		t.Fatalf("bad params: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, "beardog")
	if r.code != 2 {
		t.Fatalf("missing METHOD: %+v", r)
	}
	r = runCLI(t, env, "", "call", "--no-such-flag", sd, "beardog", "x")
	if r.code != 2 {
		t.Fatalf("unknown flag: %+v", r)
	}
	r = runCLI(t, env, "", "call", "--color=sometimes", sd, "beardog", "health.liveness")
	if r.code != 2 {
		t.Fatalf("bad --color: %+v", r)
	}

	r = runCLI(t, env, "", "call", sd, "--no-history", "nothere", "health.liveness")
	if r.code != 3 || !strings.Contains(r.stderr, "no socket for \"nothere\"") || !strings.Contains(r.stderr, "beardog") {
		t.Fatalf("missing socket: %+v", r)
	}
	dead := filepath.Join(dir, "dead.sock")
	if err := os.WriteFile(dead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "", "call", "--no-history", dead, "health.liveness")
	if r.code != 3 {
		t.Fatalf("dead socket file: %+v", r)
	}

	start := time.Now()
	r = runCLI(t, env, "", "call", sd, "--no-history", "--timeout", "300ms", "lostprimal", "health.liveness")
	if r.code != 4 || !strings.Contains(r.stderr, "no answer within") {
		t.Fatalf("stale socket: %+v", r)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the timeout was not honoured: %v", time.Since(start))
	}

	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog-"+eco.Family, "health.liveness")
	if r.code != 5 || !strings.Contains(r.stderr, "BTSP") || !strings.Contains(r.stderr, "FAMILY_SEED") {
		t.Fatalf("BTSP without a seed: %+v", r)
	}
}

func TestCallParamsSources(t *testing.T) {
	eco := ecosystem(t)
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + eco.Dir
	file := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(file, []byte("{\n  \"prompt\": \"hello\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ arg, stdin string }{{`{"prompt":"hello"}`, ""}, {"@" + file, ""}, {"-", `{"prompt": "hello"}`}} {
		r := runCLI(t, env, tc.stdin, "call", sd, "--no-history", "ai", "ai.complete", tc.arg)
		if r.code != 0 || !strings.Contains(r.stdout, "A composition of 5 characters") {
			t.Fatalf("params %q: %+v", tc.arg, r)
		}
	}
	r := runCLI(t, env, "{\n  \"a\": [1, 2\n}", "call", sd, "--no-history", "ai", "ai.complete", "-")
	if r.code != 2 || !strings.Contains(r.stderr, "line 3") {
		t.Fatalf("bad stdin params: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "ai", "ai.complete", "@/nonexistent/params.json")
	if r.code != 2 {
		t.Fatalf("missing params file: %+v", r)
	}
}

func TestColourRules(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	env := map[string]string{"HOME": t.TempDir(), "TERM": "xterm-256color"}
	r := runCLI(t, env, "", "call", sd, "--no-history", "--color=always", "beardog", "health.liveness")
	if r.code != 0 || !strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("--color=always should colour: %q", r.stdout)
	}
	// no-color.org: a colour flag the user typed beats NO_COLOR.
	env["NO_COLOR"] = "1"
	r = runCLI(t, env, "", "call", sd, "--no-history", "--color=always", "beardog", "health.liveness")
	if r.code != 0 || !strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("--color=always must beat NO_COLOR: %q", r.stdout)
	}
	env["CLICOLOR_FORCE"] = "1"
	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog", "health.liveness")
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("NO_COLOR must beat CLICOLOR_FORCE under --color auto: %q", r.stdout)
	}
	delete(env, "NO_COLOR")
	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog", "health.liveness")
	if !strings.Contains(r.stdout, "\x1b[") {
		t.Fatalf("CLICOLOR_FORCE=1 colours a pipe under --color auto: %q", r.stdout)
	}
	delete(env, "CLICOLOR_FORCE")
	delete(env, "NO_COLOR")
	r = runCLI(t, env, "", "call", sd, "--no-history", "--color=always", "--no-color", "beardog", "health.liveness")
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("--no-color must win: %q", r.stdout)
	}
	r = runCLI(t, env, "", "call", sd, "--no-history", "beardog", "health.liveness")
	if strings.Contains(r.stdout, "\x1b") {
		t.Fatalf("auto colour on a pipe must be plain: %q", r.stdout)
	}
}

func TestPeerControlSequencesNeverReachTheTerminal(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := ipctest.Listen(filepath.Join(dir, "evil.sock"), ipctest.ControlSequences())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	env := map[string]string{"HOME": t.TempDir(), "TERM": "xterm-256color"}
	for _, args := range [][]string{
		{"call", "--no-history", "--color=always", s.Path, "evil.do"},
		{"call", "--no-history", "--raw", s.Path, "evil.do"},
		{"caps", s.Path},
		{"call", "--no-history", s.Path, "no.such\x1b]0;x\x07"},
	} {
		r := runCLI(t, env, "", args...)
		for _, out := range []string{r.stdout, r.stderr} {
			clean := stripSGR(out)
			if strings.IndexByte(clean, 0x1b) >= 0 || strings.IndexByte(clean, 0x07) >= 0 ||
				strings.IndexByte(clean, 0x9b) >= 0 || strings.Contains(clean, "\u009b") {
				t.Fatalf("%v: a control sequence reached the terminal: %q", args, out)
			}
		}
	}
}

// stripSGR removes primalscope's own colour sequences (ESC [ digits;... m).
func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';') {
				j++
			}
			if j < len(s) && s[j] == 'm' {
				i = j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestCapsEveryDemoPrimal(t *testing.T) {
	eco := ecosystem(t)
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + eco.Dir
	want := map[string]string{"beardog": "signed ✓", "songbird": "format A", "rhizocrypt": "cpu high", "ai": "complete", "dag": "session.create", "nestgate": "artifact.store", "squirrel": "embed"}
	for name, text := range want {
		r := runCLI(t, env, "", "caps", sd, name)
		if r.code != 0 || !strings.Contains(r.stdout, text) {
			t.Fatalf("caps %s: %+v", name, r)
		}
		r = runCLI(t, env, "", "caps", sd, "--json", name)
		var doc struct {
			Target       string `json:"target"`
			Capabilities struct {
				Methods []string `json:"methods"`
			} `json:"capabilities"`
			Tree []struct{ Name string } `json:"tree"`
		}
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || len(doc.Capabilities.Methods) == 0 || len(doc.Tree) == 0 {
			t.Fatalf("caps --json %s: %+v", name, r)
		}
	}
	r := runCLI(t, env, "", "caps", sd, eco.Path("floatmail/floatmail.sock"))
	if r.code == 0 {
		t.Fatalf("a lean daemon has no capabilities.list: want a failure, got %+v", r)
	}
}

// TestDemoServe drives `primalscope demo --serve` as a person would from a
// shell: the first line is the socket directory, calls work against it, and
// an interrupt removes it, and what the calls remembered about its sockets.
func TestDemoServe(t *testing.T) {
	home := t.TempDir()
	state := filepath.Join(home, ".local", "state")
	d := serveDemoEnv(t, []string{"HOME=" + home, "XDG_STATE_HOME="})
	r := runCLI(t, map[string]string{"HOME": home}, "", "call", "--no-history", "--socket-dir", d.Dir, "songbird", "ipc.list")
	if r.code != 0 || !strings.Contains(r.stdout, "rhizocrypt") {
		t.Fatalf("call against the served demo: %+v", r)
	}
	songbird := "unix://" + filepath.Join(d.Dir, "songbird.sock")
	if _, ok := readMemoryFile(t, state)[songbird]; !ok {
		t.Fatalf("the call remembered nothing about %s: %v", songbird, readMemoryFile(t, state))
	}
	if err := d.Stop(); err != nil {
		t.Fatalf("demo --serve did not exit cleanly on SIGINT: %v\n%s", err, d.Stderr())
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Fatalf("the socket directory was not removed: %v", err)
	}
	for k := range readMemoryFile(t, state) {
		if strings.HasPrefix(k, "unix://"+d.Dir+"/") {
			t.Fatalf("the demo's socket %s is still remembered after it ended", k)
		}
	}
	if !strings.Contains(d.Stderr(), "beardog") {
		t.Fatalf("the overview on stderr names nothing: %s", d.Stderr())
	}
}

// TestCallIsRecordedBeforeItPrints: every call lands in history with its
// outcome, and --no-history records nothing.
func TestCallIsRecordedBeforeItPrints(t *testing.T) {
	eco := ecosystem(t)
	db := filepath.Join(t.TempDir(), "h.db")
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + eco.Dir
	for _, args := range [][]string{
		{"beardog", "health.liveness"},
		{"beardog", "no.such"},
		{"--timeout=200ms", "lostprimal", "health.liveness"},
	} {
		runCLI(t, env, "", append([]string{"call", sd, "--history", db}, args...)...)
	}
	runCLI(t, env, "", "call", sd, "--no-history", "--history", db, "beardog", "health.check")
	r := runCLI(t, env, "", "history", "--history", db, "--json")
	if r.code != 0 {
		t.Fatalf("history: %+v", r)
	}
	for _, want := range []string{`"outcome":"ok"`, `"outcome":"error"`, `"outcome":"timeout"`} {
		if !strings.Contains(strings.ReplaceAll(r.stdout, " ", ""), want) {
			t.Fatalf("history lacks %s: %s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "health.check") {
		t.Fatalf("--no-history recorded a call: %s", r.stdout)
	}
}
