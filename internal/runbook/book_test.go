package runbook

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
)

func bookErr(t *testing.T, text string) *BookError {
	t.Helper()
	b, err := Parse("b.yaml", []byte(text))
	if err == nil {
		err = Check(b)
	}
	var be *BookError
	if !errors.As(err, &be) {
		t.Fatalf("want a BookError for\n%s\ngot %v", text, err)
	}
	return be
}

func TestBookErrorsSayWhere(t *testing.T) {
	for _, c := range []struct {
		text      string
		line, col int
		msg       string
	}{
		{"steps:\n  - call: a b\n    expct: {}\n", 3, 5, `unknown key "expct"`},
		{"steps:\n  - call: a\n", 2, 11, "TARGET METHOD"},
		{"steps:\n  - call: a b\n    params: {x: \"{{ .vars.nope }}\"}\n", 3, 13, `no variable "nope"`},
		{"steps:\n  - name: x\n    call: a b\n  - name: x\n    call: a c\n", 4, 11, "already at"},
		{"steps:\n  - call: a b\n    expect: {error: one}\n", 3, 21, "error code"},
		{"steps:\n  - call: a b\n    retry: {until: .ok, times: 0}\n", 3, 32, "retry.times"},
		{"steps:\n  - call: a b\n    expect: {ignore: [nope]}\n", 3, 23, "not a path"},
		{"order: sideways\nsteps: []\n", 1, 8, "order is"},
		{"steps:\n  - call: a b\n    timeout: soon\n", 3, 14, "duration"},
		{"steps: [\n", 1, 8, ""},
		{"- just\n- a list\n", 1, 1, "a book is a mapping"},
	} {
		be := bookErr(t, c.text)
		if c.msg != "" && !strings.Contains(be.Msg, c.msg) {
			t.Errorf("%q: message %q lacks %q", c.text, be.Msg, c.msg)
		}
		if be.Pos.Line != c.line || (c.col != 0 && be.Pos.Column != c.col) {
			t.Errorf("%q: at %d:%d, want %d:%d (%s)", c.text, be.Pos.Line, be.Pos.Column, c.line, c.col, be.Msg)
		}
	}
}

func TestTemplatesKeepTypes(t *testing.T) {
	scope := map[string]any{"vars": map[string]any{"n": 3, "s": "x", "list": []any{1, 2}}}
	for in, want := range map[string]any{
		"{{ .vars.n }}":           3,
		"{{ .vars.list }}":        []any{1, 2},
		"n={{ .vars.n }}":         "n=3",
		"{{.vars.s}}-{{.vars.s}}": "x-x",
		"plain":                   "plain",
	} {
		got, err := renderValue(t.Context(), in, scope, Pos{})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if short(got) != short(want) {
			t.Errorf("%s → %v, want %v", in, got, want)
		}
	}
}

func TestIncludeCycleRefused(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	os.WriteFile(a, []byte("steps:\n  - include: b.yaml\n"), 0o600)
	os.WriteFile(b, []byte("steps:\n  - include: a.yaml\n"), 0o600)
	_, err := Load(a)
	var be *BookError
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "includes itself") {
		t.Fatalf("want an include cycle refused, got %v", err)
	}
}

