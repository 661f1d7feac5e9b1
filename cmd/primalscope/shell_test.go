package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestUsageErrorsExit2EveryCommand: every way of using a command wrongly
// exits 2, prints nothing on stdout, and says what was wrong on stderr.
func TestUsageErrorsExit2EveryCommand(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir()}
	db := "--history=" + filepath.Join(t.TempDir(), "h.db")
	cases := [][]string{
		{"bogus"},
		{"cal"},
		{"--no-such-flag"},
		{"--timeout", "soon", "ls"},
		{"--timeout", "-1s", "ls"},
		{"--color", "sometimes", "ls"},
		{"--wire", "morse", "history", db},
		{"--prefix", "maybe", "caps", "x"},
		{"--btsp-cipher", "rot13", "call", "x", "y"},
		{"--max-frame", "0", "ls"},
		{"--theme", "no-such-theme", "version"},
		{"help", "no-such-topic"},
	}
	for _, c := range []struct {
		path    []string
		badArgs []string // a wrong number of arguments, when there is one
		badVal  []string // a bad flag value, when the command has such a flag
	}{
		{[]string{"call"}, []string{"x"}, []string{"--jq", ".a | }", "x", "y"}},
		{[]string{"caps"}, []string{}, []string{"--jq", "[", "x"}},
		{[]string{"ls"}, []string{"x"}, []string{"--every", "often"}},
		{[]string{"check"}, nil, []string{"--level", "7"}},
		{[]string{"map"}, []string{"a", "b"}, []string{"--fail-on", "nope"}},
		{[]string{"tail"}, nil, []string{"--interval", "0s", "x"}},
		{[]string{"history"}, nil, []string{"--outcome", "maybe", db}},
		{[]string{"history", "save"}, []string{"1"}, []string{db, "one", "name"}},
		{[]string{"history", "export"}, []string{}, []string{db, "404"}},
		{[]string{"replay"}, []string{}, []string{db, "404"}},
		{[]string{"demo"}, []string{"x"}, []string{"--tick", "fast"}},
		{[]string{"run"}, []string{}, []string{"--tap", "--json", "x.yaml"}},
		{[]string{"mock"}, []string{}, []string{"--latency", "fast", "x"}},
		{[]string{"mock", "verify"}, []string{}, []string{"--ignore", "nope", "x"}},
		{[]string{"version"}, []string{"x"}, []string{"--jq", "{"}},
		{[]string{"help"}, nil, nil},
		{[]string{"completion"}, []string{"x"}, nil},
		{[]string{"completion", "bash"}, []string{"x"}, []string{"--no-descriptions=maybe"}},
		{[]string{"completion", "zsh"}, []string{"x"}, []string{"--no-descriptions=maybe"}},
		{[]string{"completion", "fish"}, []string{"x"}, []string{"--no-descriptions=maybe"}},
		{[]string{"completion", "powershell"}, []string{"x"}, []string{"--no-descriptions=maybe"}},
	} {
		cases = append(cases, append(append([]string{}, c.path...), "--no-such-flag"))
		if c.badArgs != nil {
			cases = append(cases, append(append([]string{}, c.path...), c.badArgs...))
		}
		if c.badVal != nil {
			cases = append(cases, append(append([]string{}, c.path...), c.badVal...))
		}
	}
	// Every command has its cases here: a new one must add them.
	covered := map[string]bool{}
	for _, args := range cases {
		covered[strings.Join(args, " ")] = true
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasParent() && !c.Hidden {
			path := strings.TrimPrefix(c.CommandPath(), "primalscope ")
			if !covered[path+" --no-such-flag"] {
				t.Errorf("no usage-error case for %q", path)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk((&app{io: &stdio{}, getenv: func(string) string { return "" }}).rootCmd())
	for _, args := range cases {
		r := runCLI(t, env, "", args...)
		if r.code != exitUsage || r.stdout != "" || !strings.HasPrefix(r.stderr, "primalscope: ") {
			t.Errorf("%q: exit %d, want 2 (stdout %q, stderr %q)", args, r.code, r.stdout, r.stderr)
		}
	}
	r := runCLI(t, env, "", "cal")
	if !strings.Contains(r.stderr, "Did you mean this?") || !strings.Contains(r.stderr, "call") {
		t.Errorf("no suggestion for a near miss: %q", r.stderr)
	}
	r = runCLI(t, env, "", "completion", "bsh")
	if r.code != exitUsage || !strings.Contains(r.stderr, "Did you mean this?") || !strings.Contains(r.stderr, "bash") {
		t.Errorf("no suggestion for a near miss of a subcommand: %+v", r)
	}
}

// TestREADMEExitCodes: the README's exit-code table lists every code and
// says what a usage error is.
func TestREADMEExitCodes(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "### Exit codes")
	if i < 0 {
		t.Fatal("README has no exit-code section")
	}
	section := text[i:]
	if j := strings.Index(section[4:], "\n## "); j >= 0 {
		section = section[:j+4]
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| (.*)\|$`).FindAllStringSubmatch(section, -1) {
		rows[m[1]] = m[2]
	}
	for _, code := range []int{exitOK, exitPeer, exitUsage, exitConnect, exitTimeout, exitSecurity, 130} {
		if rows[strconv.Itoa(code)] == "" {
			t.Errorf("README's table lacks exit code %d", code)
		}
	}
	for _, want := range []string{"unknown command", "unknown flag", "bad flag value", "number of arguments", "--jq"} {
		if !strings.Contains(rows["2"], want) {
			t.Errorf("README's exit 2 does not mention %q: %s", want, rows["2"])
		}
	}
	if !strings.Contains(section, "every command") {
		t.Error("README should say the codes hold for every command")
	}
	// The help topic says the same.
	r := runCLI(t, nil, "", "help", "exit-codes")
	for _, want := range []string{"unknown command", "unknown flag", "bad flag value", "130"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("help exit-codes lacks %q: %+v", want, r)
		}
	}
}

func TestVersion(t *testing.T) {
	v := versionFrom(&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/ecoPrimals/primalscope", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-24T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"}, {Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"}}}, true)
	if v.Version != "v0.4.0" || v.Commit != "0123456789abcdef0123" || !v.Modified || v.Date != "2026-11-24T10:00:00Z" || v.Platform != "linux/arm64" {
		t.Fatalf("%+v", v)
	}
	if s := v.String(); s != "primalscope v0.4.0 (commit 0123456789ab, modified, 2026-11-24T10:00:00Z) go1.26.8 linux/arm64" {
		t.Fatalf("%q", s)
	}
	// Static or not, from the build's CGO_ENABLED (README installs the
	// static binary; BENCHMARKS' figures say which they were taken with).
	for cgo, want := range map[string]string{"0": " static (CGO_ENABLED=0)", "1": " dynamic (CGO_ENABLED=1)"} {
		sv := versionFrom(&debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{{Key: "CGO_ENABLED", Value: cgo}}}, true)
		if sv.Static == nil || *sv.Static != (cgo == "0") || !strings.HasSuffix(sv.String(), want) {
			t.Fatalf("CGO_ENABLED=%s: %+v %q", cgo, sv, sv.String())
		}
		b, _ := json.Marshal(sv)
		if !strings.Contains(string(b), fmt.Sprintf(`"static":%v`, cgo == "0")) {
			t.Fatalf("CGO_ENABLED=%s: --json %s", cgo, b)
		}
	}
	devel := versionFrom(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true)
	if !strings.Contains(devel.String(), "(devel)") || !strings.Contains(devel.String(), "commit unknown") {
		t.Fatalf("%q", devel.String())
	}
	if none := versionFrom(nil, false); none.Version != "unknown" || none.GoVersion == "" {
		t.Fatalf("%+v", none)
	}

	r := runCLI(t, nil, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "primalscope ") || !strings.Contains(r.stdout, "go1.") {
		t.Fatalf("--version: %+v", r)
	}
	r2 := runCLI(t, nil, "", "version")
	if r2.stdout != r.stdout {
		t.Fatalf("version and --version differ: %q %q", r2.stdout, r.stdout)
	}
	r = runCLI(t, nil, "", "version", "--json")
	var doc map[string]any
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc["version"] == "" || doc["go"] == "" {
		t.Fatalf("version --json: %+v", r)
	}
	r = runCLI(t, nil, "", "version", "--jq", ".go")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "go1.") {
		t.Fatalf("version --jq .go: %+v", r)
	}
}

// shellPeers starts ipctest peers in a fresh socket directory: beardog, a
// squirrel behind an ai symlink, a family-scoped nestgate, an unknown
// primal whose family is split by its identity, a silent socket and one
// whose name would put an escape sequence in the shell.
func shellPeers(t testing.TB) (dir string, beardog *ipctest.Server) {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	start := func(name string, cfg ipctest.Config) *ipctest.Server {
		s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	p := func(name string, groups ...ipctest.Group) *ipctest.Primal {
		return &ipctest.Primal{Name: name, Version: "1.0.0", Format: ipctest.FormatStandard, Groups: groups}
	}
	beardog = start("beardog.sock", p("beardog", ipctest.Group{Type: "crypto", Methods: []string{"sign", "verify"}}).Config())
	start("squirrel.sock", p("squirrel", ipctest.Group{Type: "ai", Methods: []string{"complete"}}).Config())
	if err := os.Symlink("squirrel.sock", filepath.Join(dir, "ai.sock")); err != nil {
		t.Fatal(err)
	}
	start("nestgate-fam1.sock", p("nestgate", ipctest.Group{Type: "storage", Methods: []string{"put"}}).Config())
	start("beta-west-tower-1.sock", p("beta", ipctest.Group{Type: "beta", Methods: []string{"ping"}}).Config())
	start("lostprimal.sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	start("ev\x1b]0;x\x07il.sock", p("evil").Config())
	return dir, beardog
}

// complete runs `primalscope __complete ARGS...` and returns the words
// offered and the directive.
func complete(t *testing.T, env map[string]string, args ...string) (words []string, directive string) {
	t.Helper()
	r := runCLI(t, env, "", append([]string{"__complete"}, args...)...)
	if r.code != 0 {
		t.Fatalf("__complete %q: %+v", args, r)
	}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if strings.HasPrefix(line, ":") {
			directive = line
			continue
		}
		if line != "" {
			w, _, _ := strings.Cut(line, "\t")
			words = append(words, w)
		}
	}
	return words, directive
}

func has(words []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, x := range words {
			found = found || x == w
		}
		if !found {
			return false
		}
	}
	return true
}

func completionEnv(t *testing.T) map[string]string {
	// Stale caches are swept again at once, in-process (the background
	// refresh a real shell gets is tested end to end in tmux).
	return map[string]string{"HOME": t.TempDir(), "XDG_CACHE_HOME": t.TempDir(), "XDG_CONFIG_HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir(),
		"PRIMALSCOPE_COMPLETE_SYNC": "1"}
}

// completeSettled completes until want is offered, making the cache old
// between tries: a sweep is cut at its budget, so on a loaded machine the
// first may not finish probing every target (what a later one learns is
// kept). At most a few tries.
func completeSettled(t *testing.T, env map[string]string, want []string, args ...string) ([]string, string) {
	t.Helper()
	var words []string
	var d string
	for try := 0; try < 8; try++ {
		words, d = complete(t, env, args...)
		if has(words, want...) {
			return words, d
		}
		ageCache(t, env)
	}
	return words, d
}

func ageCache(t *testing.T, env map[string]string) {
	t.Helper()
	path := filepath.Join(env["XDG_CACHE_HOME"], "primalscope", "complete-targets.json")
	var c completionCache
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return
	}
	c.Time = time.Now().Add(-time.Minute)
	b, _ = json.Marshal(c)
	os.WriteFile(path, b, 0o600)
}

func TestCompleteTarget(t *testing.T) {
	dir, _ := shellPeers(t)
	env := completionEnv(t)
	sd := "--socket-dir=" + dir
	words, dir9 := completeSettled(t, env, []string{"beta"}, "call", sd, "")
	if !has(words, "beardog", "squirrel", "ai", "nestgate", "nestgate-fam1", "beta", "beta-west-tower-1", "lostprimal") || dir9 != ":4" {
		t.Fatalf("TARGET completions %q %s", words, dir9)
	}
	for _, w := range words {
		if !completable(w) {
			t.Fatalf("a word a shell cannot take: %q", w)
		}
	}
	if words, _ := complete(t, env, "call", sd, "be"); !has(words, "beardog", "beta", "beta-west-tower-1") || has(words, "ai") {
		t.Fatalf("prefix be: %q", words)
	}
	for _, args := range [][]string{{"caps", sd, "bear"}, {"check", sd, "bear"}, {"tail", sd, "beardog", "bear"}, {"history", "--target", "bear"}, {"replay", sd, "1", "--target", "bear"}} {
		if args[0] == "history" {
			args = append([]string{sd}, args...)
		}
		if words, _ := complete(t, env, args...); !has(words, "beardog") {
			t.Errorf("%q: %q", args, words)
		}
	}
	if words, _ := complete(t, env, "caps", sd, "beardog", ""); len(words) != 0 {
		t.Errorf("caps takes one TARGET: %q", words)
	}
	if words, _ := complete(t, env, "ls", sd, "--family", ""); !has(words, "fam1", "west-tower-1") {
		t.Errorf("--family: %q", words)
	}
	// A path completes as a file, by the shell.
	if _, d := complete(t, env, "call", sd, "/tm"); d != ":0" {
		t.Errorf("a path: directive %s, want the shell's files (:0)", d)
	}
}

func TestCompleteMethod(t *testing.T) {
	dir, beardog := shellPeers(t)
	env := completionEnv(t)
	sd := "--socket-dir=" + dir
	words, d := completeSettled(t, env, []string{"crypto.sign"}, "call", sd, "beardog", "")
	if !has(words, "crypto.sign", "crypto.verify", "health.liveness", "capabilities.list") || d != ":4" {
		t.Fatalf("METHOD completions %q %s", words, d)
	}
	if words, _ := complete(t, env, "call", sd, "beardog", "crypto.s"); len(words) != 1 || words[0] != "crypto.sign" {
		t.Fatalf("prefix crypto.s: %q", words)
	}
	for _, name := range []string{"ai", "beta-west-tower-1"} {
		if words, _ := complete(t, env, "call", sd, name, ""); len(words) == 0 {
			t.Errorf("no methods for %s", name)
		}
	}
	// A family-scoped socket (a known primal's name with a family) gets
	// nothing in cleartext: without a seed, completion does not ask it.
	if words, _ := complete(t, env, "call", sd, "nestgate-fam1", ""); len(words) != 0 {
		t.Errorf("methods for the family-scoped nestgate-fam1 without a seed: %q", words)
	}
	// A target given by path is asked directly.
	before := beardog.Calls()
	if words, _ := complete(t, env, "call", beardog.Path, "crypto."); !has(words, "crypto.sign") {
		t.Fatalf("by path: %q", words)
	}
	if beardog.Calls() == before {
		t.Fatal("the path's methods were not asked of the peer")
	}
	if words, _ := complete(t, env, "call", sd, "beardog", "crypto.sign", ""); len(words) != 0 {
		t.Errorf("PARAMS: %q", words)
	}
}

// TestCompleteIsBounded: a socket that never answers costs the shell no
// more than the completion budget (bounds with a generous margin).
func TestCompleteIsBounded(t *testing.T) {
	dir, _ := shellPeers(t)
	env := completionEnv(t)
	sd := "--socket-dir=" + dir
	start := time.Now()
	words, _ := complete(t, env, "call", sd, "lostprimal", "")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("METHOD of a silent peer took %v", took)
	}
	if len(words) != 0 {
		t.Fatalf("methods from a silent peer: %q", words)
	}
	start = time.Now()
	complete(t, env, "call", "--socket-dir="+dir, "--family=other", "")
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("a TARGET sweep took %v", took)
	}
}

// TestCompleteCache: a sweep is kept a few seconds in
// $XDG_CACHE_HOME/primalscope and reused; an old one, or one made for other
// socket directories, is not.
func TestCompleteCache(t *testing.T) {
	dir, _ := shellPeers(t)
	env := completionEnv(t)
	sd := "--socket-dir=" + dir
	complete(t, env, "call", sd, "")
	path := filepath.Join(env["XDG_CACHE_HOME"], "primalscope", "complete-targets.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Fatalf("cache file: %v %v", fi, err)
	}
	s, err := ipctest.Listen(filepath.Join(dir, "newcomer.sock"), (&ipctest.Primal{Name: "newcomer", Format: ipctest.FormatStandard}).Config())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if words, _ := complete(t, env, "call", sd, ""); has(words, "newcomer") {
		t.Fatal("a fresh cache was not used")
	}
	// Another socket directory: not this cache.
	other, _ := shellPeers(t)
	if words, _ := complete(t, env, "call", "--socket-dir="+other, "lost"); !has(words, "lostprimal") {
		t.Fatalf("other dir: %q", words)
	}
	// Age the cache of the first directory: a new sweep sees the newcomer.
	var c completionCache
	a := &app{getenv: func(k string) string { return env[k] }, socketDirs: []string{dir}}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Key == a.completionKey() {
		t.Fatal("the cache holds the first directory's sweep after the other's")
	}
	complete(t, env, "call", sd, "")
	ageCache(t, env)
	if words, _ := complete(t, env, "call", sd, ""); !has(words, "newcomer") {
		t.Fatalf("a stale cache was used: %q", words)
	}
	// A broken cache file is ignored.
	os.WriteFile(path, []byte("{not json"), 0o600)
	if words, _ := complete(t, env, "call", sd, "bear"); !has(words, "beardog") {
		t.Fatalf("broken cache: %q", words)
	}
}

func TestCompleteFlagValues(t *testing.T) {
	env := completionEnv(t)
	themeDir := filepath.Join(env["XDG_CONFIG_HOME"], "primalscope", "themes")
	os.MkdirAll(themeDir, 0o700)
	if err := os.WriteFile(filepath.Join(themeDir, "solar.toml"), []byte("name = \"solar\"\nbase = \"light\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"call", "--wire", ""}, []string{"auto", "jsonrpc", "lean", "holon"}},
		{[]string{"ls", "--color", ""}, []string{"auto", "always", "never"}},
		{[]string{"call", "--btsp-cipher", ""}, []string{"auto", "chacha20_poly1305", "hmac_plain", "negotiate", "null"}},
		{[]string{"caps", "--prefix", ""}, []string{"auto", "on", "off"}},
		{[]string{"history", "export", "--as", ""}, []string{"command", "socat", "json"}},
		{[]string{"history", "--outcome", ""}, []string{"ok", "error", "timeout"}},
		{[]string{"--theme", ""}, []string{"dark", "light", "high-contrast", "solar"}},
		{[]string{"help", ""}, []string{"targets", "exit-codes", "config", "call"}},
	} {
		words, d := complete(t, env, c.args...)
		if !has(words, c.want...) || d != ":4" {
			t.Errorf("%q: %q %s, want %q", c.args, words, d, c.want)
		}
	}
	if words, _ := complete(t, env, "--color", "al"); len(words) != 1 || words[0] != "always" {
		t.Errorf("--color al: %q", words)
	}
}

func TestCompleteHistoryRefs(t *testing.T) {
	env := completionEnv(t)
	db := filepath.Join(t.TempDir(), "h.db")
	hf := "--history=" + db
	// No database yet: nothing offered, and none created.
	if words, _ := complete(t, env, "replay", hf, ""); len(words) != 0 {
		t.Fatalf("%q", words)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Fatal("completion created the history database")
	}
	now := time.Now()
	ids := seedHistory(t, db,
		history.Entry{Time: now.Add(-time.Minute), Target: "beardog", Endpoint: "unix:///x.sock", Method: "crypto.sign", Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)},
		history.Entry{Time: now, Target: "nestgate", Endpoint: "unix:///y.sock", Method: "storage.put", Outcome: history.OutcomeError})
	if r := runCLI(t, env, "", "history", "save", hf, strconv.FormatInt(ids[0], 10), "daily-sign"); r.code != 0 {
		t.Fatal(r)
	}
	id0, id1 := strconv.FormatInt(ids[0], 10), strconv.FormatInt(ids[1], 10)
	for _, args := range [][]string{{"replay", hf, ""}, {"history", "export", hf, ""}} {
		words, _ := complete(t, env, args...)
		if !has(words, "daily-sign", id0, id1) {
			t.Errorf("%q: %q", args, words)
		}
	}
	if words, _ := complete(t, env, "history", "save", hf, ""); !has(words, id0, id1) || has(words, "daily-sign") {
		t.Errorf("history save ID: %q", words)
	}
	if words, _ := complete(t, env, "history", hf, "--method", "cry"); len(words) != 1 || words[0] != "crypto.sign" {
		t.Errorf("--method: %q", words)
	}
	if words, _ := complete(t, env, "replay", hf, "daily-sign", ""); len(words) != 0 {
		t.Errorf("replay takes one ref: %q", words)
	}
}

// TestJQEveryJSONCommand: --jq filters the JSON of ls, caps, check,
// history, tail (each line) and call (the result).
func TestJQEveryJSONCommand(t *testing.T) {
	dir, beardog := shellPeers(t)
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + dir
	db := "--history=" + filepath.Join(t.TempDir(), "h.db")

	r := runCLI(t, env, "", "call", sd, db, "--jq", ".status", "beardog", "health.liveness")
	if r.code != 0 || r.stdout != "alive\n" {
		t.Fatalf("call --jq: %+v", r)
	}
	r = runCLI(t, env, "", "call", sd, db, "--raw", "--jq", ".result | keys", "beardog", "health.liveness")
	if r.code != 0 || strings.Join(strings.Fields(r.stdout), "") != `["status"]` {
		t.Fatalf("call --raw --jq: %+v", r)
	}
	r = runCLI(t, env, "", "ls", sd, "--no-proc", "--stale", "2s", "--jq", `.targets[] | select(.family == "fam1") | .name`)
	if r.code != 0 || r.stdout != "nestgate\n" {
		t.Fatalf("ls --jq: %+v", r)
	}
	// The family split by identity.get, as ls reports it.
	r = runCLI(t, env, "", "ls", sd, "--no-proc", "--stale", "2s", "--jq", `.targets[] | select(.name == "beta") | .family`)
	if r.code != 0 || r.stdout != "west-tower-1\n" {
		t.Fatalf("beta-west-tower-1.sock is not primal beta of family west-tower-1: %+v", r)
	}
	r = runCLI(t, env, "", "caps", sd, "--jq", ".capabilities.methods | map(select(startswith(\"crypto.\")))", "beardog")
	if r.code != 0 || strings.Join(strings.Fields(r.stdout), "") != `["crypto.sign","crypto.verify"]` {
		t.Fatalf("caps --jq: %+v", r)
	}
	r = runCLI(t, env, "", "check", sd, "--no-proc", "--stale", "2s", "--jq", ".targets[] | select(.target == \"beardog\") | .judged", "beardog")
	if r.code != 0 || r.stdout != "true\n" {
		t.Fatalf("check --jq: %+v", r)
	}
	r = runCLI(t, env, "", "history", db, "--jq", ".[].method")
	if r.code != 0 || r.stdout != "health.liveness\nhealth.liveness\n" {
		t.Fatalf("history --jq: %+v", r)
	}

	// tail: the filter runs on each line.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &lineWatcher{cancel: cancel, want: map[string]func(string) bool{
		"two lines": func() func(string) bool {
			n := 0
			return func(l string) bool { n += map[bool]int{true: 1}[l == "liveness alive\n"]; return n >= 2 }
		}(),
	}}
	var errb syncBuffer
	code := run(ctx, []string{"tail", "--interval", "50ms", "--jq", `.kind + " " + .name`, beardog.Path},
		&stdio{in: strings.NewReader(""), out: w, err: &errb}, func(k string) string { return env[k] }, nil)
	w.mu.Lock()
	if len(w.want) != 0 || code != 0 {
		t.Fatalf("tail --jq: exit %d, lines %q, stderr %s", code, w.lines, errb.String())
	}
	w.mu.Unlock()

	// ls --watch: the filter runs on each event line.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	w2 := &lineWatcher{cancel: cancel2, want: map[string]func(string) bool{
		"beardog": func(l string) bool { return l == "added beardog\n" },
		"ai":      func(l string) bool { return l == "added squirrel\n" },
	}}
	code = run(ctx2, []string{"ls", "--watch", "--no-proc", "--every", "100ms", sd, "--jq", `.event + " " + .target.name`},
		&stdio{in: strings.NewReader(""), out: w2, err: &errb}, func(k string) string { return env[k] }, nil)
	w2.mu.Lock()
	if len(w2.want) != 0 || code != 0 {
		t.Fatalf("ls --watch --jq: exit %d, lines %q, stderr %s", code, w2.lines, errb.String())
	}
	w2.mu.Unlock()

	// A bad expression: exit 2 with its position, and nothing is sent.
	before := beardog.Calls()
	r = runCLI(t, env, "", "call", sd, db, "--jq", ".status | }", "beardog", "health.liveness")
	if r.code != exitUsage || !strings.Contains(r.stderr, "column 11") || !strings.Contains(r.stderr, "          ^") || r.stdout != "" {
		t.Fatalf("bad --jq: %+v", r)
	}
	if beardog.Calls() != before {
		t.Fatal("a call was sent with a bad --jq")
	}
	r = runCLI(t, env, "", "call", sd, db, "--jq", "nosuchfunc(1)", "beardog", "health.liveness")
	if r.code != exitUsage || !strings.Contains(r.stderr, "nosuchfunc") {
		t.Fatalf("unknown function: %+v", r)
	}
	// An expression that fails on the answer: exit 2, the reason said.
	r = runCLI(t, env, "", "call", sd, "--no-history", "--jq", ".status.x", "beardog", "health.liveness")
	if r.code != exitUsage || !strings.Contains(r.stderr, "expected an object") {
		t.Fatalf("failing --jq: %+v", r)
	}
	// A hostile string printed raw is still made safe.
	evil, err := ipctest.Listen(filepath.Join(dir, "ctl.sock"), ipctest.ControlSequences())
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	r = runCLI(t, env, "", "call", "--no-history", "--jq", ".. | strings", evil.Path, "evil.do")
	noControlSequences(t, "call --jq strings", r.stdout)
}

// TestEveryCommandHasExamples: --help of every command shows examples.
func TestEveryCommandHasExamples(t *testing.T) {
	a := &app{io: &stdio{}, getenv: func(string) string { return "" }}
	root := a.rootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.Hidden && c.Name() != cobra.ShellCompRequestCmd && c.Example == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	r := runCLI(t, nil, "", "caps", "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "Examples:") || !strings.Contains(r.stdout, "--jq") {
		t.Fatalf("caps --help: %+v", r)
	}
}

// TestCompleteHostilePeer: names, methods and descriptions from a peer that
// puts terminal control sequences in everything never reach the shell.
func TestCompleteHostilePeer(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	evil, err := ipctest.Listen(filepath.Join(dir, "evil.sock"), ipctest.ControlSequences())
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	env := completionEnv(t)
	for _, args := range [][]string{
		{"call", "--socket-dir=" + dir, ""},
		{"call", "--socket-dir=" + dir, "evil", ""},
		{"call", evil.Path, ""},
	} {
		r := runCLI(t, env, "", append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("%q: %+v", args, r)
		}
		noControlSequences(t, strings.Join(args, " "), r.stdout)
		if strings.Contains(r.stdout, "evil.do") {
			t.Errorf("%q: a method name carrying escapes was offered: %q", args, r.stdout)
		}
	}
	words, _ := complete(t, env, "call", evil.Path, "")
	if !has(words, "health.liveness") {
		t.Errorf("the clean methods of a hostile peer: %q", words)
	}
}
