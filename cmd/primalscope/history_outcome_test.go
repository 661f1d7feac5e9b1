package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
)

// TestHistoryOutcomes: each way a call fails is recorded as what it was,
// in the terms of its exit code: a missing socket and a refused connect
// are "unreachable" (3), a BTSP demand and a failed handshake "refused"
// (5), no answer "timeout" (4), a peer's error "error" (1); history
// --json, the table and --outcome say so.
func TestHistoryOutcomes(t *testing.T) {
	eco := ecosystem(t)
	home := t.TempDir()
	path := filepath.Join(t.TempDir(), "history.db")
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": home, "PRIMALSCOPE_HISTORY": path}
	sd := "--socket-dir=" + eco.Dir

	refused := filepath.Join(t.TempDir(), "refused.sock") // a socket file nobody listens on
	ln, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	wrongSeed := filepath.Join(t.TempDir(), "seed")
	if err := os.WriteFile(wrongSeed, []byte("not-the-family-seed-0123456789abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		args []string
		code int
		want history.Outcome
	}{
		{"missing socket", []string{"call", filepath.Join(eco.Dir, "gone.sock"), "health.liveness"}, exitConnect, history.OutcomeUnreachable},
		{"refused connect", []string{"call", refused, "health.liveness"}, exitConnect, history.OutcomeUnreachable},
		{"BTSP without a seed", []string{"call", sd, "beardog-" + eco.Family, "health.liveness"}, exitSecurity, history.OutcomeRefused},
		{"failed handshake", []string{"call", sd, "--family-seed-file", wrongSeed, "beardog-" + eco.Family, "health.liveness"}, exitSecurity, history.OutcomeRefused},
		{"no answer", []string{"call", sd, "--timeout", "300ms", "lostprimal", "health.liveness"}, exitTimeout, history.OutcomeTimeout},
		{"peer error", []string{"call", sd, "beardog", "no.such"}, exitPeer, history.OutcomeError},
		{"answered", []string{"call", sd, "beardog", "health.liveness"}, exitOK, history.OutcomeOK},
	}
	for _, tc := range cases {
		if r := runCLI(t, env, "", tc.args...); r.code != tc.code {
			t.Fatalf("%s: exit %d, want %d: %+v", tc.name, r.code, tc.code, r)
		}
	}
	r := runCLI(t, env, "", "history", "--json", "--limit", "0")
	var got []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != len(cases) {
		t.Fatalf("history --json: %v %+v", err, r)
	}
	for i, tc := range cases {
		e := got[len(got)-1-i] // newest first
		if e.Outcome != tc.want || e.Error == nil && tc.want != history.OutcomeOK {
			t.Errorf("%s: recorded %q (%+v), want %q", tc.name, e.Outcome, e.Error, tc.want)
		}
	}
	r = runCLI(t, env, "", "history", "--outcome", "unreachable")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 3 || !strings.Contains(r.stdout, " unreachable ") {
		t.Errorf("history --outcome unreachable: %+v", r)
	}
	r = runCLI(t, env, "", "history", "--outcome", "refused", "--json")
	if n := strings.Count(r.stdout, `"outcome":"refused"`); n != 2 {
		t.Errorf("history --outcome refused lists %d calls: %s", n, r.stdout)
	}
	if r := runCLI(t, env, "", "history", "--outcome", "gone"); r.code != 2 || !strings.Contains(r.stderr, "unreachable") {
		t.Errorf("a bad --outcome does not list the outcomes: %+v", r)
	}
}