func TestOrderKeepsWrittenOrderWhereNothingIsSaid(t *testing.T) {
	mk := func(name, method string) *Step {
		return &Step{Name: name, Target: "t", Method: method, pos: map[string]Pos{}}
	}
	steps := []*Step{mk("z", "x.z"), mk("c", "x.c"), mk("a", "x.a"), mk("b", "x.b")}
	got, err := orderSteps(steps, map[string]map[string][]string{"t": {"x.c": {"x.b"}}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, " ") != "z a b c" {
		t.Fatalf("order %v, want z a b c (b moved before c, the rest as written)", names)
	}
}

// FuzzParseBook: no book, however malformed, panics the reader or the
// checker, and every refusal says where.
func FuzzParseBook(f *testing.F) {
	seeds, _ := filepath.Glob("../../examples/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("steps:\n  - call: a b\n    params: {x: \"{{ .steps.q.result }}\"}\n"))
	f.Add([]byte("steps: [{call: a b, for_each: '{{ .vars.l }}'}]\nvars: {l: [1]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Parse("fuzz.yaml", data)
		if err == nil {
			err = Check(b)
		}
		var be *BookError
		if err != nil && errors.As(err, &be) && be.Pos.File == "" {
			t.Fatalf("a refusal without a place: %v", err)
		}
	})
}

func TestAddToMakesAndGrowsABook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.yaml")
	e := history.Entry{ID: 1, Target: "ledger", Method: "ledger.entry.create", Outcome: history.OutcomeOK,
		Params: []byte(`{"owner":"ada","password":"[redacted]"}`), Result: []byte(`{"entry_id":"e-1","at":"2026-11-26T10:00:00Z"}`)}
	step, _, err := AddTo(path, e)
	if err != nil || step != "ledger_entry_create" {
		t.Fatalf("a new book: %q %v", step, err)
	}
	step, _, err = AddTo(path, e)
	if err != nil || step != "ledger_entry_create_2" {
		t.Fatalf("a second step gets a name of its own: %q %v", step, err)
	}
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(b); err != nil || len(b.Steps) != 2 {
		t.Fatalf("the grown book: %v, %d steps", err, len(b.Steps))
	}
	if got := b.Steps[0].Expect.Ignore; len(got) != 1 || got[0] != ".at" {
		t.Errorf("a timestamp in the result is ignored: %v", got)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "{{ .env.PASSWORD }}") {
		t.Errorf("a redacted param is read from the environment:\n%s", data)
	}
	// A file that is not a book is left alone.
	bad := filepath.Join(t.TempDir(), "notes.yaml")
	os.WriteFile(bad, []byte("shopping: [eggs]\n"), 0o600)
	if _, _, err := AddTo(bad, e); err == nil {
		t.Fatal("adding to a file that is not a book should fail")
	}
	if data, _ := os.ReadFile(bad); string(data) != "shopping: [eggs]\n" {
		t.Fatalf("a file that is not a book was changed: %q", data)
	}
}

