package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestCheckCallAllKeepsTheLevel: check --call-all on the demo's rhizoCrypt,
// which requires the riboCipher prefix, reaches the level check gives
// without it (the calls learn the prefix first, through the one dialer);
// a fresh state directory each time, so nothing was learned before.
func TestCheckCallAllKeepsTheLevel(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	level := func(extra ...string) int {
		t.Helper()
		env := map[string]string{"HOME": t.TempDir()}
		r := runCLI(t, env, "", append([]string{"check", sd, "--json", "--no-proc", "rhizocrypt"}, extra...)...)
		var doc struct {
			Targets []struct {
				Level     int  `json:"level"`
				CalledAll bool `json:"called_all"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Targets) != 1 {
			t.Fatalf("check %v: %v %+v", extra, err, r)
		}
		if len(extra) > 0 && !doc.Targets[0].CalledAll {
			t.Fatalf("--call-all did not call: %+v", r)
		}
		return doc.Targets[0].Level
	}
	without, with := level(), level("--call-all")
	if without != 3 || with < without {
		t.Fatalf("check: level %d; check --call-all: level %d", without, with)
	}
}

// TestLsPrintsWhenJudged: ls (and check) on the demo do not hold the table
// for the one socket that accepts and never answers: once every other
// target has been judged it is left unjudged (unknown, cut off: never
// stale, which only its own probe timeout may say), and stderr names it as
// not answered yet. --timeout is under the 2 s probe timeout, so waiting
// for it would end in exit 4 with the socket unjudged.
func TestLsPrintsWhenJudged(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	env := map[string]string{"HOME": t.TempDir()}
	r := runCLI(t, env, "", "ls", sd, "--no-proc", "--json", "--timeout", "1900ms")
	var doc struct {
		Targets []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			Probe *struct {
				CutOff bool   `json:"cut_off"`
				Err    string `json:"error"`
			} `json:"probe"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	for _, tg := range doc.Targets {
		if tg.Name != "lostprimal" {
			continue
		}
		if tg.Probe != nil && strings.Contains(tg.Probe.Err, "too slow") {
			t.Skip("this machine was too slow to judge a silent socket early: " + tg.Probe.Err)
		}
		if r.code != 0 || tg.State != "unknown" || tg.Probe == nil || !tg.Probe.CutOff {
			t.Fatalf("lostprimal: %+v; %+v", tg, r)
		}
	}
	r = runCLI(t, env, "", "ls", sd, "--no-proc", "--timeout", "1900ms")
	if r.code != 0 || !strings.Contains(r.stderr, "lostprimal: not answered yet, not judged: no answer to health.liveness within") || !strings.Contains(r.stderr, "cut off") ||
		!strings.Contains(r.stdout, "no answer yet") {
		t.Fatalf("ls: %+v", r)
	}
	r = runCLI(t, env, "", "check", sd, "--no-proc", "--timeout", "1900ms")
	if r.code != 0 || !strings.Contains(r.stderr, "lostprimal: not answered yet") || !strings.Contains(r.stdout, "cut off") {
		t.Fatalf("check: %+v", r)
	}
}

// TestCutOffIsNoVerdict: a live target whose health.liveness takes 800 ms,
// well inside the 2 s probe timeout, beside three that answer at once.
// ls does not wait for it once the others are judged, and does not call it
// stale (only its own probe timeout may): it is unknown and cut off, in
// --json and in the table. check --level 1 is a gate: it waits for every
// probe and judges it.
func TestCutOffIsNoVerdict(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	for _, n := range []string{"alpha", "beta", "gamma"} {
		s, err := ipctest.Listen(filepath.Join(dir, n+".sock"), healthy())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	slow := healthy()
	slow.Methods["health.liveness"] = func(ctx context.Context, _ json.RawMessage) (any, error) {
		select {
		case <-time.After(800 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return map[string]string{"status": "alive"}, nil
	}
	s, err := ipctest.Listen(filepath.Join(dir, "slowpoke.sock"), slow)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	env := map[string]string{"HOME": t.TempDir()}
	sd := "--socket-dir=" + dir

	type target struct {
		Name   string `json:"name"`
		State  string `json:"state"`
		Judged bool   `json:"judged"`
		Target string `json:"target"`
		Probe  *struct {
			CutOff     bool   `json:"cut_off"`
			Incomplete bool   `json:"incomplete"`
			Err        string `json:"error"`
		} `json:"probe"`
	}
	r := runCLI(t, env, "", "ls", sd, "--no-proc", "--json")
	var doc struct{ Targets []target }
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("ls --json: %v %+v", err, r)
	}
	seen := false
	for _, tg := range doc.Targets {
		if tg.Name != "slowpoke" {
			continue
		}
		seen = true
		cut := tg.Probe != nil && tg.Probe.CutOff
		if tg.State == "stale" || cut && (tg.State != "unknown" || !tg.Probe.Incomplete || !strings.Contains(tg.Probe.Err, "probe timeout is 2s")) || !cut && tg.State != "live" {
			t.Fatalf("ls --json: slowpoke %+v (probe %+v)", tg, tg.Probe)
		}
	}
	if !seen {
		t.Fatalf("ls --json lists no slowpoke: %+v", r)
	}
	r = runCLI(t, env, "", "ls", sd, "--no-proc")
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "slowpoke") && strings.Contains(line, "stale") {
			t.Fatalf("ls: %q", line)
		}
	}

	r = runCLI(t, env, "", "check", sd, "--no-proc", "--json", "--level", "1")
	var cd struct{ Targets []target }
	if err := json.Unmarshal([]byte(r.stdout), &cd); err != nil || (r.code != exitOK && r.code != exitPeer) {
		t.Fatalf("check --level 1: %v %+v", err, r)
	}
	judged := false
	for _, tg := range cd.Targets {
		if tg.Target == "slowpoke" {
			judged = tg.Judged
		}
	}
	if !judged {
		t.Fatalf("check --level 1 did not judge slowpoke: %s", r.stdout)
	}
}
