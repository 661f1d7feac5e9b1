package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func hostileBusAt(t *testing.T, cfg ipctest.HostileBusConfig) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "psbus")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := ipctest.ListenHostileBus(filepath.Join(dir, "bus.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Path
}

// call prints only the answer that belongs to its request (id, session and
// pool); the rest are warnings on stderr, never the answer.
func TestCallBusAnswersMatchedBySession(t *testing.T) {
	env := map[string]string{"HOME": t.TempDir()}
	path := hostileBusAt(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{
		{SessionID: "S2", Result: `{"from":"other-session"}`},
		{Pool: "evil", Result: `{"from":"other-pool"}`},
		{ID: "99", Result: `{"from":"never-sent"}`},
		{Result: `{"from":"own"}`},
		{Result: `{"from":"second"}`},
	}})
	r := runCLI(t, env, "", "call", "--no-history", "--timeout=5s", "--session=S1", "--pool=echo", path, "x.y")
	if r.code != 0 || !strings.Contains(r.stdout, `"own"`) {
		t.Fatalf("call: %+v; want the own answer, exit 0", r)
	}
	for _, leak := range []string{"other-session", "other-pool", "never-sent", "second"} {
		if strings.Contains(r.stdout, leak) {
			t.Errorf("stdout holds the %s answer: %s", leak, r.stdout)
		}
	}
	// The second answer to the call is noted only when it is read before the
	// call's own answer is handed over (same burst): ipc's
	// TestBusSecondAnswerIsReported checks that deterministically; here the
	// call may end first under load (it flaked 2–5 in 30 under -race with
	// both cores busy), so only its never being printed is asserted.
	for _, want := range []string{`session "S2"`, `pool "evil"`, "no call 99 was sent"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}

	// Only a foreign answer: nothing is printed, and the call times out.
	path = hostileBusAt(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{{SessionID: "S2", Result: `{"from":"other-session"}`}}})
	r = runCLI(t, env, "", "call", "--no-history", "--timeout=300ms", "--session=S1", path, "x.y")
	if r.code != 4 || r.stdout != "" || !strings.Contains(r.stderr, "matching no call") {
		t.Fatalf("call answered only by another session: %+v; want exit 4, nothing printed", r)
	}
}

// A peer's request during a call is answered with what the running command
// does, not with tail's "only watches".
func TestCallAnswersPeerRequestNamingItself(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bus, err := ipctest.StartStdioBus(filepath.Join(dir, "bus.sock"), ipctest.BusConfig{Pools: []ipctest.BusPool{busPool(t, "agent", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })
	r := runCLI(t, map[string]string{"HOME": t.TempDir()}, "", "call", "--no-history", "--raw", "--session", "S1", bus.Path, "bus.ask", `{"question":"proceed?"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "primalscope call does not serve requests") || strings.Contains(r.stdout, "tail") {
		t.Fatalf("call asked back by the bus: %+v; want the worker to relay \"primalscope call does not serve requests\"", r)
	}
}

// tail --json shows a bus answer of another session (to its liveness
// poll) as a note with its warning, never as the liveness answer.
func TestTailJSONBusAnswerOfAnotherSession(t *testing.T) {
	path := hostileBusAt(t, ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{
		{SessionID: "S-other", Result: `{"status":"alive","from":"other-session"}`},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &lineWatcher{cancel: cancel, want: map[string]func(string) bool{
		"warning": func(line string) bool {
			var e struct{ Kind, Name string }
			return json.Unmarshal([]byte(line), &e) == nil && e.Kind == "note" && strings.Contains(line, "foreign_response")
		},
	}}
	var errb bytes.Buffer
	run(ctx, []string{"tail", "--json", "--no-proc", "--interval", "50ms", path},
		&stdio{in: strings.NewReader(""), out: w, err: &errb}, func(string) string { return "" }, nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.want) != 0 {
		t.Fatalf("no note with the foreign_response warning (stderr %s):\n%s", errb.String(), strings.Join(w.lines, ""))
	}
	for _, l := range w.lines {
		if strings.Contains(l, `"kind":"liveness"`) && strings.Contains(l, `"alive"`) {
			t.Fatalf("another session's answer was taken as the liveness answer: %s", l)
		}
	}
}
