package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
)

// TestMockServesCallsRecordedThroughAnAlias: calls made through the
// demo's capability symlink ai.sock -> squirrel.sock (history records the
// target "ai" at ai.sock) are calls of squirrel: a mock of squirrel serves
// them, where squirrel lived and under its name, along with those made to
// squirrel by name (the newest through the alias) (one target, not two endpoints); a mock of "ai" is the
// same mock.
func TestMockServesCallsRecordedThroughAnAlias(t *testing.T) {
	eco := ecosystem(t)
	env := runEnv(t)
	sd := "--socket-dir=" + eco.Dir
	if r := runCLI(t, env, "", sd, "call", "squirrel", "health.liveness"); r.code != 0 {
		t.Fatalf("recording by name: %+v", r)
	}
	want := runCLI(t, env, "", sd, "call", "ai", "ai.complete", `{"prompt":"hello"}`)
	if want.code != 0 {
		t.Fatalf("recording through the alias: %+v", want)
	}
	// squirrel is gone: its socket removed, ai.sock dangles.
	sock := filepath.Join(eco.Dir, "squirrel.sock")
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"squirrel", "ai"} {
		m, code := startMock(t, env, sd, "mock", name, "--latency", "none")
		if code >= 0 {
			t.Fatalf("mock %s exited %d:\n%s", name, code, m.stderr())
		}
		if m.endpoint != sock {
			t.Fatalf("mock %s should serve where squirrel was, not %q", name, m.endpoint)
		}
		got := runCLI(t, runEnv(t), "", sd, "--no-history", "call", "ai", "ai.complete", `{"prompt":"hello"}`)
		// As recorded ("tokens" is a secret-looking key: history kept it
		// as "[redacted]", and the mock serves the placeholder).
		if got.code != 0 || !strings.Contains(want.stdout, `"text": "A composition of 5 characters, considered."`) ||
			strings.Replace(got.stdout, `"[redacted]"`, "12", 1) != want.stdout {
			t.Errorf("mock %s: the call through the alias got %+v, want %q", name, got, want.stdout)
		}
		caps := runCLI(t, runEnv(t), "", sd, "--no-history", "call", "squirrel", "capabilities.list")
		if !strings.Contains(caps.stdout, `"primal": "squirrel"`) || !strings.Contains(caps.stdout, `"ai.complete"`) {
			t.Errorf("mock %s: capabilities.list should be squirrel's with ai.complete:\n%s", name, caps.stdout)
		}
		if code := m.stop(t); code != 0 {
			t.Fatalf("mock %s stopped with %d:\n%s", name, code, m.stderr())
		}
	}
}

// TestMockRecordedAsOneTargetThroughALink: a link and the socket it names
// are one target (the link dangling or not), served at the socket; the
// newest call without an endpoint does not lose it.
func TestMockRecordedAsOneTargetThroughALink(t *testing.T) {
	dir := t.TempDir()
	sock, link := filepath.Join(dir, "squirrel.sock"), filepath.Join(dir, "ai.sock")
	if err := os.Symlink("squirrel.sock", link); err != nil {
		t.Fatal(err)
	}
	entries := []history.Entry{{Target: "squirrel"}, {Target: "ai", Endpoint: link}, {Target: "squirrel", Endpoint: sock}}
	rec, err := recordedAs("squirrel", entries)
	if err != nil || rec.Endpoint != sock {
		t.Fatalf("recordedAs: %+v, %v; want one target at %s", rec, err, sock)
	}
	if name, aliases := mockNames(entries[1:]); name != "squirrel" || !slices.Equal(aliases, []string{"ai"}) {
		t.Fatalf("named %q, aliases %q; want squirrel, ai (the call through ai.sock reached squirrel.sock)", name, aliases)
	}
	other := filepath.Join(t.TempDir(), "squirrel.sock")
	if _, err := recordedAs("squirrel", append(entries, history.Entry{Endpoint: other})); err == nil || !strings.Contains(err.Error(), "span 2 endpoints") {
		t.Fatalf("another squirrel elsewhere: %v, want the calls span 2 endpoints", err)
	}
}

