package runbook

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// recCaller records the calls it is asked to make and answers every one
// with the same result.
type recCaller struct {
	calls     []Call
	result    string
	listenErr error
	listened  int
}

func (c *recCaller) Call(_ context.Context, call Call) Answer {
	c.calls = append(c.calls, call)
	res := c.result
	if res == "" {
		res = `{}`
	}
	return Answer{Result: json.RawMessage(res), Outcome: history.OutcomeOK}
}
func (c *recCaller) Capabilities(context.Context, string) (*capability.Capabilities, error) {
	return nil, nil
}
func (c *recCaller) Listen(context.Context, string) (Listener, error) {
	c.listened++
	return nil, c.listenErr
}

const testSeed = "family-seed-VERY-SECRET-0123456789"

// runText checks and runs a book with FAMILY_SEED set, and returns the
// calls sent and the Text and JSON reports.
func runText(t *testing.T, book []byte, c Caller) ([]StepResult, string) {
	t.Helper()
	b, err := Parse("b.yaml", book)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, book)
	}
	if err := Check(b); err != nil {
		t.Fatalf("check: %v\n%s", err, book)
	}
	var out bytes.Buffer
	r := &Runner{Caller: c, Report: Reporters{&Text{W: &out}, &JSON{W: &out}, &TAP{W: &out}},
		Env: map[string]string{"FAMILY_SEED": testSeed, "LEDGER_PASSWORD": "hunter2-password"}}
	r.LearnEnvSecrets()
	res, err := r.Run(context.Background(), b)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res, out.String()
}

// A name a peer chose ({{ .env.FAMILY_SEED }} in a method it lists) is
// written into an exported book so that it renders as recorded, byte for
// byte, and never fills in a template.
func TestExportWritesRecordedTextLiterally(t *testing.T) {
	hostile := []string{
		`evil.{{.env.FAMILY_SEED}}`, `a}}b{{ .vars.x }}`, `{{`, `x{{"}}`, `{{ .steps.nope.result }}`,
		"tab\t{{ .env.FAMILY_SEED }} sp\u00a0ace", `back\slash{{\(.env)}}`,
	}
	for _, h := range hostile {
		params := map[string]any{"note": h, "list": []any{h, "plain"}, "ledger_password": history.Redacted}
		pj, _ := json.Marshal(params)
		e := history.Entry{ID: 1, Time: time.Now(), Target: "evil", Endpoint: "/tmp/evil.sock",
			Method: h, Pool: h, Session: h, Params: pj, Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)}
		book, notes := FromHistory("exported", []history.Entry{e})
		c := &recCaller{}
		_, out := runText(t, book, c)
		if len(c.calls) != 1 {
			t.Fatalf("%q: %d calls sent, want 1 (notes %v)\n%s\n%s", h, len(c.calls), notes, book, out)
		}
		got := c.calls[0]
		if got.Method != h || got.Pool != h || got.Session != h || got.Target != "evil" {
			t.Errorf("%q: sent method %q pool %q session %q target %q", h, got.Method, got.Pool, got.Session, got.Target)
		}
		var sent map[string]any
		_ = json.Unmarshal(got.Params, &sent)
		if sent["note"] != h || sent["list"].([]any)[0] != h || sent["ledger_password"] != "hunter2-password" {
			t.Errorf("%q: sent params %s", h, got.Params)
		}
		if strings.Contains(out, testSeed) {
			t.Errorf("%q: the report shows the seed:\n%s", h, out)
		}
	}
}

