package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
)

// TestCallLeavesNoReservedRecord: the record file a call creates ahead
// becomes its record when the call is recorded (an answer, a failed
// connection) and is removed when it is not (a usage error): no temporary
// file is left in the journal either way.
func TestCallLeavesNoReservedRecord(t *testing.T) {
	home := t.TempDir()
	db := filepath.Join(home, "history.db")
	env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": db}
	sock := echoPeer(t, 0)
	journal := history.JournalDir(db)
	check := func(what string, wantRecords int) {
		t.Helper()
		ents, err := os.ReadDir(journal)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		recs := 0
		for _, e := range ents {
			switch {
			case strings.HasSuffix(e.Name(), ".rec"):
				recs++
			default:
				t.Errorf("%s: left in the journal: %s", what, e.Name())
			}
		}
		if recs != wantRecords {
			t.Errorf("%s: %d records, want %d", what, recs, wantRecords)
		}
	}
	if r := runCLI(t, env, "", "call", sock, "echo", `{"n":1}`); r.code != 0 {
		t.Fatalf("call: %+v", r)
	}
	check("an answered call", 1)
	if r := runCLI(t, env, "", "call", "tcp://", "echo"); r.code != exitUsage {
		t.Fatalf("call with a bad target: %+v", r)
	}
	check("a usage error", 1)
	if r := runCLI(t, env, "", "call", filepath.Join(home, "nobody.sock"), "echo"); r.code != exitConnect {
		t.Fatalf("call to no socket: %+v", r)
	}
	check("a failed connection", 2)
}
