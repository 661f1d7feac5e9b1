package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// runningMock is `primalscope mock` run in this process until stopped.
type runningMock struct {
	endpoint string
	cancel   context.CancelFunc
	done     chan int
	mu       sync.Mutex
	errb     strings.Builder
}

func (m *runningMock) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errb.Write(p)
}

func (m *runningMock) stderr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.errb.String()
}

// stop interrupts the mock as Ctrl-C does and returns its exit code.
func (m *runningMock) stop(t *testing.T) int {
	t.Helper()
	m.cancel()
	select {
	case code := <-m.done:
		m.done <- code
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the mock did not stop")
	}
	return -1
}

// startMock runs `primalscope ARGS...` (a mock) and waits for the endpoint
// it prints first; a mock that exits first is returned with its code.
func startMock(t *testing.T, env map[string]string, args ...string) (*runningMock, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &runningMock{cancel: cancel, done: make(chan int, 1)}
	pr, pw := io.Pipe()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	go func() {
		code := run(ctx, args, &stdio{in: strings.NewReader(""), out: pw, err: m}, func(k string) string { return env[k] }, environ)
		pw.Close()
		m.done <- code
	}()
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() { m.stop(t) })
	select {
	case ep, ok := <-first:
		if !ok {
			code := <-m.done
			m.done <- code
			return m, code
		}
		m.endpoint = ep
		return m, -1
	case <-time.After(15 * time.Second):
		t.Fatalf("the mock printed no endpoint\n%s", m.stderr())
	}
	return m, -1
}

// TestMockStandsInForARecordedPrimal: calls recorded against the ledger
// are answered the same by the mock in its place, by primalscope call and by
// a runbook, after the ledger is gone.
func TestMockStandsInForARecordedPrimal(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	env := runEnv(t)
	calls := [][]string{
		{"ledger", "ledger.entry.create", `{"owner":"ada"}`},
		{"ledger", "ledger.entry.append", `{"entry_id":"e-17","line":"one"}`},
		{"ledger", "ledger.entry.append", `{"entry_id":"e-17","line":"two"}`},
		{"ledger", "ledger.entry.list"},
		{"ledger", "ledger.entry.append", `{"entry_id":"nope"}`},
	}
	var want []result
	for _, c := range calls {
		want = append(want, runCLI(t, env, "", append([]string{"--socket-dir", dir, "call"}, c...)...))
	}
	l.srv.Close() // the primal is gone

	m, code := startMock(t, env, "--socket-dir", dir, "mock", "ledger", "--latency", "none")
	if code >= 0 {
		t.Fatalf("mock exited %d:\n%s", code, m.stderr())
	}
	if m.endpoint != filepath.Join(dir, "ledger.sock") {
		t.Fatalf("the mock should serve where the ledger was recorded, not %q", m.endpoint)
	}
	for i, c := range calls {
		got := runCLI(t, runEnv(t), "", append([]string{"--socket-dir", dir, "--no-history", "call"}, c...)...)
		if got.code != want[i].code || normalizeTimes(got.stdout) != normalizeTimes(want[i].stdout) {
			t.Errorf("%v: the mock answered %d %q, the ledger %d %q", c, got.code, got.stdout, want[i].code, want[i].stdout)
		}
	}
	book := writeBook(t, t.TempDir(), "m.yaml", `steps:
  - call: ledger ledger.entry.create
    params: {owner: ada}
    expect: {result: '.entry_id == "e-17"'}
  - call: ledger ledger.entry.list
    expect: {equals: {lines: 2}}
  - call: ledger ledger.entry.append
    params: {entry_id: nope}
    expect: {error: -32000}
`)
	if r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book); r.code != 0 {
		t.Fatalf("a runbook against the mock: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if code := m.stop(t); code != 0 {
		t.Fatalf("the mock stopped with %d\n%s", code, m.stderr())
	}
	if !strings.Contains(m.stderr(), "answered from recordings") {
		t.Errorf("the mock's summary: %s", m.stderr())
	}
}

