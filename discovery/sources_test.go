package discovery

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func TestFamilySplit(t *testing.T) {
	m := NewFamilyMatcher([]string{"myprimal"}, "westgate-tower-155f")
	cases := []struct{ in, name, fam string }{
		{"beardog", "beardog", ""},
		{"beardog-nat0", "beardog", "nat0"},
		{"neural-api-westgate-tower-155f", "neural-api", "westgate-tower-155f"},
		{"neural-api", "neural-api", ""},
		{"biomeos-api-fam-1", "biomeos-api", "fam-1"},
		{"biomeos-fam-1", "biomeos", "fam-1"},
		{"myprimal-a-b-c", "myprimal", "a-b-c"},
		// unknown primal carrying a family already seen
		{"odd-thing-westgate-tower-155f", "odd-thing", "westgate-tower-155f"},
		// unknown primal, unknown family: not split at the first dash
		{"odd-thing-x", "odd-thing-x", ""},
		{"beardog-", "beardog-", ""},
		{"", "", ""},
	}
	for _, c := range cases {
		n, f := m.Split(c.in)
		if n != c.name || f != c.fam {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c.in, n, f, c.name, c.fam)
		}
	}
}

func TestSocketDirSource(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "beardog-westgate-tower-155f.sock", ipctest.Config{})
	serve(t, dir, "squirrel.sock", ipctest.Config{})
	serve(t, dir, "rhizocrypt.tarpc.sock", ipctest.Config{})
	if err := os.Symlink("squirrel.sock", filepath.Join(dir, "ai.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("gone.sock", filepath.Join(dir, "dag.sock")); err != nil {
		t.Fatal(err)
	}
	staleFile(t, filepath.Join(dir, "lost-westgate-tower-155f.sock"))
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "plain.sock"), []byte("x"), 0o600)
	notDir := filepath.Join(dir, "notes.txt")

	src := &SocketDirSource{Dirs: []string{dir, notDir, filepath.Join(dir, "missing")}}
	fs, err := src.Discover(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Errorf("unreadable dirs not reported: %v", err)
	}
	got := map[string]Found{}
	for _, f := range fs {
		got[filepath.Base(f.Endpoint.Path)] = f
	}
	if f := got["beardog-westgate-tower-155f.sock"]; f.Name != "beardog" || f.Family != "westgate-tower-155f" || f.Source != SrcSocketDir {
		t.Errorf("family socket: %+v", f)
	}
	if f := got["lost-westgate-tower-155f.sock"]; f.Name != "lost" || f.Family != "westgate-tower-155f" {
		t.Errorf("unknown primal with a known family: %+v", f)
	}
	if f := got["rhizocrypt.tarpc.sock"]; f.Kind != KindTarpc || !f.NoProbe || f.Name != "rhizocrypt.tarpc" {
		t.Errorf("tarpc: %+v", f)
	}
	if f := got["ai.sock"]; f.Source != SrcSymlink || !f.Alias || f.Name != "ai" {
		t.Errorf("symlink: %+v", f)
	}
	if f := got["dag.sock"]; f.Alias || !strings.Contains(f.Note, "dangling") {
		t.Errorf("dangling symlink: %+v", f)
	}
	if f := got["plain.sock"]; !strings.Contains(f.Note, "not a socket") {
		t.Errorf("plain file: %+v", f)
	}
	if _, ok := got["notes.txt"]; ok {
		t.Error("non-socket name listed")
	}
}

func TestSocketDirUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory")
	}
	dir := tempDir(t)
	sub := filepath.Join(dir, "locked")
	os.Mkdir(sub, 0o000)
	defer os.Chmod(sub, 0o700)
	_, err := (&SocketDirSource{Dirs: []string{sub}}).Discover(ctxT(t))
	if err == nil {
		t.Fatal("no error for an unreadable directory")
	}
}

