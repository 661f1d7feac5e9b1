package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
)

// The tests below give each book key the issue lists a test of its own,
// against the simulated peers of internal/peer.

// jsonSteps parses a --json report: one object a step.
func jsonSteps(t *testing.T, out string) []map[string]any {
	t.Helper()
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("--json line %q: %v", line, err)
		}
		got = append(got, m)
	}
	return got
}

// statuses is each step's label and status, as "label=status".
func statuses(steps []map[string]any) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s["step"].(string)+"="+s["status"].(string))
	}
	return out
}

// TestRunExpectErrorMessage: error_message is a regular expression over the
// peer's error message; alone it asks for an error, with error it narrows it.
func TestRunExpectErrorMessage(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "em.yaml", `steps:
  - name: both
    call: ledger ledger.entry.append
    params: {entry_id: nope}
    expect: {error: -32000, error_message: "create it first$"}
  - name: alone
    call: ledger ledger.entry.append
    params: {entry_id: nope}
    expect: {error_message: "(?i)NO SUCH entry"}
  - name: mismatch
    call: ledger ledger.entry.append
    params: {entry_id: nope}
    expect: {error: -32000, error_message: "^permission denied"}
  - name: noerror
    call: ledger ledger.entry.list
    expect: {error_message: "."}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if got := strings.Join(statuses(steps), " "); got != "both=pass alone=pass mismatch=fail noerror=fail" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	if reason := steps[2]["reason"].(string); !strings.Contains(reason, `"no such entry: create it first" does not match /^permission denied/`) {
		t.Errorf("a mismatch names the message and the pattern: %s", reason)
	}
	if reason := steps[3]["reason"].(string); !strings.Contains(reason, "expected an error, got a result") {
		t.Errorf("error_message alone asks for an error: %s", reason)
	}
}

// TestRunExpectUnderMS: under_ms bounds the call's duration; a peer that
// holds every answer back 300 ms fails a 50 ms bound (a lower bound on the
// peer's delay, never a guess at how fast this machine is) and passes a
// bound as long as the call's own timeout.
func TestRunExpectUnderMS(t *testing.T) {
	dir := t.TempDir()
	srv, err := peer.Listen(filepath.Join(dir, "slow.sock"), peer.Config{
		Behavior: peer.Behavior{Delay: 300 * time.Millisecond},
		Methods: map[string]peer.HandlerFunc{"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "alive"}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "ms.yaml", `steps:
  - name: roomy
    call: slow health.liveness
    expect: {under_ms: 10000}
  - name: tight
    call: slow health.liveness
    expect: {result: '.status == "alive"', under_ms: 50.5}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if got := strings.Join(statuses(steps), " "); got != "roomy=pass tight=fail" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	if reason := steps[1]["reason"].(string); !strings.Contains(reason, "over under_ms 50.5") {
		t.Errorf("the reason names the bound: %s", reason)
	}
	if ms := steps[1]["ms"].(float64); ms < 300 {
		t.Errorf("the step reports %g ms, less than the peer's 300 ms delay", ms)
	}
}