// normalizeTimes blanks RFC 3339 times, which the ledger makes anew.
func normalizeTimes(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	if m, ok := v.(map[string]any); ok {
		delete(m, "created_at")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMockOverHolonAndBTSP(t *testing.T) {
	// Holon-RPC over WebSocket.
	hs, err := peer.ListenHolon("127.0.0.1:0", peer.HolonConfig{Methods: map[string]peer.HandlerFunc{
		"greeting.v1.Greeting/SayHello": func(_ context.Context, p json.RawMessage) (any, error) {
			return map[string]string{"message": "hello, ada"}, nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	env := runEnv(t)
	want := runCLI(t, env, "", "call", hs.URL, "greeting.v1.Greeting/SayHello", `{"name":"ada"}`)
	if want.code != 0 {
		t.Fatalf("recording: %+v", want)
	}
	url := hs.URL
	hs.Close()
	m, code := startMock(t, env, "mock", url, "--latency", "none")
	if code >= 0 {
		t.Fatalf("holon mock exited %d: %s", code, m.stderr())
	}
	got := runCLI(t, runEnv(t), "", "--no-history", "call", url, "greeting.v1.Greeting/SayHello", `{"name":"ada"}`)
	if got.code != 0 || got.stdout != want.stdout {
		t.Fatalf("over Holon-RPC the mock answered %+v, want %q", got, want.stdout)
	}
	m.stop(t)

	// A family-scoped primal over BTSP, with the seed.
	dir := t.TempDir()
	const seed = "mock-test-family-seed-0123456789"
	p := &peer.Primal{Name: "beardog", Version: "1", Domain: "crypto", Format: peer.FormatStandard,
		Groups: []peer.Group{{Type: "crypto", Methods: []string{"sign"}}},
		Handlers: map[string]peer.HandlerFunc{"crypto.sign": func(context.Context, json.RawMessage) (any, error) {
			return map[string]string{"signature": "c2ln"}, nil
		}}}
	cfg := p.Config()
	cfg.Accept = peer.BTSPGate(btsp.ServerConfig{Seed: []byte(seed)}, false)
	sock := filepath.Join(dir, "beardog-fam1.sock")
	srv, err := peer.Listen(sock, cfg)
	if err != nil {
		t.Fatal(err)
	}
	benv := runEnv(t)
	benv["FAMILY_SEED"], benv["FAMILY_ID"] = seed, "fam1"
	want = runCLI(t, benv, "", "--family", "fam1", "call", sock, "crypto.sign", `{"msg":"aGk="}`)
	if want.code != 0 {
		t.Fatalf("recording over BTSP: %+v", want)
	}
	srv.Close()
	noSeed := map[string]string{}
	for k, v := range benv {
		if k != "FAMILY_SEED" {
			noSeed[k] = v
		}
	}
	if _, code := startMock(t, noSeed, "mock", sock); code != exitSecurity {
		t.Fatalf("a BTSP recording without a seed to serve with: want exit 5, got %d", code)
	}
	m, code = startMock(t, benv, "mock", sock, "--latency", "none")
	if code >= 0 {
		t.Fatalf("BTSP mock exited %d: %s", code, m.stderr())
	}
	got = runCLI(t, benv, "", "--no-history", "--family", "fam1", "call", sock, "crypto.sign", `{"msg":"aGk="}`)
	if got.code != 0 || got.stdout != want.stdout {
		t.Fatalf("over BTSP the mock answered %+v, want %q", got, want.stdout)
	}
	// Without the seed the client is refused: the mock serves BTSP only.
	if r := runCLI(t, noSeed, "", "--no-history", "--family", "fam1", "call", sock, "crypto.sign", `{"msg":"aGk="}`); r.code != exitSecurity {
		t.Fatalf("a cleartext call to a BTSP mock: want exit 5, got %+v", r)
	}
}

func TestMockRegisterVerifyAndBadInput(t *testing.T) {
	eco := ecosystem(t)
	l := startLedger(t, eco.Dir, nil, map[string]any{"method_info": []any{map[string]any{"name": "ledger.entry.list", "read_only": true}}})
	env := runEnv(t)
	runCLI(t, env, "", "--socket-dir", eco.Dir, "call", "ledger", "ledger.entry.list")
	runCLI(t, env, "", "--socket-dir", eco.Dir, "call", "ledger", "health.liveness")
	runCLI(t, env, "", "--socket-dir", eco.Dir, "call", "ledger", "ledger.entry.create")

	// verify: as recorded, then one drifted field.
	if r := runCLI(t, env, "", "--socket-dir", eco.Dir, "mock", "verify", "ledger"); r.code != 0 || !strings.Contains(r.stdout, "✓ ledger.entry.list") {
		t.Fatalf("verify before any change: %+v", r)
	}
	if n := l.count("ledger.entry.create"); n != 1 {
		t.Fatalf("verify must not send a call that is not safe to repeat (create sent %d times)", n)
	}
	runCLI(t, env, "", "--socket-dir", eco.Dir, "--no-history", "call", "ledger", "ledger.entry.append", `{"entry_id":"e-17","line":"x"}`)
	r := runCLI(t, env, "", "--socket-dir", eco.Dir, "mock", "verify", "ledger")
	if r.code != 1 || !strings.Contains(r.stdout, "1 field(s) drifted") || !strings.Contains(r.stdout, "~ .lines: 0 → 1") {
		t.Fatalf("verify after a change: want one drifted field, got %+v", r)
	}

	// --register: the registry lists the mock by name while it runs.
	l.srv.Close()
	m, code := startMock(t, env, "--socket-dir", eco.Dir, "mock", "ledger", "--listen", filepath.Join(eco.Dir, "ledger-mock.sock"), "--register")
	if code >= 0 {
		t.Fatalf("mock --register exited %d: %s", code, m.stderr())
	}
	reg := runCLI(t, runEnv(t), "", "--socket-dir", eco.Dir, "--no-history", "call", "songbird", "ipc.list")
	if !strings.Contains(reg.stdout, `"primal_id": "ledger"`) {
		t.Fatalf("the registry should list the mock:\n%s", reg.stdout)
	}
	m.stop(t)

	// Bad input.
	if r := runCLI(t, env, "", "--socket-dir", eco.Dir, "mock", "nosuchprimal"); r.code != 2 || !strings.Contains(r.stderr, "it has calls of: ledger") {
		t.Errorf("nothing recorded: want exit 2 naming what history has, got %+v", r)
	}
	if r := runCLI(t, env, "", "--socket-dir", eco.Dir, "mock", "ledger", "--fault", "ledger.entry.list=error:oops"); r.code != 2 || !strings.Contains(r.stderr, "^") {
		t.Errorf("a malformed fault: want exit 2 with a caret, got %+v", r)
	}
	startLedger(t, t.TempDir(), nil, nil) // another ledger, elsewhere
	busy := filepath.Join(eco.Dir, "songbird.sock")
	if r := runCLI(t, env, "", "--socket-dir", eco.Dir, "mock", "ledger", "--listen", busy); r.code != 3 || !strings.Contains(r.stderr, "in use") {
		t.Errorf("a --listen address in use: want exit 3, got %+v", r)
	}
}

// TestMockVerifyRedactedIsNoDrift: a recorded "[redacted]" was a secret
// whose value history never kept: today's value there is no drift, and a
// value under a secret-looking key is never printed.
func TestMockVerifyRedactedIsNoDrift(t *testing.T) {
	got := verifyChanges([]history.Change{
		{Path: ".session_id", Kind: history.Changed, Old: json.RawMessage(`"[redacted]"`), New: json.RawMessage(`"sess-0021"`)},
		{Path: ".token", Kind: history.Added, New: json.RawMessage(`"abc-secret-123"`)},
		{Path: ".lines", Kind: history.Changed, Old: json.RawMessage(`0`), New: json.RawMessage(`1`)},
	})
	if len(got) != 2 || got[0].Path != ".token" || string(got[0].New) != `"[redacted]"` || got[1].Path != ".lines" {
		t.Fatalf("verify's drift: %+v", got)
	}
}

// TestMockRegisterNeverTakesALivePrimalsPlace: squirrel is registered and
// answers; a mock of it may not register in its place.
func TestMockRegisterNeverTakesALivePrimalsPlace(t *testing.T) {
	eco := ecosystem(t)
	env := runEnv(t)
	if r := runCLI(t, env, "", "--socket-dir", eco.Dir, "call", "squirrel", "health.liveness"); r.code != 0 {
		t.Fatalf("recording: %+v", r)
	}
	m, code := startMock(t, env, "--socket-dir", eco.Dir, "mock", "squirrel", "--listen", filepath.Join(eco.Dir, "squirrel-mock.sock"), "--register")
	if code != exitUsage || !strings.Contains(m.stderr(), "which answers") {
		t.Fatalf("want exit 2 refusing to take a live primal's place, got %d:\n%s", code, m.stderr())
	}
	r := runCLI(t, runEnv(t), "", "--socket-dir", eco.Dir, "--no-history", "call", "songbird", "ipc.resolve", `{"primal_id":"squirrel"}`)
	if !strings.Contains(r.stdout, "squirrel.sock") || strings.Contains(r.stdout, "squirrel-mock.sock") {
		t.Fatalf("the registry should still send squirrel's callers to squirrel:\n%s", r.stdout)
	}
}
