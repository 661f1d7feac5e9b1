package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestCallReadsNoWholeConfig: once a command has read the config file
// whole, a later one-shot call (a new process: a new app) takes what it
// needs of it (history settings, trust_uids, the families' seeds) from the
// cache, without parsing the file and its 500 targets: a call's cost does
// not grow with the targets a user names (issue 23). The settings are the
// file's all the same.
func TestCallReadsNoWholeConfig(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	cfgDir := filepath.Join(home, ".config", "primalscope")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	seed := "eastgate-seed-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(cfgDir, "east.seed"), []byte(seed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("[history]\nmax_rows = 777\n[discovery]\ntrust_uids = [4242]\n[families.eastgate]\nseed_file = \"east.seed\"\n")
	for i := range 500 {
		fmt.Fprintf(&b, "[[target]]\nname = \"t%d\"\nendpoint = \"/run/t%d.sock\"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	newApp := func() (*app, *strings.Builder) {
		var errb strings.Builder
		return &app{io: &stdio{err: &errb}, getenv: func(k string) string { return env[k] },
			prefix: "auto", btspCipher: "auto", maxFrame: ipc.DefaultMaxFrame, timeout: 10 * time.Second}, &errb
	}
	// The first command reads the file whole (as ls, the TUI or a call
	// before any cache do) and leaves the cache.
	first, _ := newApp()
	if first.config().History.MaxRows != 777 {
		t.Fatalf("config: %+v", first.config().History)
	}

	a, errb := newApp()
	var sec ipc.Security
	if err := a.familySeeds(&sec); err != nil {
		t.Fatal(err)
	}
	uids, err := a.trustedUIDs()
	if err != nil {
		t.Fatal(err)
	}
	secrets := a.knownSecrets()
	if h := a.historySettings(); h.MaxRows != 777 {
		t.Errorf("history settings %+v, want max_rows 777", h)
	}
	if a.cfgLoaded() {
		t.Fatal("a call parsed the whole config file (its targets) for settings the cache holds")
	}
	if s, ok := sec.Seeds["eastgate"]; !ok || string(s.ServerKey()) != seed {
		t.Errorf("eastgate's seed not taken from the config: %v", sec.Seeds)
	}
	if len(uids) != 1 || uids[0] != 4242 {
		t.Errorf("trusted uids %v, want [4242]", uids)
	}
	if !strings.Contains(strings.Join(secrets, "\n"), seed) {
		t.Errorf("the config's seed is not known as a secret: %q", secrets)
	}
	if errb.Len() > 0 {
		t.Errorf("stderr: %s", errb.String())
	}
}
