package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const sessionTestSeed = "family-seed-for-session-tests-0123456789"

// TestBTSPSessionFailureIsRefused: a family-scoped peer that holds the
// seed, completes the handshake and sends a first frame that
// authenticates, then breaks the frame that answers the call (a flipped
// byte, the wrong direction's key, a forged frame, cleartext JSON, a
// replay of its frame before), on the negotiate path and on the counter
// path: call exits 5 at once (not 3 "connection closed", not 3 "over the
// limit", not 4 after --timeout), says it is a security failure and what
// kind, prints no answer, and the history records "refused".
func TestBTSPSessionFailureIsRefused(t *testing.T) {
	faults := []struct {
		name  string
		fault ipctest.SessionFault
		words string
	}{
		{"flip", ipctest.FaultFlip, "does not authenticate"},
		{"wrong-key", ipctest.FaultWrongKey, "does not authenticate"},
		{"forged", ipctest.FaultForged, "does not authenticate"},
		{"cleartext", ipctest.FaultCleartext, "cleartext JSON where an encrypted frame belongs"},
		{"replay", ipctest.FaultReplay, "replay"},
	}
	for _, path := range []string{"negotiate", "counter"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			hist := filepath.Join(dir, "history.db")
			env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_ID": "westgate", "FAMILY_SEED": sessionTestSeed, "PRIMALSCOPE_HISTORY": hist}
			for _, f := range faults {
				h, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-westgate.sock"),
					&ipctest.HostileSession{Seed: []byte(sessionTestSeed), Fault: f.fault, LengthPrefixedOnly: path == "counter"})
				if err != nil {
					t.Fatal(err)
				}
				r := runCLI(t, env, "", "call", "--timeout", "3s", h.Path(), "health.liveness")
				h.Close()
				if r.code != exitSecurity || !strings.Contains(r.stderr, "security failure") || !strings.Contains(r.stderr, f.words) {
					t.Fatalf("%s: exit %d, want %d with %q: %+v", f.name, r.code, exitSecurity, f.words, r)
				}
				if strings.Contains(r.stderr, "--max-frame") || strings.Contains(r.stdout, "alive") {
					t.Fatalf("%s: %+v", f.name, r)
				}
				if h.Requests() != 1 {
					t.Fatalf("%s: the peer decrypted %d requests, want 1", f.name, h.Requests())
				}
				t.Logf("%s: %s", f.name, strings.TrimSpace(r.stderr))
			}
			r := runCLI(t, env, "", "history", "--json", "--limit", "0")
			var got []history.Entry
			if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != len(faults) {
				t.Fatalf("history --json: %v %+v", err, r)
			}
			for _, e := range got {
				if e.Outcome != history.OutcomeRefused {
					t.Errorf("recorded %q (%+v), want refused", e.Outcome, e.Error)
				}
			}
		})
	}
}

// TestBTSPLinesOnlyImpostorStopsAtOnce: a peer that speaks only the
// JSON-line handshake answers the server hello and then fails (an
// impostor without the seed keeping the null cipher, a server hello cut
// and closed): call exits 5 with that failure, not 4 after waiting out
// --timeout on a length-prefixed hello the peer never answers.
func TestBTSPLinesOnlyImpostorStopsAtOnce(t *testing.T) {
	cases := []struct {
		name  string
		srv   *ipctest.HostileBTSP
		words string
	}{
		{"impostor-keeps-null", &ipctest.HostileBTSP{LinesOnly: true, Negotiate: ipctest.NegotiateKeepNull}, "negotiate_refused"},
		{"hello-cut", &ipctest.HostileBTSP{LinesOnly: true, Hello: ipctest.HelloCut}, "closed_without_word"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate.sock"), tc.srv)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_ID": "westgate", "FAMILY_SEED": sessionTestSeed}
			r := runCLI(t, env, "", "call", "--no-history", "--timeout", "3s", h.Path(), sentinelMethod, sentinelParams)
			h.Close()
			if r.code != exitSecurity || !strings.Contains(r.stderr, tc.words) || !strings.Contains(r.stderr, "no other way was tried") {
				t.Fatalf("exit %d, want %d with %q: %+v", r.code, exitSecurity, tc.words, r)
			}
			conns := h.Received()
			if len(conns) != 1 {
				t.Fatalf("%d connections, want 1", len(conns))
			}
			noCleartextCall(t, conns)
		})
	}
}

// TestTailSessionFailureIsRefused: tail on a peer whose session breaks
// (a forged answer to its liveness poll, after a frame that
// authenticated) reports the target "refused", does not reconnect to it,
// and exits 5.
func TestTailSessionFailureIsRefused(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	h, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-westgate.sock"),
		&ipctest.HostileSession{Seed: []byte(sessionTestSeed), Fault: ipctest.FaultFlip})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_ID": "westgate", "FAMILY_SEED": sessionTestSeed}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, _ := runCLICtx(ctx, env, "", "tail", "--json", "--interval", "100ms", "--no-proc", h.Path())
	if ctx.Err() != nil {
		t.Fatalf("tail did not end on its own after the refusal: %+v", r)
	}
	if r.code != exitSecurity || !strings.Contains(r.stderr, "refused for security") {
		t.Fatalf("exit %d, want %d: %+v", r.code, exitSecurity, r)
	}
	var states []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev events.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Kind == events.KindLiveness {
			states = append(states, ev.Name)
		}
	}
	if len(states) == 0 || states[len(states)-1] != events.StateRefused || strings.Contains(strings.Join(states, " "), events.StateGone) {
		t.Fatalf("liveness states %v, want ending in refused, never gone: %s", states, r.stdout)
	}
	if n := len(h.Received()); n != 1 {
		t.Fatalf("%d connections: tail reconnected to a peer that failed authentication", n)
	}
}
