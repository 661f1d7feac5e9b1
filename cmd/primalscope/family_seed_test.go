package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestDemoUsesItsOwnSeed: with FAMILY_ID and FAMILY_SEED set in the shell
// for the user's own family, the demo still reaches its own BTSP socket:
// the shell's seed is the user's family's, the demo's is its own.
func TestDemoUsesItsOwnSeed(t *testing.T) {
	eco := ecosystem(t)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": home, "XDG_CONFIG_HOME": home,
		"FAMILY_ID": "my-own-family", "FAMILY_SEED": "my-own-family-seed-0123456789abcdef"}
	var errb strings.Builder
	a := &app{io: &stdio{err: &errb}, getenv: func(k string) string { return env[k] },
		prefix: "auto", btspCipher: "auto", maxFrame: ipc.DefaultMaxFrame, timeout: 10 * time.Second}
	a.useDemo(eco)
	d, err := a.dialer()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tg, err := d.Resolve(ctx, "beardog-"+eco.Family)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(ctx, tg, dial.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
		t.Fatalf("the demo's own BTSP socket: %v (%s)", err, errb.String())
	}
	if ss, ok := c.Session(); !ok || !ss.Authenticated || !ss.Encrypted {
		t.Fatalf("session %+v", ss)
	}
}

// TestSeedsPerFamily: the shell's seed is its family's (FAMILY_ID), the
// config file gives another family's ([families.<id>] seed_file); each
// family's socket gets its own family's seed, and a socket of a family
// with no known seed is exit 5 before any connection, naming the family.
// A seed file group or others may read is exit 5 naming it.
func TestSeedsPerFamily(t *testing.T) {
	const (
		eastSeed = "the-east-family-seed-for-cli-0123456789"
		westSeed = "the-west-family-seed-for-cli-0123456789"
	)
	dir := wireDir(t)
	cfgDir := filepath.Join(dir, "primalscope")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(cfgDir, "west.seed")
	if err := os.WriteFile(seedFile, []byte(westSeed+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[families.west]\nseed_file = \"west.seed\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	east, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-east.sock"), &ipctest.HostileSession{Seed: []byte(eastSeed)})
	if err != nil {
		t.Fatal(err)
	}
	defer east.Close()
	west, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-west.sock"), &ipctest.HostileSession{Seed: []byte(westSeed)})
	if err != nil {
		t.Fatal(err)
	}
	defer west.Close()
	north, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-north.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer north.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "XDG_CONFIG_HOME": dir, "FAMILY_ID": "east", "FAMILY_SEED": eastSeed}
	for _, name := range []string{"beardog-east", "beardog-west"} {
		r := runCLI(t, env, "", "call", "--no-history", "--timeout", "5s", "--socket-dir", dir, name, "health.liveness")
		if r.code != exitOK || !strings.Contains(r.stdout, "alive") {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	r := runCLI(t, env, "", "call", "--no-history", "--timeout", "5s", "--socket-dir", dir, "beardog-north", sentinelMethod, sentinelParams)
	if r.code != exitSecurity || !strings.Contains(r.stderr, `family "north"`) || !strings.Contains(r.stderr, "[families.north]") {
		t.Fatalf("north: exit %d, want %d naming the family: %+v", r.code, exitSecurity, r)
	}
	if n := len(north.Received()); n != 0 {
		t.Fatalf("%d connection(s) to a family with no known seed", n)
	}
	for _, s := range []string{eastSeed, westSeed} {
		if strings.Contains(r.stderr+r.stdout, s) {
			t.Fatal("a seed was printed")
		}
	}

	if err := os.Chmod(seedFile, 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "5s", "--socket-dir", dir, "beardog-west", "health.liveness")
	if r.code != exitSecurity || !strings.Contains(r.stderr, "[families.west] seed_file") || !strings.Contains(r.stderr, "chmod 600") {
		t.Fatalf("a seed file others may read: exit %d: %+v", r.code, r)
	}
}

// TestSeedForAFamilySeenInTheDirectory: a socket whose family shows only
// beside a known primal's socket in the same directory
// (myprimal-tower-9.sock next to songbird-tower-9.sock) belongs to that
// family: the seed of FAMILY_ID east is not sent to it (exit 5, naming
// tower-9, nothing connects).
func TestSeedForAFamilySeenInTheDirectory(t *testing.T) {
	dir := wireDir(t)
	other, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "songbird-tower-9.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "myprimal-tower-9.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "XDG_CONFIG_HOME": dir, "FAMILY_ID": "east", "FAMILY_SEED": "the-east-family-seed-for-cli-0123456789"}
	r := runCLI(t, env, "", "call", "--no-history", "--timeout", "5s", h.Path(), sentinelMethod, sentinelParams)
	if r.code != exitSecurity || !strings.Contains(r.stderr, `family "tower-9"`) {
		t.Fatalf("exit %d, want %d naming tower-9: %+v", r.code, exitSecurity, r)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) to another family's socket with the user's seed", n)
	}
}
