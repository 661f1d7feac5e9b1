package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestRunRefusedForSecurityExits5: a step refused for security (a
// family-scoped socket and no seed: BTSP required) makes run exit 5, as
// call does, even when another step failed an assertion; a book whose
// steps only fail assertions still exits 1.
func TestRunRefusedForSecurityExits5(t *testing.T) {
	dir := wireDir(t)
	startLedger(t, dir, nil, nil)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "myprimal-east.sock"), &ipctest.HostileBTSP{Seed: []byte("family-seed-for-run-tests-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	book := writeBook(t, dir, "sec.yaml", `steps:
  - call: ledger ledger.entry.list
    expect: {result: '.lines == 99'}
  - call: myprimal health.liveness
`)
	env := runEnv(t)
	r := runCLI(t, env, "", "--socket-dir", dir, "run", "--timeout", "5s", book)
	if r.code != exitSecurity || !strings.Contains(r.stdout, "refused") {
		t.Fatalf("want exit %d naming the refusal, got %d\n%s%s", exitSecurity, r.code, r.stdout, r.stderr)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) reached the family socket without a seed", n)
	}

	only := writeBook(t, dir, "assert.yaml", "steps:\n  - call: ledger ledger.entry.list\n    expect: {result: '.lines == 99'}\n")
	if r := runCLI(t, env, "", "--socket-dir", dir, "run", "--timeout", "5s", only); r.code != exitPeer {
		t.Fatalf("an assertion only: want exit %d, got %d\n%s%s", exitPeer, r.code, r.stdout, r.stderr)
	}
}

// TestRunRefusesToSendTheSeed: a book whose method would carry FAMILY_SEED
// sends nothing, shows no seed, and exits 5.
func TestRunRefusesToSendTheSeed(t *testing.T) {
	const seed = "family-seed-never-on-the-wire-0123456789"
	dir := wireDir(t)
	l := startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "seed.yaml", "steps:\n  - call: ledger ledger.entry.{{.env.FAMILY_SEED}}\n")
	env := runEnv(t)
	env["FAMILY_SEED"] = seed
	r := runCLI(t, env, "", "--socket-dir", dir, "run", "--json", "--timeout", "5s", book)
	if r.code != exitSecurity {
		t.Fatalf("want exit %d, got %d\n%s%s", exitSecurity, r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, seed) {
		t.Fatalf("the seed reached the output:\n%s%s", r.stdout, r.stderr)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for m := range l.calls {
		if strings.Contains(m, seed) {
			t.Fatalf("the ledger was called with %q", m)
		}
	}
}

// TestRunEventStreamRefusedMidwayExits5: a step waits for an event over a
// BTSP stream whose session is broken after the call succeeded (a forged
// frame, pushed unprompted): the step is refused for security and the run
// exits 5, as every security failure does, not 1 as a plain failure (it
// said "expect.event: ...: EOF" and exited 1).
func TestRunEventStreamRefusedMidwayExits5(t *testing.T) {
	dir := wireDir(t)
	l := startLedger(t, dir, nil, nil)
	h, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-westgate.sock"),
		&ipctest.HostileSession{Seed: []byte(sessionTestSeed), Fault: ipctest.FaultForged, PushAfter: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	book := writeBook(t, dir, "ev.yaml", `steps:
  - name: waits
    call: ledger ledger.entry.list
    expect:
      event: {from: beardog-westgate, match: '.name == "ledger.never"', within: 5s}
`)
	env := runEnv(t)
	env["FAMILY_SEED"] = sessionTestSeed
	env["FAMILY_ID"] = "westgate" // a seed is offered only to its family's sockets
	start := time.Now()
	r := runCLI(t, env, "", "--socket-dir", dir, "run", "--json", "--timeout", "10s", book)
	if r.code != exitSecurity {
		t.Fatalf("want exit %d, got %d\n%s%s", exitSecurity, r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if len(steps) != 1 || steps[0]["outcome"] != "refused" || !strings.Contains(steps[0]["reason"].(string), "authenticate") {
		t.Fatalf("the step should be refused, naming the broken frame:\n%s", r.stdout)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the refusal ended the wait only after %s (within: 5s)", d)
	}

	// Refused as it connects (the other side's family differs: the
	// handshake fails): the listener is refused, and the call is not sent.
	other, err := ipctest.ListenHostileSession(filepath.Join(dir, "beardog-eastgate.sock"),
		&ipctest.HostileSession{Seed: []byte("another-family-seed-0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	early := writeBook(t, dir, "early.yaml", `steps:
  - call: ledger ledger.entry.create
    expect:
      event: {from: beardog-eastgate, match: 'true', within: 5s}
`)
	env["FAMILY_ID"] = "eastgate" // the seed offered there is not eastgate's
	r = runCLI(t, env, "", "--socket-dir", dir, "run", "--json", "--timeout", "10s", early)
	if r.code != exitSecurity {
		t.Fatalf("refused as it connects: want exit %d, got %d\n%s%s", exitSecurity, r.code, r.stdout, r.stderr)
	}
	if n := l.count("ledger.entry.create"); n != 0 {
		t.Errorf("the call was sent %d time(s) though the stream it waits on was refused", n)
	}
}
