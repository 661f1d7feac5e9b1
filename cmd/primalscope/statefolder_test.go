package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A state folder another user can write to is said once a command, and a
// journal that is a link out of it is never written into.
func TestStateFolderWarnedAndNeverFollowedOut(t *testing.T) {
	eco := ecosystem(t)
	home := t.TempDir()
	state := filepath.Join(home, "state")
	if err := os.Mkdir(state, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(state, 0o777)
	db := filepath.Join(state, "history.db")
	env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": db}

	r := runCLI(t, env, "", "history", "--json")
	if r.code != 0 || strings.Count(r.stderr, "world-writable") != 1 {
		t.Fatalf("history in a 0777 state folder: %+v; want one warning", r)
	}

	os.Chmod(state, 0o700)
	outside := t.TempDir()
	if err := os.Symlink(outside, db+".journal.d"); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, env, "", "call", "--socket-dir="+eco.Dir, "beardog", "health.liveness")
	if r.code != 0 || !strings.Contains(r.stderr, "symbolic link") {
		t.Fatalf("call with the journal a link out of the state folder: %+v; want the call made and the link refused", r)
	}
	if m, _ := filepath.Glob(filepath.Join(outside, "*")); len(m) != 0 {
		t.Fatalf("records written outside the state folder: %q", m)
	}
}