// TestMockOfARegistryOnlyTargetIsNamedAsRecorded: toadstool is known only
// through the registry (TCP), and its calls were recorded as "toadstool"
// and as "compute" (the capability the registry also finds it by). A mock
// of it goes by toadstool, with compute an alias, whichever call came last
// and whichever name it is asked for by: it was named after the newest
// call's target ("compute" when that came last).
func TestMockOfARegistryOnlyTargetIsNamedAsRecorded(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	for _, order := range [][]string{{"toadstool", "compute"}, {"compute", "toadstool"}} {
		env := runEnv(t)
		for _, name := range order {
			if r := runCLI(t, env, "", sd, "call", name, "compute.status"); r.code != 0 {
				t.Fatalf("recording through the registry as %s: %+v", name, r)
			}
		}
		for _, arg := range order {
			m, code := startMock(t, env, sd, "mock", arg, "--latency", "none", "--listen", "tcp://127.0.0.1:0")
			if code >= 0 {
				t.Fatalf("mock %s exited %d:\n%s", arg, code, m.stderr())
			}
			caps := runCLI(t, runEnv(t), "", "--no-history", "call", m.endpoint, "capabilities.list")
			if caps.code != 0 || !strings.Contains(caps.stdout, `"primal": "toadstool"`) || !strings.Contains(caps.stdout, `"aliases": [
      "compute"
    ]`) {
				t.Errorf("recorded as %v, mock %s: capabilities.list should name toadstool, alias compute:\n%s", order, arg, caps.stdout)
			}
			// The notice follows the endpoint.
			for end := time.Now().Add(5 * time.Second); !strings.Contains(m.stderr(), "Ctrl-C stops") && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
			if !strings.Contains(m.stderr(), "mock of toadstool (also called compute):") {
				t.Errorf("recorded as %v, mock %s: the notice should name toadstool:\n%s", order, arg, m.stderr())
			}
			if code := m.stop(t); code != 0 {
				t.Fatalf("mock %s stopped with %d:\n%s", arg, code, m.stderr())
			}
		}
	}
}

// TestMockNamesAreTheSameInAnyOrder: the names a mock goes by come from
// what was recorded, not from which call came last.
func TestMockNamesAreTheSameInAnyOrder(t *testing.T) {
	dir := t.TempDir()
	fam := filepath.Join(dir, "beardog-fam1.sock")
	for _, tc := range []struct {
		entries []history.Entry
		name    string
		aliases []string
	}{
		{[]history.Entry{{Target: "compute", Endpoint: "tcp://127.0.0.1:9300", Method: "compute.status"}, {Target: "toadstool", Endpoint: "tcp://127.0.0.1:9300", Method: "compute.submit"}, {Target: "tcp://127.0.0.1:9300", Endpoint: "tcp://127.0.0.1:9300", Method: "health.liveness"}}, "toadstool", []string{"compute"}},
		{[]history.Entry{{Target: fam, Endpoint: fam, Method: "crypto.sign"}, {Target: "beardog", Endpoint: fam, Method: "crypto.sign"}, {Target: "crypto", Endpoint: fam, Method: "crypto.sign"}}, "beardog", []string{"beardog-fam1", "crypto"}},
		{[]history.Entry{{Target: "127.0.0.1:9300", Endpoint: "tcp://127.0.0.1:9300"}}, "127.0.0.1:9300", nil},
	} {
		for i := range tc.entries {
			rotated := append(append([]history.Entry(nil), tc.entries[i:]...), tc.entries[:i]...)
			name, aliases := mockNames(rotated)
			if name != tc.name || !slices.Equal(aliases, tc.aliases) {
				t.Errorf("mockNames(%v) = %q, %q; want %q, %q", rotated, name, aliases, tc.name, tc.aliases)
			}
		}
	}
}