// AddTo (the TUI's key) writes the same literal form.
func TestAddToWritesRecordedTextLiterally(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kept.yaml")
	e := history.Entry{ID: 7, Time: time.Now(), Target: "evil", Method: `evil.{{.env.FAMILY_SEED}}`,
		Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)}
	if _, _, err := AddTo(path, e); err != nil {
		t.Fatal(err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := &recCaller{}
	r := &Runner{Caller: c, Report: Reporters{}, Env: map[string]string{"FAMILY_SEED": testSeed}}
	if _, err := r.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(c.calls) != 1 || c.calls[0].Method != e.Method {
		t.Fatalf("calls %+v, want one to %q", c.calls, e.Method)
	}
}

// Recorded text that cannot read back as itself is left out, with a note.
func TestExportLeavesOutWhatCannotBeWrittenLiterally(t *testing.T) {
	e := history.Entry{ID: 3, Time: time.Now(), Target: "evil", Method: "bad\xff{{.env.FAMILY_SEED}}",
		Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)}
	book, notes := FromHistory("x", []history.Entry{e})
	if strings.Contains(string(book), "FAMILY_SEED") || len(notes) == 0 {
		t.Fatalf("notes %v, book:\n%s", notes, book)
	}
	path := filepath.Join(t.TempDir(), "kept.yaml")
	if _, _, err := AddTo(path, history.Entry{ID: 2, Target: "t", Method: "m", Outcome: history.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := AddTo(path, e); err == nil {
		t.Fatal("AddTo wrote a call it cannot write literally")
	}
}

// A hand-written book that would carry a secret to the peer in the
// method, target, session, pool, a params key or a value under a key that
// is not secret is refused before sending; a secret under a secret key is
// where it belongs and is sent. No report shows the secret.
func TestRunRefusesToSendASecret(t *testing.T) {
	for _, c := range []struct {
		name, step string
		send       bool
	}{
		{"method", "call: evil evil.{{.env.FAMILY_SEED}}", false},
		{"target", "call: \"{{.env.FAMILY_SEED}} m\"", false},
		{"session", "call: evil m\n    session: \"{{ .env.FAMILY_SEED }}\"", false},
		{"pool", "call: evil m\n    pool: \"x{{ .env.FAMILY_SEED }}\"", false},
		{"params value", "call: evil m\n    params: {note: \"{{ .env.FAMILY_SEED }}\"}", false},
		{"params key", "call: evil m\n    params: {list: [\"{{ .env.LEDGER_PASSWORD }}\"]}", false},
		{"secret key", "call: evil m\n    params: {password: \"{{ .env.LEDGER_PASSWORD }}\"}", true},
		{"event from", "call: evil m\n    expect: {event: {from: \"x{{ .env.FAMILY_SEED }}\"}}", false},
	} {
		book := "steps:\n  - name: s\n    " + c.step + "\n"
		rc := &recCaller{}
		res, out := runText(t, []byte(book), rc)
		if sent := len(rc.calls) > 0; sent != c.send {
			t.Errorf("%s: sent %v, want %v: %+v", c.name, sent, c.send, rc.calls)
		}
		if !c.send && (len(res) != 1 || res[0].Status != Fail || res[0].Outcome != history.OutcomeRefused || !strings.Contains(res[0].Reason, "secret")) {
			t.Errorf("%s: results %+v", c.name, res)
		}
		if strings.Contains(out, testSeed) || strings.Contains(out, "hunter2-password") {
			t.Errorf("%s: the report shows a secret:\n%s", c.name, out)
		}
		if !c.send && rc.listened > 0 {
			t.Errorf("%s: listened to a target carrying a secret", c.name)
		}
	}
}

// A listener refused for security (a socket another user serves) makes
// the step's outcome refused, as a refused call does (run exits 5).
func TestRunListenRefusedIsRefused(t *testing.T) {
	rc := &recCaller{listenErr: &ipc.ForeignPeerError{Endpoint: "/tmp/x.sock"}}
	res, _ := runText(t, []byte("steps:\n  - call: evil m\n    expect: {event: {from: evil}}\n"), rc)
	if len(res) != 1 || res[0].Status != Fail || res[0].Outcome != history.OutcomeRefused || len(rc.calls) != 0 {
		t.Fatalf("results %+v, calls %d", res, len(rc.calls))
	}
}

// A value the peer answered under a secret key is learnt as a secret: a
// jq error quoting it, a for_each or if reason, a later call's rendered
// method, none shows it. A session id it answered may go back as a bus
// session.
func TestRunLearnsSecretsFromResults(t *testing.T) {
	const tok = "tok-SECRET-RESULT-123"
	book := `steps:
  - name: login
    call: evil auth.login
    expect:
      result: .token | tonumber > 0
  - name: each
    call: evil m
    for_each: '{{ .steps.login.result.token | tonumber }}'
  - name: cond
    call: evil m
    if: .steps.login.result.token | tonumber
  - name: echo
    call: evil x.{{.steps.login.result.token}}
  - name: bus
    call: evil m
    session: "{{ .steps.login.result.session_id }}"
`
	rc := &recCaller{result: `{"token":"` + tok + `","session_id":"sess-abcdef123"}`}
	res, out := runText(t, []byte(book), rc)
	if strings.Contains(out, tok) {
		t.Errorf("a secret-keyed result value reached the report:\n%s", out)
	}
	for _, r := range res {
		if j, _ := json.Marshal(r); strings.Contains(string(j), tok) {
			t.Errorf("result %s shows the token", j)
		}
	}
	if len(rc.calls) != 2 || rc.calls[1].Session != "sess-abcdef123" {
		t.Errorf("calls %+v: want login, and bus with the answered session id (echo carries the token in its method)", rc.calls)
	}
	if strings.Contains(out, "sess-abcdef123") {
		t.Errorf("the session id reached the report:\n%s", out)
	}
}

// Run learns the environment's secrets itself: a caller that forgot to
// ask still sends no seed.
func TestRunLearnsEnvSecretsItself(t *testing.T) {
	b, err := Parse("b.yaml", []byte("steps:\n  - call: evil x.{{.env.FAMILY_SEED}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	rc := &recCaller{}
	r := &Runner{Caller: rc, Report: Reporters{}, Env: map[string]string{"FAMILY_SEED": testSeed}}
	res, err := r.Run(context.Background(), b)
	if err != nil || len(rc.calls) != 0 || len(res) != 1 || res[0].Outcome != history.OutcomeRefused {
		t.Fatalf("err %v, calls %+v, results %+v", err, rc.calls, res)
	}
}

// methodCaller answers each method with its own result ({} otherwise) and
// records the calls.
type methodCaller struct {
	recCaller
	results map[string]string
}

func (c *methodCaller) Call(_ context.Context, call Call) Answer {
	c.calls = append(c.calls, call)
	res, ok := c.results[call.Method]
	if !ok {
		res = `{}`
	}
	return Answer{Result: json.RawMessage(res), Outcome: history.OutcomeOK}
}

// Only secrets, not JSON literals, are hidden wherever they turn
// up: a peer's {"auth":"true"} hides no "true" of the report (it hid every
// one, and refused a later call sending "true"), while a real token it
// answered is hidden in the text, JSON, TAP and JUnit reports alike. The
// user's own secrets are hidden whatever they look like: a short seed
// from a seed file, a password holding a quote (also as JSON escapes it),
// a PIN of digits (the JSON report stays JSON: it lost the step's line).
func TestRunScrubsOnlySecretsNotLiterals(t *testing.T) {
	const (
		tok  = "tok-REAL-9f8e7d6c5b"
		seed = "s3ed" // short, but the user's
		pass = `pa"ss\word-42`
		pin  = "98765432"
	)
	passJSON, _ := json.Marshal(pass)
	c := &methodCaller{results: map[string]string{
		"auth.login": `{"auth":"true","token":"` + tok + `","ok":true}`,
		"echo":       `{"note":"true: ` + tok + ` ` + seed + ` ` + string(passJSON[1:len(passJSON)-1]) + ` in /tmp/work","n":` + pin + `,"ok":true}`,
	}}
	book := `steps:
  - name: login
    call: evil auth.login
  - name: flag
    call: evil set
    params: {enabled: "{{ .steps.login.result.auth }}"}
  - name: saw
    call: evil echo
    expect: {result: '.ok == false'}
  - name: quoted
    call: evil echo
    expect: {result: 'error("got " + .note)'}
  - name: differs
    call: evil echo
    expect: {equals: {note: "x", n: 1, ok: true}}
`
	b, err := Parse("b.yaml", []byte(book))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b); err != nil {
		t.Fatal(err)
	}
	var text, js, tap bytes.Buffer
	ju := &JUnit{}
	tp := &TAP{W: &tap}
	r := &Runner{Caller: c, Report: Reporters{&Text{W: &text}, &JSON{W: &js}, tp, ju},
		Env:     map[string]string{"LEDGER_PASSWORD": pass, "LEDGER_PIN": pin, "XDG_SESSION_ID": "2", "PWD": "/tmp", "OLDPWD": "/home/ada"},
		Secrets: []string{seed + "\n"}}
	res, err := r.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	tp.End()
	var xmlOut bytes.Buffer
	if err := ju.Write(&xmlOut); err != nil {
		t.Fatal(err)
	}
	if got := len(c.calls); got != 5 || string(c.calls[1].Params) != `{"enabled":"true"}` {
		t.Fatalf("calls %+v: the flag step sends a short \"true\" (no secret)", c.calls)
	}
	if s := statusesOf(res); s != "login=pass flag=pass saw=fail quoted=fail differs=fail" {
		t.Fatalf("statuses %s", s)
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("the JSON report has %d lines, want one a step:\n%s", len(lines), js.String())
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("JSON report line is no JSON: %s", l)
		}
	}
	if !strings.Contains(js.String(), `"saw":{"note":"true: [redacted] [redacted] [redacted] in /tmp/work","n":"[redacted]","ok":true}`) {
		t.Errorf("the JSON report's saw should keep true and hide the token, seed, password and PIN:\n%s", js.String())
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String(), "tap": tap.String(), "junit": xmlOut.String()} {
		for _, sec := range []string{tok, seed, "word-42", pin, `ss\\word`} {
			if strings.Contains(out, sec) {
				t.Errorf("the %s report shows %q:\n%s", name, sec, out)
			}
		}
		if !strings.Contains(out, "true") {
			t.Errorf("the %s report lost every \"true\":\n%s", name, out)
		}
	}
	if !strings.Contains(text.String(), "ok\":true") || !strings.Contains(text.String(), "got true: [redacted]") {
		t.Errorf("text report:\n%s", text.String())
	}
	if !strings.Contains(text.String(), "at b.yaml:") || strings.Contains(text.String(), "[redacted] ms") || !strings.Contains(text.String(), "in /tmp/work") {
		t.Errorf("XDG_SESSION_ID=2 hid the 2s of the report, or PWD=/tmp its paths:\n%s", text.String())
	}
	var x struct{}
	if err := xml.Unmarshal(xmlOut.Bytes(), &x); err != nil {
		t.Errorf("JUnit is no XML: %v", err)
	}
}

func statusesOf(rs []StepResult) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Step+"="+string(r.Status))
	}
	return strings.Join(out, " ")
}