func TestEnvReadMustBeSet(t *testing.T) {
	b, err := Parse("e.yaml", []byte("steps:\n  - call: a b\n    params: {x: \"{{ .env.NOPE_XYZ }}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var be *BookError
	if err := CheckEnv(b, map[string]string{}); !errors.As(err, &be) || be.Pos.Line != 3 || !strings.Contains(be.Msg, "NOPE_XYZ") {
		t.Fatalf("an unset environment variable: want a BookError at line 3, got %v", err)
	}
	if err := CheckEnv(b, map[string]string{"NOPE_XYZ": ""}); err != nil {
		t.Fatalf("a variable set (even empty) is fine: %v", err)
	}
}

func TestUnderMSKeepsFractions(t *testing.T) {
	b, err := Parse("u.yaml", []byte("steps:\n  - call: a b\n    expect: {under_ms: 0.5}\n"))
	if err != nil || b.Steps[0].Expect.UnderMS != 0.5 {
		t.Fatalf("under_ms 0.5 read as %v (%v): it must not become 0, which turns the check off", b.Steps[0].Expect.UnderMS, err)
	}
}

func TestOrderAcrossTargets(t *testing.T) {
	mk := func(name, target, method string) *Step {
		return &Step{Name: name, Target: target, Method: method, pos: map[string]Pos{}}
	}
	steps := []*Step{mk("store", "nestgate", "storage.artifact.store"), mk("append", "rhizocrypt", "dag.event.append")}
	got, err := orderSteps(steps, map[string]map[string][]string{"nestgate": {"storage.artifact.store": {"dag.event.append"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Name != "append" {
		t.Fatalf("a prerequisite another primal provides runs first: %s, %s", got[0].Name, got[1].Name)
	}
}

func TestPreviewsFillWhatTheyCan(t *testing.T) {
	b, err := Parse("p.yaml", []byte(`vars: {who: ada}
steps:
  - name: create
    call: ledger ledger.entry.create
    params: {owner: "{{ .vars.who }}", home: "{{ .env.HOME_X }}"}
  - name: append
    call: ledger ledger.entry.append
    params: {entry_id: "{{ .steps.create.result.entry_id }}", n: "{{ 1 + 1 }}"}
  - name: later
    skip: not yet
    call: ledger ledger.entry.list
`))
	if err != nil {
		t.Fatal(err)
	}
	ps := Previews(t.Context(), b, map[string]string{"HOME_X": "/h"})
	if len(ps) != 2 {
		t.Fatalf("a skipped step is no call to make: %d previews", len(ps))
	}
	if ps[0].Params != `{"home":"/h","owner":"ada"}` || ps[0].Note != "" {
		t.Errorf("vars and env filled in: %+v", ps[0])
	}
	if !strings.Contains(ps[1].Params, `"{{ .steps.create.result.entry_id }}"`) || !strings.Contains(ps[1].Params, `"n":2`) ||
		!strings.Contains(ps[1].Note, "another step") {
		t.Errorf("a step's outcome is left to fill in, and said: %+v", ps[1])
	}
}

// An expression over an answer (expect.result, retry.until, an event's
// match) reads the run through $vars, $steps, $env: '.id ==
// $steps.a.result.id' compares two answers. Reading .steps.NAME of a step
// of the book there read the answer's own field (null): '.id !=
// .steps.a.result.id' passed without comparing anything, and a {{ }} in
// it was compared as text; both are now refused before anything is sent,
// naming $steps. A field of the answer that names no step is the answer's.
func TestExpressionsOverAnAnswerReadTheRunThroughVariables(t *testing.T) {
	for _, c := range []struct{ text, msg string }{
		{"steps:\n  - {name: a, call: t m}\n  - call: t m\n    expect: {result: '.id != .steps.a.result.id'}\n", "$steps.a"},
		{"vars: {want: x}\nsteps:\n  - call: t m\n    retry: {until: '.s == .vars.want', times: 2}\n", "$vars.want"},
		{"vars: {want: x}\nsteps:\n  - call: t m\n    expect: {result: '.s == \"{{ .vars.want }}\"'}\n", "not a template"},
		{"steps:\n  - call: t m\n    expect: {result: '.id == $steps.b.result.id'}\n  - {name: b, call: t m}\n", "has not run by then"},
		{"steps:\n  - call: t m\n    expect: {result: '.s == $vars.nope'}\n", `no variable "nope"`},
	} {
		if be := bookErr(t, c.text); !strings.Contains(be.Msg, c.msg) {
			t.Errorf("%q: %s, want %q", c.text, be.Msg, c.msg)
		}
	}
	book := `vars: {want: "e-1"}
steps:
  - name: a
    call: t m
  - name: same
    call: t m
    expect: {result: '.id == $steps.a.result.id and .id == $vars.want and .steps.x == 1'}
    retry: {until: '.id == $vars.want', times: 2, every: 1ms}
  - name: differs
    call: t m
    expect: {result: '.id != $steps.a.result.id'}
  - name: each
    for_each: '{{ [1, 2] }}'
    call: t m
    expect: {result: '.n == $item'}
`
	rc := &recCaller{result: `{"id":"e-1","steps":{"x":1},"n":2}`}
	res, out := runText(t, []byte(book), rc)
	if s := statusesOf(res); s != "a=pass same=pass differs=fail each[0]=fail each[1]=pass" {
		t.Fatalf("statuses %s\n%s", s, out)
	}
}
