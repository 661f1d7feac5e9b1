package main

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestMockListensOnPortZero: --listen tcp://127.0.0.1:0 (and ws://…:0)
// lets the system pick a port, and the mock prints the port it got on its
// first line (and in its notice), so a script can call it there.
func TestMockListensOnPortZero(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	env := runEnv(t)
	want := runCLI(t, env, "", "--socket-dir", dir, "call", "ledger", "ledger.entry.create", `{"owner":"ada"}`)
	if want.code != 0 {
		t.Fatalf("recording: %+v", want)
	}
	l.srv.Close()
	for _, listen := range []string{"tcp://127.0.0.1:0", "ws://127.0.0.1:0/rpc"} {
		m, code := startMock(t, env, "--socket-dir", dir, "mock", "ledger", "--listen", listen, "--latency", "none")
		if code >= 0 {
			t.Fatalf("--listen %s: the mock exited %d:\n%s", listen, code, m.stderr())
		}
		scheme, rest, _ := strings.Cut(m.endpoint, "://")
		hostport, _, _ := strings.Cut(rest, "/")
		host, port, err := net.SplitHostPort(hostport)
		if err != nil || scheme != strings.Split(listen, ":")[0] || host != "127.0.0.1" || port == "0" || port == "" {
			t.Fatalf("--listen %s: the mock printed %q, want the port it was given", listen, m.endpoint)
		}
		for end := time.Now().Add(3 * time.Second); !strings.Contains(m.stderr(), "Ctrl-C stops") && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond) // the notice follows the endpoint's line
		}
		if !strings.Contains(m.stderr(), hostport) {
			t.Errorf("--listen %s: the notice should name %s:\n%s", listen, hostport, m.stderr())
		}
		got := runCLI(t, runEnv(t), "", "--no-history", "call", m.endpoint, "ledger.entry.create", `{"owner":"ada"}`)
		if got.code != 0 || normalizeTimes(got.stdout) != normalizeTimes(want.stdout) {
			t.Errorf("--listen %s: calling %s: %+v, want %q", listen, m.endpoint, got, want.stdout)
		}
		if code := m.stop(t); code != 0 {
			t.Errorf("--listen %s: the mock stopped with %d", listen, code)
		}
	}
}