// failCaller fails every call as it is told.
type failCaller struct {
	recCaller
	ans Answer
}

func (c *failCaller) Call(_ context.Context, call Call) Answer {
	c.calls = append(c.calls, call)
	return c.ans
}

// A retry stops at a security refusal (another try would give an impostor
// one more: it was sent times times), judged refused; a retry that never
// met its until says how the last call ended (it said only "not met").
func TestRetryStopsAtARefusalAndSaysTheLastFailure(t *testing.T) {
	book := []byte("steps:\n  - call: t health.liveness\n    retry: {until: '.ok', times: 4, every: 1ms}\n")
	refused := &failCaller{ans: Answer{Failure: &ipc.BTSPRequiredError{Endpoint: "/tmp/t.sock"}, Outcome: history.OutcomeRefused}}
	res, _ := runText(t, book, refused)
	if len(refused.calls) != 1 || len(res) != 1 || res[0].Outcome != history.OutcomeRefused || res[0].Status != Fail {
		t.Fatalf("a refused call retried: %d calls, %+v", len(refused.calls), res)
	}
	gone := &failCaller{ans: Answer{Failure: errors.New("no socket for \"t\""), Outcome: history.OutcomeUnreachable}}
	res, _ = runText(t, book, gone)
	if len(gone.calls) != 4 || !strings.Contains(res[0].Reason, "not met after 4 calls (the last call: unreachable: no socket") {
		t.Fatalf("%d calls, reason %q", len(gone.calls), res[0].Reason)
	}
	erring := &failCaller{ans: Answer{Error: &history.RPCError{Code: -32000, Message: "warming up"}, Outcome: history.OutcomeError}}
	res, _ = runText(t, book, erring)
	if !strings.Contains(res[0].Reason, "(the last call answered error -32000: warming up)") {
		t.Fatalf("reason %q", res[0].Reason)
	}
	// An until that fails as jq says so (it read as a peer never ready).
	res, _ = runText(t, []byte("steps:\n  - call: t health.liveness\n    retry: {until: '.state | ascii_downcase == \"up\"', times: 2, every: 1ms}\n"), &recCaller{result: `{"status":"up"}`})
	if !strings.Contains(res[0].Reason, "not met after 2 calls (retry.until: jq") || !strings.Contains(res[0].Reason, "null") {
		t.Fatalf("reason %q", res[0].Reason)
	}
}