func TestEnvSource(t *testing.T) {
	env := []string{
		"BEARDOG_SOCKET=/run/x/beardog.sock",
		"AI_SOCKET=unix:///run/x/squirrel.sock",
		"NEURAL_API_SOCKET=/run/x/neural-api-fam.sock",
		"DISCOVERY_SOCKET=/run/x/discovery.sock",
		"TOWER_SOCKET=tcp://127.0.0.1:9200",
		"EVIL_SOCKET=stdio:rm -rf /",
		"EMPTY_SOCKET=",
		"_SOCKET=/x",
		"BIOMEOS_SOCKET_DIR=/run/x",
		"PATH=/usr/bin",
	}
	fs, err := (&EnvSource{Environ: func() []string { return env }, Matcher: NewFamilyMatcher(nil)}).Discover(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Found{}
	for _, f := range fs {
		got[f.Detail] = f
	}
	if len(got) != 5 {
		t.Fatalf("found %d, want 5: %+v", len(got), fs)
	}
	if f := got["BEARDOG_SOCKET"]; f.Name != "beardog" || f.Alias || f.Endpoint.Path != "/run/x/beardog.sock" {
		t.Errorf("%+v", f)
	}
	if f := got["AI_SOCKET"]; f.Name != "ai" || !f.Alias {
		t.Errorf("domain env is not an alias: %+v", f)
	}
	if f := got["NEURAL_API_SOCKET"]; f.Name != "neural-api" || f.Kind != KindNeural || f.Family != "fam" {
		t.Errorf("%+v", f)
	}
	if f := got["DISCOVERY_SOCKET"]; f.Kind != KindRegistry {
		t.Errorf("%+v", f)
	}
	if f := got["TOWER_SOCKET"]; f.Endpoint.Transport != ipc.TCP {
		t.Errorf("%+v", f)
	}
}

func TestManifestSource(t *testing.T) {
	dir := tempDir(t)
	os.WriteFile(filepath.Join(dir, "nestgate.json"), []byte(`{"socket_path":"/run/x/nestgate.sock","capabilities":["storage","crypto"]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"primal":"loamspine","socket":"unix:///run/x/loam.sock","family_id":"f1"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "tcp.json"), []byte(`{"primal":"tower","tcp_port":9300}`), 0o600)
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(`{"socket_path":`), 0o600)
	os.WriteFile(filepath.Join(dir, "none.json"), []byte(`{"primal":"x"}`), 0o600)
	os.WriteFile(filepath.Join(dir, "cmd.json"), []byte(`{"primal":"x","endpoint":"stdio:\"sh -c id\""}`), 0o600)
	os.WriteFile(filepath.Join(dir, "readme.md"), []byte(`x`), 0o600)
	fs, err := (&ManifestSource{Dirs: []string{dir}}).Discover(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "bad.json") || !strings.Contains(err.Error(), "cmd.json") {
		t.Errorf("bad manifests not reported: %v", err)
	}
	if len(fs) != 3 {
		t.Fatalf("found %d: %+v", len(fs), fs)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Name < fs[j].Name })
	if fs[0].Name != "loamspine" || fs[0].Family != "f1" || fs[0].Endpoint.Path != "/run/x/loam.sock" {
		t.Errorf("%+v", fs[0])
	}
	if fs[1].Name != "nestgate" || !reflect.DeepEqual(fs[1].Capabilities, []string{"storage", "crypto"}) {
		t.Errorf("%+v", fs[1])
	}
	if fs[2].Endpoint.Address != "127.0.0.1:9300" {
		t.Errorf("%+v", fs[2])
	}
	if fs, err := (&ManifestSource{Dirs: []string{filepath.Join(dir, "nope")}}).Discover(ctxT(t)); fs != nil || err != nil {
		t.Errorf("missing dir: %v %v", fs, err)
	}
}

func TestRegistryFile(t *testing.T) {
	dir := tempDir(t)
	a := filepath.Join(dir, "a.json")
	os.WriteFile(a, []byte(`{"version":"1.0","entries":[{"primal":"reg-live","socket":"/run/x/reg.sock","capabilities":["x"]},{"primal":"bad"}]}`), 0o600)
	b := filepath.Join(dir, "b.json")
	os.WriteFile(b, []byte(`{"orchestration":"/run/x/songbird-nat0.sock","security":"/run/x/beardog-nat0.sock","ai":"/run/x/squirrel.sock","version":"2"}`), 0o600)
	fs, err := (&RegistryFileSource{Paths: []string{a, b, filepath.Join(dir, "missing.json")}}).Discover(ctxT(t))
	if err == nil || !strings.Contains(err.Error(), "1 entries") {
		t.Errorf("skipped entry not reported: %v", err)
	}
	got := map[string]Found{}
	for _, f := range fs {
		got[f.Name] = f
	}
	if f := got["reg-live"]; f.Endpoint.Path != "/run/x/reg.sock" || len(f.Capabilities) != 1 || f.Detail != a {
		t.Errorf("%+v", f)
	}
	if f := got["orchestration"]; f.Endpoint.Path != "/run/x/songbird-nat0.sock" || !f.Alias {
		t.Errorf("flat map entries are capability aliases: %+v", f)
	}
	if f := got["ai"]; !f.Alias {
		t.Errorf("%+v", f)
	}
	if len(got) != 4 {
		t.Errorf("got %v", got)
	}
}

func TestLeanSource(t *testing.T) {
	rt := tempDir(t)
	app := filepath.Join(rt, "floatd")
	os.Mkdir(app, 0o700)
	serve(t, app, "floatd.sock", ipctest.LeanDaemon())
	os.WriteFile(filepath.Join(app, "floatd.pid"), []byte("999999999\n"), 0o600)
	// A socket without a pid file is not a lean daemon.
	other := filepath.Join(rt, "nopid")
	os.Mkdir(other, 0o700)
	serve(t, other, "nopid.sock", ipctest.LeanDaemon())
	// biomeos is skipped.
	bio := filepath.Join(rt, "biomeos")
	os.Mkdir(bio, 0o700)
	serve(t, bio, "biomeos.sock", ipctest.Config{})
	os.WriteFile(filepath.Join(bio, "biomeos.pid"), []byte("1"), 0o600)
	fs, err := (&LeanSource{Roots: []string{rt}}).Discover(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Name != "floatd" || fs[0].Wire != "lean" || fs[0].Kind != KindLean {
		t.Fatalf("%+v", fs)
	}
	if !strings.Contains(fs[0].Note, "not running") {
		t.Errorf("dead pid not noted: %+v", fs[0])
	}
}

func TestProcSource(t *testing.T) {
	root := tempDir(t)
	cwd := filepath.Join(root, "cwd")
	os.Mkdir(cwd, 0o700)
	os.WriteFile(filepath.Join(cwd, "bus.json"), []byte(`{"pools":[{"id":"echo","command":"node","args":["echo.js"],"instances":2},{"id":"acp","command":"x"}],"limits":{}}`), 0o600)
	mk := func(pid string, args ...string) {
		d := filepath.Join(root, pid)
		os.Mkdir(d, 0o700)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o600)
		os.Symlink(cwd, filepath.Join(d, "cwd"))
	}
	mk("100", "/usr/local/bin/stdio_bus", "--config", "bus.json", "--unix", "/run/bus/agents.sock")
	mk("101", "stdio_bus", "--tcp=127.0.0.1:9800")
	mk("102", "stdio_bus", "--config", "bus.json")
	mk("103", "/usr/bin/bash", "--unix", "/x")
	os.Mkdir(filepath.Join(root, "self"), 0o700)
	fs, err := (&ProcSource{Root: root}).Discover(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Name+"|"+f.Pool+"|"+f.Endpoint.String())
	}
	sort.Strings(got)
	want := []string{
		"agents/acp|acp|/run/bus/agents.sock",
		"agents/echo|echo|/run/bus/agents.sock",
		"stdio_bus@127.0.0.1:9800||tcp://127.0.0.1:9800",
		"stdio_bus[102]||?",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	for _, f := range fs {
		if f.Kind != KindBus {
			t.Errorf("kind %v", f.Kind)
		}
	}
}

func TestParseBusCmdline(t *testing.T) {
	b, ok := ParseBusCmdline([]byte("stdio_bus\x00--unix=/a.sock\x00--config\x00c.json\x00"))
	if !ok || b.Unix != "/a.sock" || b.Config != "c.json" || b.Stdio {
		t.Errorf("%+v %v", b, ok)
	}
	b, ok = ParseBusCmdline([]byte("stdio_bus\x00--config"))
	if !ok || !b.Stdio || b.Config != "" {
		t.Errorf("%+v %v", b, ok)
	}
	if _, ok := ParseBusCmdline([]byte("python3\x00stdio_bus")); ok {
		t.Error("a non-bus matched")
	}
}

func TestConfigSource(t *testing.T) {
	dir := tempDir(t)
	busCfg := filepath.Join(dir, "bus.json")
	os.WriteFile(busCfg, []byte(`{"pools":[{"id":"a"},{"id":"b"}]}`), 0o600)
	c, err := config.Parse([]byte(`
[[target]]
name = "tower"
endpoint = "tcp://10.0.0.5:9200"
aliases = ["remote-songbird"]

[[target]]
name = "holon"
endpoint = "ws://127.0.0.1:8080/rpc"
wire = "holon"

[[target]]
name = "tool"
endpoint = 'stdio:"mytool --serve"'

[[bus]]
name = "agents"
config = "` + busCfg + `"
unix = "/run/bus.sock"

[[bus]]
name = "local"
command = "stdio_bus --stdio"
pools = ["p"]
`))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := (&ConfigSource{Config: c}).Discover(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	targets := merge(fs)
	var got []string
	for _, t := range targets {
		got = append(got, t.Name+"|"+strings.Join(t.Aliases, ",")+"|"+t.Pool+"|"+string(t.State()))
	}
	want := []string{
		"agents/a||a|unknown", "agents/b||b|unknown", "holon|||unknown",
		"local/p||p|unprobed", "tool|||unprobed", "tower|remote-songbird||unknown",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

// TestProcSourceRealProcess finds a running "stdio_bus" in the real /proc.
func TestProcSourceRealProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("no /proc")
	}
	dir := tempDir(t)
	cfg := filepath.Join(dir, "bus.json")
	os.WriteFile(cfg, []byte(`{"pools":[{"id":"echo","command":"cat"}]}`), 0o600)
	sock := filepath.Join(dir, "agents.sock")
	// A shell whose argv[0] says stdio_bus: the process table is all
	// ProcSource reads. It waits on a builtin read (a forked child would
	// carry the same command line for a moment and be listed twice).
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	cmd := exec.Command("/bin/sh", "-c", "read x", "x", "--unix", sock, "--config", cfg)
	cmd.Args[0] = "stdio_bus"
	cmd.Stdin = pr
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	pr.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var got []Found
	for i := 0; i < 50 && len(got) == 0; i++ {
		fs, _ := (&ProcSource{}).Discover(ctxT(t))
		for _, f := range fs {
			if f.Endpoint.Path == sock {
				got = append(got, f)
			}
		}
		if len(got) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(got) != 1 || got[0].Pool != "echo" || got[0].Name != "agents/echo" || got[0].Kind != KindBus {
		t.Fatalf("%+v", got)
	}
}

// TestProcSourceWithin: a confined process-table source lists the buses
// listening in its directories, and those its own process started, and no
// other bus on the machine.
func TestProcSourceWithin(t *testing.T) {
	root := tempDir(t)
	mine := filepath.Join(root, "demo")
	os.Mkdir(mine, 0o700)
	mk := func(pid, ppid string, args ...string) {
		d := filepath.Join(root, pid)
		os.Mkdir(d, 0o700)
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(strings.Join(args, "\x00")+"\x00"), 0o600)
		os.WriteFile(filepath.Join(d, "stat"), []byte(pid+" (stdio bus) S "+ppid+" 1 1 0"), 0o600)
		os.Symlink(root, filepath.Join(d, "cwd"))
	}
	mk("100", "1", "stdio_bus", "--unix", filepath.Join(mine, "stdiobus.sock"))
	mk("200", "1", "stdio_bus", "--unix", "/run/other/stdiobus.sock")
	mk("300", "1", "stdio_bus", "--unix", filepath.Join(root, "demo-other", "x.sock")) // a prefix, not inside
	mk("400", "42", "stdio_bus", "--tcp", "127.0.0.1:9800")                            // a child of process 42
	mk("500", "400", "stdio_bus", "--tcp", "127.0.0.1:9801")                           // its grandchild
	mk("600", "7", "stdio_bus", "--tcp", "127.0.0.1:9802")
	list := func(s *ProcSource) []string {
		fs, err := s.Discover(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range fs {
			got = append(got, f.Endpoint.String())
		}
		sort.Strings(got)
		return got
	}
	got := list(&ProcSource{Root: root, Within: []string{mine}, Parent: 42})
	want := []string{filepath.Join(mine, "stdiobus.sock"), "tcp://127.0.0.1:9800", "tcp://127.0.0.1:9801"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("confined: got %q\nwant %q", got, want)
	}
	if all := list(&ProcSource{Root: root}); len(all) != 6 {
		t.Errorf("unconfined: %q", all)
	}
}

// TestConfinedSources: a confined discoverer reads its socket directories
// only: not the environment, not the runtime directory, not the config
// file's targets.
func TestConfinedSources(t *testing.T) {
	dir, rt := tempDir(t), tempDir(t)
	serve(t, dir, "mine.sock", primal("mine", false).Config())
	os.MkdirAll(filepath.Join(rt, "ecoPrimals"), 0o700)
	serve(t, filepath.Join(rt, "ecoPrimals"), "runtime.sock", primal("runtime", false).Config())
	other := tempDir(t)
	serve(t, other, "fromenv.sock", primal("fromenv", false).Config())
	getenv, environ := envOf(map[string]string{"XDG_RUNTIME_DIR": rt, "FROMENV_SOCKET": filepath.Join(other, "fromenv.sock")})
	sweep := func(confine bool) []string {
		d := New(Options{Getenv: getenv, Environ: environ, SocketDirs: []string{dir}, NoProc: true, Confine: confine,
			Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: time.Second}})
		snap, err := d.Sweep(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := names(snap.Targets)
		sort.Strings(got)
		return got
	}
	if got := sweep(false); !reflect.DeepEqual(got, []string{"fromenv", "mine", "runtime"}) {
		t.Fatalf("unconfined: %q (the test's premise)", got)
	}
	if got := sweep(true); !reflect.DeepEqual(got, []string{"mine"}) {
		t.Errorf("confined: %q, want only mine", got)
	}
}
