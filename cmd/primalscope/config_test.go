package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/paths"
)

// The CLI reads the config file once, from the one place internal/paths
// names: with a relative XDG_CONFIG_HOME (invalid, so ignored) discovery,
// the keys, the history and the themes all use $HOME/.config/primalscope.
// What the file has that this version does not read is said once.
func TestConfigReadOnce(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "primalscope")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(t.TempDir(), "h.db")
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(`
[discovery]
family = "fam-from-file"
[keys]
quit = "ctrl+q"
[history]
path = "`+hist+`"
[keymap]
send = "ctrl+g"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// A config file in the relative directory would be the wrong one.
	rel := t.TempDir()
	t.Chdir(rel)
	os.MkdirAll(filepath.Join(rel, "cfg", "primalscope"), 0o700)
	os.WriteFile(filepath.Join(rel, "cfg", "primalscope", "config.toml"), []byte("[keys]\nquit = \"wrong\"\n"), 0o600)

	errs := &strings.Builder{}
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": "cfg"}
	a := &app{io: &stdio{err: errs}, getenv: func(k string) string { return env[k] }}
	c := a.config()
	if c.Path != filepath.Join(dir, "config.toml") || paths.ConfigFile(a.getenv) != c.Path {
		t.Errorf("read %q", c.Path)
	}
	if c.Discovery.Family != "fam-from-file" || c.Keys["quit"][0] != "ctrl+q" {
		t.Errorf("config %+v", c)
	}
	if p, err := a.historyLocation(a.historySettings()); err != nil || p != hist {
		t.Errorf("history at %q, %v", p, err)
	}
	a.config()
	a.historySettings()
	if n := strings.Count(errs.String(), "keymap"); n != 1 {
		t.Errorf("the unknown section was said %d times:\n%s", n, errs)
	}
	if !strings.Contains(errs.String(), `did you mean "keys"?`) {
		t.Errorf("no hint: %s", errs)
	}
}

// A broken config file is reported and ignored by the commands (discovery
// still works), but the TUI refuses it: its bindings would silently not
// apply, under a full screen that hides the warning.
func TestBrokenConfigFile(t *testing.T) {
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "primalscope"), 0o700)
	os.WriteFile(filepath.Join(cfg, "primalscope", "config.toml"), []byte("[keys]\nquit = 3\n"), 0o600)
	errs := &strings.Builder{}
	a := &app{io: &stdio{err: errs}, getenv: func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": cfg}[k]
	}}
	if c := a.config(); c == nil || len(c.Keys) != 0 {
		t.Errorf("broken file: %+v", c)
	}
	if a.configErr() == nil || !strings.Contains(errs.String(), "keys.quit") || !strings.Contains(errs.String(), "(ignored)") {
		t.Errorf("err %v, stderr %q", a.configErr(), errs)
	}
}

// [history] enabled = false turns recording off, unless --history names
// a database.
func TestHistoryDisabledInConfig(t *testing.T) {
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "primalscope"), 0o700)
	os.WriteFile(filepath.Join(cfg, "primalscope", "config.toml"), []byte("[history]\nenabled = false\n"), 0o600)
	env := func(k string) string { return map[string]string{"XDG_CONFIG_HOME": cfg}[k] }
	a := &app{io: &stdio{err: &strings.Builder{}}, getenv: env}
	if !a.historyOff() || a.startRecording(t.Context()) != nil {
		t.Error("recording although [history] enabled = false")
	}
	a = &app{io: &stdio{err: &strings.Builder{}}, getenv: env, historyPath: filepath.Join(t.TempDir(), "h.db")}
	if a.historyOff() {
		t.Error("--history named a database, yet recording is off")
	}
}

// TestHistorySettingsCached: a one-shot call takes [history] from the
// cache of the section, without reading the config file whole, once a
// command has read that version of the file; a changed file is read again.
func TestHistorySettingsCached(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, ".config", "primalscope", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	var b strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&b, "[[target]]\nname = \"t%d\"\nendpoint = \"unix:///run/t%d.sock\"\n", i, i)
	}
	os.WriteFile(path, []byte("[history]\nenabled = false\n"+b.String()), 0o600)
	env := func(k string) string { return map[string]string{"HOME": home}[k] }
	first := &app{io: &stdio{err: &strings.Builder{}}, getenv: env}
	if !first.historyOff() || !first.cfgLoaded() {
		t.Fatal("the first command did not read the file whole, or recorded")
	}
	again := &app{io: &stdio{err: &strings.Builder{}}, getenv: env}
	if !again.historyOff() {
		t.Fatal("recording although [history] enabled = false (from the cache)")
	}
	if again.cfgLoaded() {
		t.Fatal("the config file was read whole although its [history] was cached")
	}
	os.WriteFile(path, []byte("[history]\nenabled = true\n"+b.String()), 0o600)
	changed := &app{io: &stdio{err: &strings.Builder{}}, getenv: env}
	if changed.historyOff() || !changed.cfgLoaded() {
		t.Fatal("a changed config file was not read again")
	}
}