// A step that reads (in what it sends or expects) a step that did not run
// is not run either, saying so: it sent null without a word. An if: may
// read such a step: that is how a book branches.
func TestAStepReadingAStepThatDidNotRunIsSkipped(t *testing.T) {
	book := []byte(`vars: {on: false}
steps:
  - {name: a, call: t a, skip: not yet}
  - {name: b, call: t b, if: .vars.on}
  - name: c
    call: t c
    params: {id: "{{ .steps.a.result.id }}"}
  - name: d
    call: t d
    expect: {equals: {id: "{{ .steps.b.result.id }}"}}
  - name: e
    call: t e
    if: .steps.a == null
  - name: f
    call: t f
    expect: {result: '.id == $steps.b.result.id'}
`)
	rc := &recCaller{}
	res, out := runText(t, book, rc)
	if s := statusesOf(res); s != "a=skip b=skip c=skip d=skip e=pass f=skip" {
		t.Fatalf("statuses %s\n%s", s, out)
	}
	if len(rc.calls) != 1 || rc.calls[0].Method != "e" {
		t.Fatalf("calls %+v: only e runs", rc.calls)
	}
	if !strings.Contains(res[2].Reason, "reads .steps.a, which has no outcome") {
		t.Errorf("reason %q", res[2].Reason)
	}
}

