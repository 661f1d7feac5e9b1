package main

import (
	"strings"
	"testing"
)

// TestMockVerifyStandsForOneTarget: calls recorded of "ledger" at two
// sockets are two targets; mock verify refuses them as mock does, with the
// same message and exit code, before it dials or sends anything.
func TestMockVerifyStandsForOneTarget(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	la := startLedger(t, dirA, nil, nil)
	startLedger(t, dirB, nil, nil)
	env := runEnv(t)
	for _, dir := range []string{dirA, dirB} {
		if r := runCLI(t, env, "", "--socket-dir", dir, "call", "ledger", "ledger.entry.list"); r.code != 0 {
			t.Fatalf("recording: %+v", r)
		}
	}
	before := la.count("ledger.entry.list")
	m, code := startMock(t, env, "--socket-dir", dirA, "mock", "ledger", "--listen", "tcp://127.0.0.1:0")
	if code != exitUsage || !strings.Contains(m.stderr(), "span 2 endpoints") {
		t.Fatalf("mock: want exit 2, the calls span 2 endpoints; got %d:\n%s", code, m.stderr())
	}
	want := m.stderr()
	r := runCLI(t, env, "", "--socket-dir", dirA, "mock", "verify", "ledger")
	if r.code != exitUsage || r.stderr != want {
		t.Fatalf("mock verify: want exit 2 and what mock says (%q), got %+v", want, r)
	}
	if n := la.count("ledger.entry.list"); n != before {
		t.Fatalf("mock verify sent %d call(s) to a target it does not stand for", n-before)
	}
}

// TestMockVerifySendsACallWithNoParamsOnce: a read recorded once without
// params and once with {} is one call (params left out and {} mean the
// same, as the mock matches them): verify sends it once, not twice.
func TestMockVerifySendsACallWithNoParamsOnce(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, map[string]any{"method_info": []any{map[string]any{"name": "ledger.entry.list", "read_only": true}}})
	env := runEnv(t)
	for _, params := range [][]string{nil, {"{}"}, {"[]"}} {
		if r := runCLI(t, env, "", append([]string{"--socket-dir", dir, "call", "ledger", "ledger.entry.list"}, params...)...); r.code != 0 {
			t.Fatalf("recording with params %q: %+v", params, r)
		}
	}
	before := l.count("ledger.entry.list")
	if r := runCLI(t, env, "", "--socket-dir", dir, "mock", "verify", "ledger"); r.code != 0 || strings.Count(r.stdout, "✓ ledger.entry.list") != 1 {
		t.Fatalf("verify: want ledger.entry.list verified once, got %+v", r)
	}
	if n := l.count("ledger.entry.list") - before; n != 1 {
		t.Fatalf("verify sent ledger.entry.list %d times: one call recorded with no params in three forms", n)
	}
}
