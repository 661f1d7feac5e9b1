package config

import (
	"os"
	"path/filepath"
	"strings"
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
	if len(c.Unknown) != 2 || c.Unknown[0] != "keymap" {
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
	env := map[string]string{"HOME": "/home/u"}
	if got := DefaultPath(func(k string) string { return env[k] }); got != "/home/u/.config/primalscope/config.toml" {
		t.Error(got)
	}
	env["XDG_CONFIG_HOME"] = "/cfg"
	if got := DefaultPath(func(k string) string { return env[k] }); got != "/cfg/primalscope/config.toml" {
		t.Error(got)
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