// A later step reads how a step's call ended and its verdict: a call
// that never got an answer has no result and no error either, so
// 'if: .steps.a.error == null' took an unreachable target for a success.
func TestStepsRecordOutcomeAndStatus(t *testing.T) {
	book := []byte(`steps:
  - {name: a, call: t a}
  - {name: ok_if_no_error, call: t b, if: .steps.a.error == null and .steps.a.outcome == "ok"}
  - {name: b, call: t b, expect: {result: .never}}
  - {name: after_fail, call: t c, if: '.steps.b.status == "fail" and .steps.b.outcome == "ok"'}
`)
	gone := &failCaller{ans: Answer{Failure: errors.New("no socket"), Outcome: history.OutcomeUnreachable}}
	res, out := runText(t, book[:len("steps:\n  - {name: a, call: t a}\n  - {name: ok_if_no_error, call: t b, if: .steps.a.error == null and .steps.a.outcome == \"ok\"}\n")], gone)
	if s := statusesOf(res); s != "a=fail ok_if_no_error=skip" {
		t.Fatalf("statuses %s\n%s", s, out)
	}
	res, out = runText(t, book, &recCaller{result: `{"never":false}`})
	if s := statusesOf(res); s != "a=pass ok_if_no_error=pass b=fail after_fail=pass" {
		t.Fatalf("statuses %s\n%s", s, out)
	}
}

// oneEvent is a Listener that yields one event, then nothing until ctx ends.
type oneEvent struct{ sent bool }

func (l *oneEvent) Next(ctx context.Context) (json.RawMessage, error) {
	if !l.sent {
		l.sent = true
		return json.RawMessage(`{"kind":"notification","name":"tick","payload":{"n":1}}`), nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (l *oneEvent) Close() {}

type eventCaller struct{ recCaller }

func (c *eventCaller) Listen(context.Context, string) (Listener, error) { return &oneEvent{}, nil }

// An event match that fails as jq on what came says so: it read as an
// event that never came ("nothing matched (1 seen)").
func TestEventMatchErrorIsSaid(t *testing.T) {
	book := []byte("steps:\n  - call: t m\n    expect: {event: {from: t, match: '.payload.n | ascii_downcase == \"x\"', within: 50ms}}\n")
	res, _ := runText(t, book, &eventCaller{})
	if len(res) != 1 || !strings.Contains(res[0].Reason, "(1 seen; the match failed as jq:") {
		t.Fatalf("%+v", res)
	}
}

// A short secret a peer answers with (a PIN, an OTP, a numeric token) is a
// secret all the same: hidden in every report wherever it turns up, and a
// later step that would send it to another target is refused, nothing
// sent. (Only JSON literals and values under 4 bytes are no secrets.)
func TestRunShortAnsweredSecretsStayHiddenAndHome(t *testing.T) {
	const pin, token, otp = "4821", "123456789012", "a1b2c3"
	c := &methodCaller{results: map[string]string{
		"auth.login": `{"pin":"` + pin + `","token":"` + token + `","otp":"` + otp + `","ok":true}`,
		"echo":       `{"note":"pin ` + pin + ` token ` + token + ` otp ` + otp + `","ok":true}`,
	}}
	book := `steps:
  - name: login
    call: bank auth.login
  - name: saw
    call: bank echo
    expect: {result: '.ok == false'}
  - name: forward
    call: other verify
    params: {code: "{{ .steps.login.result.otp }}", n: "{{ .steps.login.result.token }}"}
`
	b, err := Parse("b.yaml", []byte(book))
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b); err != nil {
		t.Fatal(err)
	}
	var text, js, tap bytes.Buffer
	tp := &TAP{W: &tap}
	r := &Runner{Caller: c, Report: Reporters{&Text{W: &text}, &JSON{W: &js}, tp}}
	res, err := r.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	tp.End()
	for _, call := range c.calls {
		if call.Method == "verify" {
			t.Fatalf("a peer's OTP and token were sent to another target: %s", call.Params)
		}
	}
	if len(res) != 3 || res[2].Outcome != history.OutcomeRefused {
		t.Fatalf("results %+v: the forwarding step should be refused", res)
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String(), "tap": tap.String()} {
		for _, sec := range []string{pin, token, otp} {
			if strings.Contains(out, sec) {
				t.Errorf("the %s report shows %q:\n%s", name, sec, out)
			}
		}
	}
}
