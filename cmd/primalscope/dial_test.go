package main

import (
	"encoding/json"
	"strings"
	"testing"
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
// for the one socket that accepts and never answers: it is judged stale
// once every other target has been, and stderr names it as cut off by the
// probe timeout. --timeout is under the 2 s probe timeout, so waiting for
// it would end in exit 4 with the socket unjudged.
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
				Err    string `json:"err"`
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
		if r.code != 0 || tg.State != "stale" || tg.Probe == nil || !tg.Probe.CutOff {
			t.Fatalf("lostprimal: %+v; %+v", tg, r)
		}
	}
	r = runCLI(t, env, "", "ls", sd, "--no-proc", "--timeout", "1900ms")
	if r.code != 0 || !strings.Contains(r.stderr, "lostprimal: no answer to health.liveness within") || !strings.Contains(r.stderr, "cut off") {
		t.Fatalf("ls: %+v", r)
	}
	r = runCLI(t, env, "", "check", sd, "--no-proc", "--timeout", "1900ms")
	if r.code != 0 || !strings.Contains(r.stderr, "lostprimal: no answer") || !strings.Contains(r.stdout, "cut off") {
		t.Fatalf("check: %+v", r)
	}
}
