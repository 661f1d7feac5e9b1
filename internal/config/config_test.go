package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
[discovery]
socket_dirs = ["/run/a"]
family = "west-1"
stale_timeout = "300ms"
known_primals = ["myprimal"]

[[target]]
name = "tower"
endpoint = "tcp://10.0.0.5:9200"
aliases = ["t"]

[[bus]]
name = "agents"
unix = "/run/bus.sock"
pools = ["echo"]

[keymap]
quit = "q"
`))
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.Discovery.StaleTimeout) != 300*time.Millisecond || c.Discovery.Family != "west-1" {
		t.Errorf("%+v", c.Discovery)
	}
	if len(c.Targets) != 1 || c.Targets[0].Aliases[0] != "t" || len(c.Buses) != 1 {
		t.Errorf("%+v", c)
	}
	if len(c.Unknown) != 1 || c.Unknown[0] != "keymap" {
		t.Errorf("unknown keys: %v", c.Unknown)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{
		`[[target]]` + "\n" + `endpoint = "/x"`,
		`[[target]]` + "\n" + `name = "x"`,
		`[[target]]` + "\n" + `name = "x"` + "\n" + `endpoint = "/x"` + "\n" + `wire = "grpc"`,
		`[[bus]]` + "\n" + `name = "b"`,
		`[discovery]` + "\n" + `stale_timeout = "soon"`,
		`[discovery]` + "\n" + `stale_timeout = "-1s"`,
		`not toml [`,
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(filepath.Join(dir, "missing.toml"))
	if err != nil || c == nil || len(c.Targets) != 0 {
		t.Fatalf("missing file: %v %v", c, err)
	}
	p := filepath.Join(dir, "config.toml")
	os.WriteFile(p, []byte(`[discovery]`+"\nfamily = \"f\"\n"), 0o600)
	c, err = Load(p)
	if err != nil || c.Path != p || c.Discovery.Family != "f" {
		t.Fatalf("%+v %v", c, err)
	}
	os.WriteFile(p, []byte(strings.Repeat("#", MaxFileSize+1)), 0o600)
	if _, err := Load(p); err == nil {
		t.Error("oversize file accepted")
	}
}

// LoadDefault reads the file internal/paths names: with a relative
// XDG_CONFIG_HOME (invalid), the one under $HOME.
func TestLoadDefault(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".config", "primalscope", "config.toml")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte("[keys]\nquit = \"x\"\n"), 0o600)
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": "relative/cfg"}
	c, err := LoadDefault(func(k string) string { return env[k] })
	if err != nil || c.Path != p || c.Keys["quit"][0] != "x" {
		t.Fatalf("%+v %v", c, err)
	}
}

// A named pipe where the file should be is refused at once: reading it
// would block startup until something writes to it.
func TestLoadRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test ends, then fail.
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load blocked on a FIFO")
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("a directory was accepted")
	}
}

func TestKeysAndHistory(t *testing.T) {
	c, err := Parse([]byte(`
[keys]
quit = ["q", "ctrl+c"]
send = "ctrl+g"
no_such_action = "x"

[history]
enabled = false
path = "/data/h.db"
max_rows = 10
max_bytes = "512MiB"
entry_limit = 4096
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Keys) != 3 || len(c.Keys["quit"]) != 2 || c.Keys["send"][0] != "ctrl+g" || c.Keys["no_such_action"][0] != "x" {
		t.Errorf("keys %v", c.Keys)
	}
	if len(c.Unknown) != 0 {
		t.Errorf("keys reported unknown: %v (the TUI checks action names)", c.Unknown)
	}
	h := c.History
	if h.On() || h.Path != "/data/h.db" || h.MaxRows != 10 || h.MaxBytes != 512<<20 || h.EntryLimit != 4096 {
		t.Errorf("history %+v", h)
	}
	if !(History{}).On() {
		t.Error("history is off by default")
	}
	for _, bad := range []string{
		"[keys]\nquit = 3",
		"[keys]\nquit = [\"q\", 3]",
		"keys = \"q\"",
		"[keys]\nquit = \"" + strings.Repeat("x", MaxKeyName+1) + "\"",
		"[history]\nmax_rows = -1",
		"[history]\nmax_bytes = \"lots\"",
		"[history]\nentry_limit = -5",
		"[history]\nenabled = \"yes\"",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "4KiB": 4 << 10, " 512 MiB ": 512 << 20, "1gb": 1 << 30, "3k": 3 << 10, "7b": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5MiB", "99999999999GiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// A misspelled section or key is not an error (a newer file must load in
// an older primalscope) but it is said, with the name it was probably
// meant to be.
func TestWarnings(t *testing.T) {
	c, err := Parse([]byte(`
[keymap]
quit = "q"
[histroy]
path = "/x"
[discovery]
socket_dir = ["/run/a"]
[history]
max_row = 5
[future_feature]
on = true
[[target]]
name = "t"
endpoint = "/t.sock"
endpont = "/typo.sock"
`))
	if err != nil {
		t.Fatal(err)
	}
	c.Path = "/home/u/.config/primalscope/config.toml"
	got := strings.Join(c.Warnings(), "\n")
	for _, want := range []string{
		`unknown section or key "keymap" in /home/u/.config/primalscope/config.toml (ignored; did you mean "keys"?)`,
		`"histroy" in /home/u/.config/primalscope/config.toml (ignored; did you mean "history"?)`,
		`unknown key "discovery.socket_dir" in /home/u/.config/primalscope/config.toml (ignored; did you mean "discovery.socket_dirs"?)`,
		`unknown key "history.max_row" in /home/u/.config/primalscope/config.toml (ignored; did you mean "history.max_rows"?)`,
		`unknown section or key "future_feature" in /home/u/.config/primalscope/config.toml (ignored)`,
		`unknown key "target.endpont" in /home/u/.config/primalscope/config.toml (ignored; did you mean "target.endpoint"?)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings lack %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "future_feature.on") {
		t.Errorf("keys of an unknown section listed one by one:\n%s", got)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("[discovery]\nfamily = \"f\"\n[[target]]\nname = \"x\"\nendpoint = \"/x.sock\"\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err == nil {
			if err := c.Validate(); err != nil {
				t.Fatalf("Parse accepted what Validate rejects: %v", err)
			}
		}
	})
}

func TestTrustAndFederation(t *testing.T) {
	c, err := Parse([]byte("[discovery]\ntrust_uids = [1001, \"alice\"]\nfederation = true\ntrust_uid = [5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Discovery.TrustUIDs, ","); got != "1001,alice" || !c.Discovery.Federation {
		t.Fatalf("trust_uids = %q, federation = %v", got, c.Discovery.Federation)
	}
	if got := strings.Join(c.Warnings(), "\n"); !strings.Contains(got, `did you mean "discovery.trust_uids"?`) {
		t.Errorf("a misspelt trust_uids is not warned about:\n%s", got)
	}
	for _, bad := range []string{"trust_uids = [-1]", "trust_uids = [1.5]", `trust_uids = [""]`} {
		if _, err := Parse([]byte("[discovery]\n" + bad + "\n")); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestFamilies: [families.<id>] seed_file gives another family's seed
// file (relative to the config file's directory), is checked (an id, a
// file, bounded), and a misspelled key inside is said with the right name.
func TestFamilies(t *testing.T) {
	c, err := Parse([]byte(`
[families.westgate-tower-155f]
seed_file = "/etc/primalscope/westgate.seed"
[families.east]
seed_file = "east.seed"
[families.north]
seed_file = "north.seed"
seedfile = "typo"
`))
	if err != nil {
		t.Fatal(err)
	}
	c.Path = "/home/u/.config/primalscope/config.toml"
	if got := c.SeedFile("westgate-tower-155f"); got != "/etc/primalscope/westgate.seed" {
		t.Errorf("absolute seed_file %q", got)
	}
	if got := c.SeedFile("east"); got != "/home/u/.config/primalscope/east.seed" {
		t.Errorf("relative seed_file %q", got)
	}
	if got := c.SeedFile("nobody"); got != "" {
		t.Errorf("unknown family %q", got)
	}
	want := `unknown key "families.north.seedfile" in /home/u/.config/primalscope/config.toml (ignored; did you mean "families.north.seed_file"?)`
	if got := strings.Join(c.Warnings(), "\n"); !strings.Contains(got, want) {
		t.Errorf("warnings lack %s:\n%s", want, got)
	}
	for _, bad := range []string{
		"[families.default]\nseed_file = \"/x\"\n",
		"[families.a]\n",
		"[families.\"a/b\"]\nseed_file = \"/x\"\n",
	} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