// TestRunExpectEvent: the listener is started before the call, so a
// notification the peer sends while answering is seen; a match that never
// holds fails after within, naming how many events it saw; a step's
// timeout cuts the wait short and says so.
func TestRunExpectEvent(t *testing.T) {
	dir := t.TempDir()
	var srv *peer.Server
	var mu sync.Mutex
	notified := map[*peer.ServerConn]bool{}
	srv, err := peer.Listen(filepath.Join(dir, "ledger.sock"), peer.Config{
		Concurrent: true,
		Methods: map[string]peer.HandlerFunc{"ledger.entry.append": func(ctx context.Context, _ json.RawMessage) (any, error) {
			// Each step opens a listener of its own: wait (bounded) until
			// the server has accepted a connection it has not notified
			// yet (two at the first call: the caller's and the listener's),
			// so the notification cannot go out before the step's listener
			// is there; the earlier steps' listeners may linger.
			mu.Lock()
			need := 1
			if len(notified) == 0 {
				need = 2
			}
			mu.Unlock()
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			for {
				mu.Lock()
				fresh := 0
				for _, c := range srv.Conns() {
					if !notified[c] {
						fresh++
					}
				}
				mu.Unlock()
				if fresh >= need {
					break
				}
				select {
				case <-wctx.Done():
					return nil, &ipc.RPCError{Code: -32000, Message: "no listener connected"}
				case <-time.After(5 * time.Millisecond):
				}
			}
			mu.Lock()
			for _, c := range srv.Conns() {
				notified[c] = true
				_ = c.Notify("ledger.entry.appended", map[string]any{"line": "hello"})
			}
			mu.Unlock()
			return map[string]any{"lines": 1}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "ev.yaml", `vars: {src: ledger}
steps:
  - name: seen
    call: ledger ledger.entry.append
    expect:
      result: '.lines == 1'
      event: {from: "{{ .vars.src }}", match: '.kind == "notification" and .name == "ledger.entry.appended" and .payload.line == "hello"', within: 5s}
  - name: unseen
    call: ledger ledger.entry.append
    expect:
      event: {from: ledger, match: '.name == "ledger.entry.removed"', within: 300ms}
  - name: cut
    call: ledger ledger.entry.append
    timeout: 1s
    expect:
      event: {from: ledger, match: '.name == "ledger.entry.removed"', within: 30s}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 1 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if got := strings.Join(statuses(steps), " "); got != "seen=pass unseen=fail cut=fail" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	if reason := steps[1]["reason"].(string); !regexp.MustCompile(`nothing from ledger matched .* within 300ms \([1-9]\d* seen\)`).MatchString(reason) {
		t.Errorf("an event that never came is named, with what was seen: %s", reason)
	}
	if reason := steps[2]["reason"].(string); !strings.Contains(reason, "the step's timeout (1s) left (within: 30s;") {
		t.Errorf("a step's timeout bounds its wait for an event, and says so: %s", reason)
	}
}

// asker is a primal that, while answering notary.sign, asks its client
// client.confirm on the same connection (a server-initiated request) and
// answers with what the client said.
func startAsker(t *testing.T, dir string) *peer.Server {
	t.Helper()
	var srv *peer.Server
	var err error
	srv, err = peer.Listen(filepath.Join(dir, "notary.sock"), peer.Config{
		Concurrent: true, // the client's answer is read while the handler waits
		Methods: map[string]peer.HandlerFunc{"notary.sign": func(ctx context.Context, _ json.RawMessage) (any, error) {
			cs := srv.Conns()
			if len(cs) != 1 {
				return nil, &ipc.RPCError{Code: -32000, Message: "want one client connection"}
			}
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			m, err := cs[0].Ask(actx, "client.confirm", map[string]any{"question": "sign?"})
			if err != nil {
				return nil, &ipc.RPCError{Code: -32000, Message: "the client did not answer: " + err.Error()}
			}
			if m.Error != nil {
				return map[string]any{"signed": false, "client_error": m.Error}, nil
			}
			return map[string]any{"signed": true, "client_said": m.Result}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestRunServeAnswersThePeer: a step's serve: block answers the request a
// peer sends back during the call (templated); a step without one answers
// method-not-found, and the block does not outlive its step.
func TestRunServeAnswersThePeer(t *testing.T) {
	dir := t.TempDir()
	startAsker(t, dir)
	book := writeBook(t, dir, "serve.yaml", `vars: {who: ada}
steps:
  - name: served
    call: notary notary.sign
    serve:
      client.confirm: {ok: true, by: "{{ .vars.who }}"}
    expect: {equals: {signed: true, client_said: {ok: true, by: ada}}}
  - name: unserved
    call: notary notary.sign
    expect: {result: '.signed == false and .client_error.code == -32601'}
  - name: other
    call: notary notary.sign
    serve:
      client.other: 1
    expect: {result: '.client_error.code == -32601'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Join(statuses(jsonSteps(t, r.stdout)), " "); got != "served=pass unserved=pass other=pass" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
}

// TestRunStepTimeout: a step's timeout bounds that step alone: the silent
// peer's step fails as timed out and the run goes on to the next step
// (without it the call would take the whole run's --timeout: exit 4).
func TestRunStepTimeout(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	srv, err := peer.Listen(filepath.Join(dir, "silent.sock"), peer.Config{Behavior: peer.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "st.yaml", `steps:
  - name: hang
    call: silent health.liveness
    timeout: 300ms
  - name: after
    call: ledger ledger.entry.list
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "--timeout", "5s", "run", book, "--json")
	if r.code != 1 {
		t.Fatalf("want exit 1 (a step failed, the run did not run out), got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if got := strings.Join(statuses(steps), " "); got != "hang=fail after=pass" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	if steps[0]["outcome"] != "timeout" {
		t.Errorf("the step's outcome is timeout: %v", steps[0])
	}
	if l.count("ledger.entry.list") != 1 {
		t.Errorf("the step after a timed-out one runs")
	}

	// A step's timeout also bounds its retries, and says it was the
	// step's, not the run's, time that ran out.
	book = writeBook(t, dir, "st2.yaml", `steps:
  - name: poll
    call: ledger ledger.job.start
    idempotent: true
    retry: {until: .done, times: 50, every: 1s}
    timeout: 300ms
  - name: after
    call: ledger ledger.entry.list
`)
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir, "--timeout", "20s", "run", book, "--json")
	steps = jsonSteps(t, r.stdout)
	if r.code != 1 || strings.Join(statuses(steps), " ") != "poll=fail after=pass" {
		t.Fatalf("want poll to fail and the run to go on, got %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if reason := steps[0]["reason"].(string); !strings.Contains(reason, "the step's timeout (300ms) ran out while waiting to retry") {
		t.Errorf("the reason names the step's timeout: %s", reason)
	}
	if n := l.count("ledger.job.start"); n != 1 {
		t.Errorf("within 300ms a 1s retry sends once, not %d times", n)
	}
}

// TestRunIdempotentRetryUntilHolds: a call marked idempotent is sent again
// until retry.until holds, and no more: a job that is done at its third
// status call passes after exactly three.
func TestRunIdempotentRetryUntilHolds(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	n := 0
	srv, err := peer.Listen(filepath.Join(dir, "jobs.sock"), peer.Config{
		Methods: map[string]peer.HandlerFunc{"job.status": func(context.Context, json.RawMessage) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return map[string]any{"done": n >= 3, "polls": n}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "poll.yaml", `steps:
  - name: wait
    call: jobs job.status
    idempotent: true
    retry: {until: .done, times: 10, every: 10ms}
    expect: {result: '.polls == 3'}
  - name: then
    if: '.steps.wait.result.done'
    call: jobs job.status
    expect: {result: '.polls == 4'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if steps[0]["attempts"] != float64(3) {
		t.Errorf("attempts: %v", steps[0]["attempts"])
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 4 {
		t.Errorf("want 3 polls then 1, the peer saw %d", n)
	}
}

// TestRunIfReadsAStepAndSkip: if: reads an earlier step's outcome (result
// and error); a false one and a skip: are reported as skipped with their
// reason and send nothing.
func TestRunIfReadsAStepAndSkip(t *testing.T) {
	dir := t.TempDir()
	l := startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "if.yaml", `steps:
  - name: bad
    call: ledger ledger.entry.append
    params: {entry_id: nope}
    expect: {error: -32000}
  - name: create
    if: '.steps.bad.error.code == -32000'
    call: ledger ledger.entry.create
  - name: append
    if: '.steps.create.result.entry_id | startswith("e-")'
    call: ledger ledger.entry.append
    params: {entry_id: "{{ .steps.create.result.entry_id }}", line: x}
  - name: again
    if: '.steps.bad.error == null'
    call: ledger ledger.entry.create
  - name: later
    skip: the ledger has no delete yet
    call: ledger ledger.entry.create
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	steps := jsonSteps(t, r.stdout)
	if got := strings.Join(statuses(steps), " "); got != "bad=pass create=pass append=pass again=skip later=skip" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	if reason := steps[3]["reason"].(string); !strings.Contains(reason, ".steps.bad.error == null") {
		t.Errorf("a false if: is the reason: %s", reason)
	}
	if reason := steps[4]["reason"].(string); reason != "skip: the ledger has no delete yet" {
		t.Errorf("skip: gives its reason: %q", reason)
	}
	if c, a := l.count("ledger.entry.create"), l.count("ledger.entry.append"); c != 1 || a != 2 {
		t.Errorf("skipped steps send nothing: create %d (want 1), append %d (want 2)", c, a)
	}
	// The text report shows a skipped step with its reason.
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book)
	if !strings.Contains(r.stdout, "the ledger has no delete yet") {
		t.Errorf("text report:\n%s", r.stdout)
	}
}

// TestRunCoverage: --coverage lists, per target, which of the methods its
// capability list provides the books called, and which they did not.
func TestRunCoverage(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	book := writeBook(t, dir, "cov.yaml", `steps:
  - call: ledger ledger.entry.create
  - call: ledger ledger.entry.list
  - call: ledger ledger.entry.list
  - {call: ledger ledger.job.start, skip: not now}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--coverage")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^  ledger: 2 of (\d+) provided methods called\n    not called: (.*)$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("coverage in the text report:\n%s", r.stdout)
	}
	for _, want := range []string{"ledger.entry.append", "ledger.job.start"} {
		if !strings.Contains(m[2], want) {
			t.Errorf("not called should list %s: %s", want, m[2])
		}
	}
	for _, called := range []string{"ledger.entry.create", "ledger.entry.list"} {
		if strings.Contains(m[2], called) {
			t.Errorf("%s was called: %s", called, m[2])
		}
	}
	if r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book); strings.Contains(r.stdout+r.stderr, "coverage:") {
		t.Errorf("no coverage without --coverage:\n%s%s", r.stdout, r.stderr)
	}
}

// TestRunCoverageKeysTheResolvedTarget: one target written three ways (an
// alias symlink ai.sock → ledger.sock, its name, its socket's path) is
// one target in --coverage, with every spelling shown (it was three, each
// counting its own calls); the coverage is in the JSON report (its last
// line) for CI, and in TAP as comments, TAP and JUnit still valid.
func TestRunCoverageKeysTheResolvedTarget(t *testing.T) {
	dir := t.TempDir()
	startLedger(t, dir, nil, nil)
	if err := os.Symlink(filepath.Join(dir, "ledger.sock"), filepath.Join(dir, "ai.sock")); err != nil {
		t.Fatal(err)
	}
	book := writeBook(t, dir, "cov.yaml", `steps:
  - call: ledger ledger.entry.list
  - call: `+filepath.Join(dir, "ledger.sock")+` ledger.entry.list
  - call: ai ledger.entry.create
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--coverage", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var got struct {
		Coverage []struct {
			Target         string   `json:"target"`
			Spellings      []string `json:"spellings"`
			Endpoint       string   `json:"endpoint"`
			Called         []string `json:"called"`
			Provided       int      `json:"provided"`
			ProvidedCalled int      `json:"provided_called"`
			NotCalled      []string `json:"not_called"`
		} `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &got); err != nil || len(lines) != 4 {
		t.Fatalf("want three step lines and a coverage line: %v\n%s", err, r.stdout)
	}
	if len(got.Coverage) != 1 {
		t.Fatalf("one target, spelled three ways, is %d targets: %+v", len(got.Coverage), got.Coverage)
	}
	c := got.Coverage[0]
	real, err := filepath.EvalSymlinks(filepath.Join(dir, "ledger.sock"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Spellings, " ") != "ledger "+filepath.Join(dir, "ledger.sock")+" ai" || c.Target != "ledger" ||
		strings.Join(c.Called, " ") != "ledger.entry.create ledger.entry.list" || c.ProvidedCalled != 2 || c.Provided < 4 ||
		c.Endpoint != "unix:"+real {
		t.Errorf("coverage %+v", c)
	}
	if strings.Contains(r.stderr, "coverage") {
		t.Errorf("the coverage is in the report, not on stderr:\n%s", r.stderr)
	}

	junit := filepath.Join(dir, "report.xml")
	r = runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--coverage", "--tap", "--junit", junit)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tapLine := regexp.MustCompile(`^(TAP version 14|#.*|(    )*(ok|not ok) \d+( - .*)?|(    )*1\.\.\d+|\s+(---|\.\.\.|\S.*))$`)
	for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		if !tapLine.MatchString(l) {
			t.Errorf("not TAP: %q\n%s", l, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "# coverage:\n#   ledger, "+filepath.Join(dir, "ledger.sock")+", ai (one target: unix:"+real+"): 2 of ") || !strings.Contains(r.stdout, ": 2 of ") || !strings.HasSuffix(r.stdout, "1..1\n") {
		t.Errorf("TAP report:\n%s", r.stdout)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	// The three steps, and the coverage's suite: a testcase per target.
	var x struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name  string `xml:"name,attr"`
			Tests int    `xml:"tests,attr"`
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name string `xml:"name,attr"`
				Out  string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &x); err != nil || x.Tests != 4 || len(x.Suites) != 2 {
		t.Fatalf("JUnit: %v, %d tests\n%s", err, x.Tests, raw)
	}
	cs := x.Suites[1]
	if cs.Name != "coverage" || cs.Tests != 1 || len(cs.Cases) != 1 || cs.Cases[0].Name != "ledger" ||
		!strings.Contains(cs.Cases[0].Out, "(one target: unix:"+real+"): 2 of ") || !strings.Contains(cs.Cases[0].Out, "not called: ") {
		t.Errorf("JUnit coverage suite %+v\n%s", cs, raw)
	}
	props := map[string]string{}
	for _, p := range cs.Props {
		props[p.Name] = p.Value
	}
	if props["coverage.1.called"] != "ledger.entry.create, ledger.entry.list" || props["coverage.1.provided_called"] != "2" {
		t.Errorf("JUnit coverage properties %v", props)
	}
}

// TestRunBusSessionPoolServe runs a book against demo --serve's stdio bus
// (a real process with worker processes): pool: picks the pool, session:
// is carried to the worker and pins it (its per-session counter counts on),
// and a worker's request to the session's owner is answered by serve:.
func TestRunBusSessionPoolServe(t *testing.T) {
	d := serveDemo(t)
	dir := t.TempDir()
	book := writeBook(t, dir, "bus.yaml", `vars: {sid: S1}
steps:
  - name: pooled
    call: stdiobus/echo echo.ping
    pool: agent
    expect: {result: '.pool == "agent" and .method == "echo.ping"'}
  - name: first
    call: stdiobus/agent session.count
    session: "{{ .vars.sid }}"
    expect: {result: '.count == 1'}
  - name: echoed
    call: stdiobus/agent echo.ping
    session: "{{ .vars.sid }}"
    expect: {result: '.sessionId == "S1"'}
  - name: second
    call: stdiobus/agent session.count
    session: S1
    expect: {result: '.count == 2'}
  - name: other
    call: stdiobus/agent session.count
    session: S2
    expect: {result: '.count == 1'}
  - name: asked
    call: stdiobus/agent bus.ask
    session: S1
    params: {question: go?}
    serve:
      server.ask: {go: true}
    expect: {result: '.asked == "server.ask" and .answer.go == true'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", d.Dir, "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Join(statuses(jsonSteps(t, r.stdout)), " "); got != "pooled=pass first=pass echoed=pass second=pass other=pass asked=pass" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
	// --coverage counts a call where it went: stdiobus/echo with pool:
	// agent is the agent pool (it counted as the echo pool).
	r = runCLI(t, runEnv(t), "", "--socket-dir", d.Dir, "run", book, "--json", "--coverage")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var cov struct {
		Coverage []struct {
			Spellings []string `json:"spellings"`
			Endpoint  string   `json:"endpoint"`
			Called    []string `json:"called"`
			NotCalled []string `json:"not_called"`
		} `json:"coverage"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &cov); err != nil || len(cov.Coverage) != 1 {
		t.Fatalf("one target, the agent pool: %v\n%s", err, r.stdout)
	}
	c := cov.Coverage[0]
	if !strings.HasSuffix(c.Endpoint, "#pool=agent") || strings.Join(c.Spellings, " ") != "stdiobus/echo stdiobus/agent" ||
		strings.Join(c.Called, " ") != "bus.ask echo.ping session.count" {
		t.Errorf("coverage %+v", c)
	}
}

// askingHolon is the smallest Holon-RPC server (holon-rpc.md: the
// holon-rpc subprotocol, one JSON envelope a text frame, string ids, the
// server's own ids "s<N>") that asks back: on notary.v1.Notary/Sign it
// sends client.v1.Client/Confirm to the caller, reads frames until that
// request's answer arrives (answering rpc.heartbeat meanwhile), and answers
// the call with what the client said.
func startAskingHolon(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"holon-rpc"}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		if ws.Subprotocol() != "holon-rpc" {
			ws.Close(websocket.StatusProtocolError, "holon-rpc only")
			return
		}
		type env struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      string          `json:"id,omitempty"`
			Method  string          `json:"method,omitempty"`
			Params  json.RawMessage `json:"params,omitempty"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   json.RawMessage `json:"error,omitempty"`
		}
		write := func(e env) bool {
			e.JSONRPC = "2.0"
			b, _ := json.Marshal(e)
			return ws.Write(ctx, websocket.MessageText, b) == nil
		}
		read := func() (env, bool) {
			var e env
			typ, data, err := ws.Read(ctx)
			if err != nil || typ != websocket.MessageText || json.Unmarshal(data, &e) != nil {
				return e, false
			}
			return e, true
		}
		asked := 0
		for {
			req, ok := read()
			if !ok {
				return
			}
			switch req.Method {
			case "rpc.heartbeat":
				write(env{ID: req.ID, Result: json.RawMessage(`{}`)})
				continue
			case "notary.v1.Notary/Sign":
			default:
				write(env{ID: req.ID, Error: json.RawMessage(`{"code":12,"message":"method not registered"}`)})
				continue
			}
			asked++
			sid := "s" + strconv.Itoa(asked)
			if !write(env{ID: sid, Method: "client.v1.Client/Confirm", Params: json.RawMessage(`{"question":"sign?"}`)}) {
				return
			}
			for {
				ans, ok := read()
				if !ok {
					return
				}
				if ans.Method == "rpc.heartbeat" {
					write(env{ID: ans.ID, Result: json.RawMessage(`{}`)})
					continue
				}
				if ans.Method != "" || ans.ID != sid {
					ws.Close(websocket.StatusProtocolError, "expected the answer to "+sid)
					return
				}
				out, _ := json.Marshal(map[string]json.RawMessage{"client_said": ans.Result, "client_error": ans.Error})
				write(env{ID: req.ID, Result: out})
				break
			}
		}
	})}
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		cancel()
		srv.Close()
		wg.Wait()
	})
	return "ws://" + ln.Addr().String() + "/rpc"
}

// TestRunServeOverHolon: over Holon-RPC (WebSocket), a holon that asks the
// caller back during a call gets the step's serve: answer; with none, the
// client answers that it does not know the method.
func TestRunServeOverHolon(t *testing.T) {
	url := startAskingHolon(t)
	dir := t.TempDir()
	book := writeBook(t, dir, "holon.yaml", `name: holon
steps:
  - name: served
    call: `+url+` notary.v1.Notary/Sign
    params: {doc: d1}
    serve:
      client.v1.Client/Confirm: {ok: true}
    expect: {result: '.client_said == {ok: true} and .client_error == null'}
  - name: unserved
    call: `+url+` notary.v1.Notary/Sign
    params: {doc: d2}
    expect: {result: '.client_said == null and .client_error.code == -32601'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.Join(statuses(jsonSteps(t, r.stdout)), " "); got != "served=pass unserved=pass" {
		t.Fatalf("statuses: %s\n%s", got, r.stdout)
	}
}

// TestRunStepTimeoutLongerThanTheDefault: a step's timeout may be longer
// than the 10 s a call waits by default (README: "each call without its own
// timeout waits at most 10 s"); a peer slower than that default but within
// the step's timeout passes. It waits past the default, so -short skips it.
func TestRunStepTimeoutLongerThanTheDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past the 10 s default call timeout")
	}
	dir := t.TempDir()
	srv, err := peer.Listen(filepath.Join(dir, "slow.sock"), peer.Config{
		Behavior: peer.Behavior{Delay: stepCallTimeout + 300*time.Millisecond},
		Methods: map[string]peer.HandlerFunc{"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "alive"}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "long.yaml", `steps:
  - name: patient
    call: slow health.liveness
    timeout: `+(stepCallTimeout+10*time.Second).String()+`
    expect: {result: '.status == "alive"'}
`)
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "--timeout", "1m", "run", book, "--json")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunErrorsAndItemsEndToEnd: against a real socket peer, a retry waits
// out its "busy" error ($error in until), equals on an expected error
// checks only the code (the peer's message and data differ from any
// book's), a later step checks every for_each item's outcome, and the
// --junit file carries the --coverage.
func TestRunErrorsAndItemsEndToEnd(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	calls := 0
	p := &peer.Primal{
		Name: "worker", Version: "1.0.0", Domain: "worker", Format: peer.FormatStandard, Level3: true,
		Groups: []peer.Group{{Type: "job", Methods: []string{"state", "cancel"}}},
		Handlers: map[string]peer.HandlerFunc{
			"job.state": func(context.Context, json.RawMessage) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls <= 2 {
					return nil, &ipc.RPCError{Code: -32001, Message: "busy, try later", Data: json.RawMessage(`{"retry_ms":10}`)}
				}
				return map[string]any{"done": true}, nil
			},
		},
	}
	srv, err := peer.StartPrimal(filepath.Join(dir, "worker.sock"), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	book := writeBook(t, dir, "e2e.yaml", `steps:
  - name: state
    call: worker job.state
    idempotent: true
    retry: {until: '$error.code != -32001', times: 5, every: 10ms}
    expect: {result: .done}
  - name: nope
    call: worker job.nope
    expect: {error: -32601, equals: {code: -32601}}
  - name: each
    for_each: '{{ ["a", "b"] }}'
    call: worker job.state
    params: {id: "{{ .item }}"}
  - name: check
    call: worker job.state
    expect: {result: '$steps.each.items | map(.item) == ["a", "b"] and all(.status == "pass" and .result.done)'}
`)
	junit := filepath.Join(dir, "report.xml")
	r := runCLI(t, runEnv(t), "", "--socket-dir", dir, "run", book, "--coverage", "--junit", junit)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	mu.Lock()
	n := calls
	mu.Unlock()
	if n != 6 || !strings.Contains(r.stdout, "(3 calls)") {
		t.Errorf("job.state called %d times, want 6 (3 for the retry, 2 items, the check):\n%s", n, r.stdout)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `<testsuite name="coverage"`) || !strings.Contains(string(raw), `<testcase name="worker" classname="coverage"`) {
		t.Errorf("JUnit without the coverage:\n%s", raw)
	}
}
