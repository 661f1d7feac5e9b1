package main

import (
	"encoding/json"
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
