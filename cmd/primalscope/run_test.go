package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
)

// ledger is a stateful test primal written from the Capability Wire
// Standard: it declares operation_dependencies, and, as a real primal
// would, refuses an operation whose prerequisite has not run (-32000; not
// -32002, which a riboCipher peer answers to an unprefixed request), so
// a book run out of order fails against it. It counts every call.
type ledger struct {
	srv     *peer.Server
	mu      sync.Mutex
	calls   map[string]int
	created bool
	lines   int
}

func (l *ledger) count(m string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls[m]
}

func startLedger(t *testing.T, dir string, opDeps map[string][]string, extra map[string]any) *ledger {
	t.Helper()
	l := &ledger{calls: map[string]int{}}
	counted := func(m string, h peer.HandlerFunc) peer.HandlerFunc {
		return func(ctx context.Context, p json.RawMessage) (any, error) {
			l.mu.Lock()
			l.calls[m]++
			l.mu.Unlock()
			return h(ctx, p)
		}
	}
	p := &peer.Primal{
		Name: "ledger", Version: "1.0.0", Domain: "ledger", Format: peer.FormatStandard, Level3: true,
		Groups: []peer.Group{{Type: "ledger", Methods: []string{"entry.create", "entry.append", "entry.list", "job.start"}}},
		OpDeps: opDeps,
		Extra:  extra,
		Handlers: map[string]peer.HandlerFunc{
			"ledger.entry.create": counted("ledger.entry.create", func(context.Context, json.RawMessage) (any, error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				l.created = true
				return map[string]any{"entry_id": "e-17", "created_at": time.Now().UTC().Format(time.RFC3339Nano)}, nil
			}),
			"ledger.entry.append": counted("ledger.entry.append", func(_ context.Context, raw json.RawMessage) (any, error) {
				var in struct {
					EntryID string `json:"entry_id"`
					Line    string `json:"line"`
				}
				_ = json.Unmarshal(raw, &in)
				l.mu.Lock()
				defer l.mu.Unlock()
				if !l.created || in.EntryID != "e-17" {
					return nil, &ipc.RPCError{Code: -32000, Message: "no such entry: create it first"}
				}
				l.lines++
				return map[string]any{"lines": l.lines, "last": in.Line}, nil
			}),
			"ledger.entry.list": counted("ledger.entry.list", func(context.Context, json.RawMessage) (any, error) {
				l.mu.Lock()
				defer l.mu.Unlock()
				return map[string]any{"lines": l.lines}, nil
			}),
			"ledger.job.start": counted("ledger.job.start", func(context.Context, json.RawMessage) (any, error) {
				return map[string]any{"done": false}, nil
			}),
		},
	}
	srv, err := peer.StartPrimal(filepath.Join(dir, "ledger.sock"), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	l.srv = srv
	return l
}

func writeBook(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runEnv(t *testing.T) map[string]string {
	d := t.TempDir()
	return map[string]string{"HOME": d, "XDG_STATE_HOME": d, "XDG_CONFIG_HOME": d}
}

var ledgerDeps = map[string][]string{"ledger.entry.append": {"ledger.entry.create"}}

// outOfOrder is the example: append is written before create and
// reads create's outcome; only order: dependencies makes it pass.
const outOfOrder = `name: ledger smoke
vars: {line: hello}
order: %s
steps:
  - name: append
    call: ledger ledger.entry.append
    params: {entry_id: "e-17", line: "{{ .vars.line }}"}
    expect: {result: '.lines == 1 and .last == "hello"'}
  - name: create
    call: ledger ledger.entry.create
    expect: {result: '.entry_id | startswith("e-")'}
`

func TestRunOrderDependencies(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, ledgerDeps, nil)
	book := writeBook(t, dir, "deps.yaml", strings.Replace(outOfOrder, "%s", "dependencies", 1))
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 0 {
		t.Fatalf("order: dependencies: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if i, j := strings.Index(r.stdout, "create"), strings.Index(r.stdout, "append"); i < 0 || j < 0 || i > j {
		t.Errorf("create should run (and be reported) before append:\n%s", r.stdout)
	}
	if l.count("ledger.entry.append") != 1 || l.count("ledger.entry.create") != 1 {
		t.Errorf("each step is sent once: %v", l.calls)
	}

	// As written, the same book fails: the peer refuses append before create.
	dir2 := t.TempDir()
	startLedger(t, dir2, ledgerDeps, nil)
	book2 := writeBook(t, dir2, "asis.yaml", strings.Replace(outOfOrder, "%s", "as-written", 1))
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir2, "run", book2)
	if r.code != 1 || !strings.Contains(r.stdout, "-32000") {
		t.Fatalf("as-written: want exit 1 with the peer's -32000, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestRunForwardReferenceIsAnErrorBeforeSending(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, ledgerDeps, nil)
	book := writeBook(t, dir, "fwd.yaml", `name: fwd
steps:
  - name: append
    call: ledger ledger.entry.append
    params: {entry_id: "{{ .steps.create.result.entry_id }}"}
  - name: create
    call: ledger ledger.entry.create
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 2 || !regexp.MustCompile(`fwd\.yaml:5:\d+: .*\.steps\.create.*has not run`).MatchString(r.stderr) {
		t.Fatalf("want exit 2 with line and column, got %d\n%s", r.code, r.stderr)
	}
	if n := l.count("ledger.entry.create") + l.count("ledger.entry.append"); n != 0 {
		t.Errorf("nothing may be sent for an invalid book; %d calls were", n)
	}
	for name, text := range map[string]string{
		`no step named "nope"`:  "steps:\n  - call: ledger ledger.entry.list\n    params: {x: \"{{ .steps.nope.result }}\"}\n",
		`no variable "who"`:     "steps:\n  - call: ledger ledger.entry.list\n    if: '.vars.who == 1'\n",
		`unknown key "expct"`:   "steps:\n  - call: ledger ledger.entry.list\n    expct: {}\n",
		`call is TARGET METHOD`: "steps:\n  - call: ledger\n",
		"jq":                    "steps:\n  - call: ledger ledger.entry.list\n    expect: {result: '.a |||'}\n",
	} {
		b := writeBook(t, dir, "bad.yaml", text)
		r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", b)
		if r.code != 2 || !strings.Contains(r.stderr, name) || !regexp.MustCompile(`bad\.yaml:\d+:\d+: `).MatchString(r.stderr) {
			t.Errorf("%s: want exit 2 naming it with a place, got %d: %s", name, r.code, r.stderr)
		}
	}
	if n := l.count("ledger.entry.list"); n != 0 {
		t.Errorf("invalid books sent %d calls", n)
	}
}

func TestRunCycleRefused(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, map[string][]string{
		"ledger.entry.append": {"ledger.entry.create"},
		"ledger.entry.create": {"ledger.entry.list"},
		"ledger.entry.list":   {"ledger.entry.append"},
	}, nil)
	book := writeBook(t, dir, "cycle.yaml", `name: cycle
order: dependencies
steps:
  - {name: a, call: ledger ledger.entry.append}
  - {name: c, call: ledger ledger.entry.create}
  - {name: l, call: ledger ledger.entry.list}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 2 || !strings.Contains(r.stderr, "a cycle:") || !strings.Contains(r.stderr, "→") {
		t.Fatalf("want exit 2 naming the cycle's path, got %d\n%s", r.code, r.stderr)
	}
	for _, m := range []string{"a", "c", "l"} {
		if !strings.Contains(r.stderr, m) {
			t.Errorf("the cycle's path should name step %s: %s", m, r.stderr)
		}
	}
	if n := l.count("ledger.entry.create") + l.count("ledger.entry.append") + l.count("ledger.entry.list"); n != 0 {
		t.Errorf("a refused book sent %d calls", n)
	}
}

func TestRunRetryNeverResendsUnsafeCalls(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "retry.yaml", `name: retry
steps:
  - name: start
    call: ledger ledger.job.start
    retry: {until: .done, times: 5, every: 10ms}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 1 || !strings.Contains(r.stdout, "not sent again") {
		t.Fatalf("want exit 1 saying it was not sent again, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := l.count("ledger.job.start"); n != 1 {
		t.Fatalf("a call not marked idempotent was sent %d times; never twice", n)
	}

	// Marked idempotent by the book: retried up to times.
	book = writeBook(t, dir, "retry2.yaml", `name: retry
steps:
  - name: start
    call: ledger ledger.job.start
    idempotent: true
    retry: {until: .done, times: 3, every: 10ms}
`)
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 1 || l.count("ledger.job.start") != 1+3 {
		t.Fatalf("idempotent: want 3 more calls and exit 1, got %d calls, exit %d\n%s", l.count("ledger.job.start"), r.code, r.stdout)
	}

	// Marked read-only by the target's capability list (method_info).
	dir3 := t.TempDir()
	l3 := startLedger(t, dir3, nil, map[string]any{"method_info": []any{map[string]any{"name": "ledger.job.start", "read_only": true}}})
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir3, "run", writeBook(t, dir3, "r.yaml", `steps:
  - call: ledger ledger.job.start
    retry: {until: .done, times: 2, every: 10ms}
`))
	if r.code != 1 || l3.count("ledger.job.start") != 2 {
		t.Fatalf("read-only by the capability list: want 2 calls, got %d (exit %d)\n%s", l3.count("ledger.job.start"), r.code, r.stdout)
	}
}

func TestRunEqualsDiffAndJUnit(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "eq.yaml", `name: equals
steps:
  - name: create
    call: ledger ledger.entry.create
    expect:
      equals: {entry_id: e-17, created_at: "whenever"}
      ignore: [.created_at]
  - name: wrong
    call: ledger ledger.entry.list
    expect: {equals: {lines: 3}}
  - name: later
    skip: not yet
    call: ledger ledger.entry.list
`)
	junit := filepath.Join(dir, "report.xml")
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--junit", junit)
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "~ .lines: 3 → 0") {
		t.Errorf("a failed equals shows its diff:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "✓ create") {
		t.Errorf("an ignored volatile field passes:\n%s", r.stdout)
	}
	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, data)
	}
	if doc.Tests != 3 || doc.Failures != 1 || doc.Skipped != 1 || len(doc.Suites) != 1 || doc.Suites[0].Name != "equals" {
		t.Fatalf("JUnit counts: %+v", doc)
	}
	c := doc.Suites[0].Cases[1]
	if c.Name != "wrong" || c.Failure == nil || !strings.Contains(c.Failure.Text, ".lines: 3 → 0") {
		t.Errorf("the failure carries the diff: %+v", c)
	}
	if doc.Suites[0].Cases[2].Skipped == nil {
		t.Errorf("a skipped step is <skipped>")
	}
}

func TestRunTAPJSONAndSecrets(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "s.yaml", `name: secrets
steps:
  - name: create
    call: ledger ledger.entry.create
    params: {password: "{{ .env.LEDGER_PASSWORD }}", note: "x"}
    expect: {result: '.entry_id == "other"'}
`)
	env := runEnv(t)
	env["LEDGER_PASSWORD"] = "hunter2-very-secret"
	r := runCLI(t, env, "", "--socket-dir", dir, "run", book, "--tap")
	if r.code != 1 || !strings.HasPrefix(r.stdout, "TAP version 14\n") || !strings.HasSuffix(r.stdout, "1..1\n") || !strings.Contains(r.stdout, "not ok 1 - create") {
		t.Fatalf("TAP:\n%s", r.stdout)
	}
	r = runCLI(t, env, "", "--socket-dir", dir, "run", book, "--json")
	var step map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &step); err != nil || step["status"] != "fail" {
		t.Fatalf("--json: one object a step: %v\n%s", err, r.stdout)
	}
	h := runCLI(t, env, "", "history", "--json")
	for _, out := range []string{r.stdout, r.stderr, h.stdout} {
		if strings.Contains(out, "hunter2-very-secret") {
			t.Fatalf("a secret reached a report or history:\n%s", out)
		}
	}
	if !strings.Contains(h.stdout, "ledger.entry.create") {
		t.Errorf("a book's calls are recorded in history:\n%s", h.stdout)
	}
}

func TestRunIncludeForEachIf(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	writeBook(t, dir, "setup.yaml", `name: setup
vars: {line: from-setup}
steps:
  - name: create
    call: ledger ledger.entry.create
  - name: first
    call: ledger ledger.entry.append
    params: {entry_id: e-17, line: "{{ .vars.line }}"}
    expect: {result: '.last == "overridden"'}
`)
	book := writeBook(t, dir, "main.yaml", `name: main
vars: {lines: [a, b, c], never: false}
steps:
  - include: setup.yaml
    vars: {line: overridden}
  - name: each
    for_each: "{{ .vars.lines }}"
    call: ledger ledger.entry.append
    params: {entry_id: e-17, line: "{{ .item }}-{{ .index }}"}
    expect: {result: '.last | test("^[abc]-[0-2]$")'}
  - name: skipped
    if: .vars.never
    call: ledger ledger.entry.create
  - name: count
    call: ledger ledger.entry.list
    expect: {result: '.lines == 4'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if l.count("ledger.entry.append") != 4 || l.count("ledger.entry.create") != 1 {
		t.Errorf("include, for_each and if: calls %v", l.calls)
	}
	if !strings.Contains(r.stdout, "each[2]") || !strings.Contains(r.stdout, "- skipped") {
		t.Errorf("report:\n%s", r.stdout)
	}
}

func TestRunTimeoutBoundsTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	srv, err := peer.Listen(filepath.Join(dir, "silent.sock"), peer.Config{Behavior: peer.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "t.yaml", "steps:\n  - call: silent health.liveness\n  - call: silent health.liveness\n")
	start := time.Now()
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "--timeout", "1s", "run", book)
	if r.code != 4 {
		t.Fatalf("want exit 4, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if el := time.Since(start); el > 1*time.Second+deadlineMargin+inProcessSlack {
		t.Fatalf("--timeout 1s ran %s", el)
	}
}

// TestRunDemoBook runs the repository's own book against the demo (as
// .ci/run does against demo --serve), events included.
func TestRunDemoBook(t *testing.T) {
	d := serveDemo(t)
	r := runCLI(t, runEnv(t), "", "--socket-dir", d.Dir, "--family", demo.DefaultFamily, "--family-seed-file", filepath.Join(d.Dir, "family.seed"), "run", filepath.Join("..", "..", "examples", "demo.yaml"))
	if r.code != 0 {
		t.Fatalf("the demo book: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "0 failed") {
		t.Errorf("report:\n%s", r.stdout)
	}
}

// TestHistoryExportAsRunbook: calls made by hand become a book that passes
// when run again: volatile fields ignored, redacted params read from the
// environment, an error kept as its code; the secret itself is never written.
func TestHistoryExportAsRunbook(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	env := runEnv(t)
	for _, args := range [][]string{
		{"call", "ledger", "ledger.entry.create", `{"owner":"ada","password":"correct-horse"}`},
		{"call", "ledger", "ledger.entry.create", `{"owner":"ada","password":"correct-horse"}`},
		{"call", "ledger", "ledger.entry.append", `{"entry_id":"nope"}`},
	} {
		runCLI(t, env, "", append([]string{"--socket-dir", dir}, args...)...)
	}
	r := runCLI(t, env, "", "history", "export", "1", "2", "3", "--as", "runbook")
	if r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout, "correct-horse") {
		t.Fatalf("the secret was written into the book:\n%s", r.stdout)
	}
	for _, want := range []string{"{{ .env.PASSWORD }}", `ignore: [".created_at"]`, "expect: {error: -32000}"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the book lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "set PASSWORD") {
		t.Errorf("stderr should name the variable to set: %s", r.stderr)
	}
	book := writeBook(t, dir, "exported.yaml", r.stdout)
	env["PASSWORD"] = "correct-horse"
	r = runCLI(t, env, "", "--socket-dir", dir, "run", book)
	if r.code != 0 {
		t.Fatalf("the exported book does not pass: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "", "history", "export", "1", "2"); r.code != 2 {
		t.Errorf("--as command takes one call: exit %d", r.code)
	}
}

// TestRunEqualsTemplatesAndCutRuns: equals' strings are templates as
// params are; a run cut by --fail-fast lists the steps it never reached as
// skipped, in every report.
func TestRunEqualsTemplatesAndCutRuns(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "eqt.yaml", `vars: {id: e-17}
steps:
  - name: create
    call: ledger ledger.entry.create
    expect:
      equals: {entry_id: "{{ .vars.id }}", created_at: x}
      ignore: [.created_at]
  - name: wrong
    call: ledger ledger.entry.list
    expect: {equals: {lines: 9}}
  - name: never
    call: ledger ledger.entry.list
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--fail-fast", "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		got = append(got, m)
	}
	if len(got) != 3 || got[0]["status"] != "pass" || got[1]["status"] != "fail" || got[2]["status"] != "skip" ||
		!strings.Contains(got[2]["reason"].(string), "--fail-fast") {
		t.Fatalf("want pass (equals templated), fail, skip (not reached): %s", r.stdout)
	}
}
