package runbook

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
)

// junitDoc is what a CI system reads of a JUnit report.
type junitDoc struct {
	Tests  int `xml:"tests,attr"`
	Suites []struct {
		Name  string `xml:"name,attr"`
		Tests int    `xml:"tests,attr"`
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Out       string `xml:"system-out"`
		} `xml:"testcase"`
		Out string `xml:"system-out"`
	} `xml:"testsuite"`
}

// The JUnit report carries the coverage as the other reports do (it had
// none): a testsuite "coverage" after the books', a testcase per target
// with its lines as system-out, and properties. Method names are a peer's
// words: one closing a CDATA section, one with control characters and a
// terminal escape, one with quotes and markup stay text (the XML parses,
// and says them escaped as the text report does); one holding a secret the
// run knows is hidden, as in every report.
func TestJUnitCarriesCoverageEscaped(t *testing.T) {
	const sec = "tok-JUNIT-5f4e3d2c1b"
	b, err := Parse("b.yaml", []byte("name: cov\nsteps:\n  - name: login\n    call: evil auth.login\n"))
	if err != nil {
		t.Fatal(err)
	}
	ju := &JUnit{}
	var text bytes.Buffer
	r := &Runner{Caller: &recCaller{result: `{"token":"` + sec + `"}`}, Report: Reporters{&Text{W: &text}, ju}}
	if _, err := r.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	hostile := []string{"a]]><x/>b", "c\x01d\x1b[31mred\x7f", `q"u'o<t>e&`, "leak." + sec}
	r.ReportCoverage([]TargetCoverage{{
		Target: "evil", Spellings: []string{"evil", "ev\"il]]>"}, Called: []string{"auth.login", hostile[0]},
		Provided: 4, ProvidedCalled: 1, NotCalled: hostile[1:], NotListed: []string{hostile[0]},
	}})
	var out bytes.Buffer
	if err := ju.Write(&out); err != nil {
		t.Fatal(err)
	}
	raw := out.String()
	var doc junitDoc
	if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("no XML: %v\n%s", err, raw)
	}
	if strings.Contains(raw, sec) || strings.Contains(text.String(), sec) {
		t.Errorf("a secret in the coverage:\n%s", raw)
	}
	for _, c := range []string{"\x01", "\x1b", "\x7f", "]]><x/>", "<t>"} {
		if strings.Contains(raw, c) {
			t.Errorf("the XML holds %q raw:\n%s", c, raw)
		}
	}
	if doc.Tests != 2 || len(doc.Suites) != 2 || doc.Suites[0].Name != "cov" {
		t.Fatalf("want the book's suite and the coverage's (2 tests): %+v\n%s", doc, raw)
	}
	cs := doc.Suites[1]
	if cs.Name != "coverage" || cs.Tests != 1 || len(cs.Cases) != 1 || cs.Cases[0].Name != "evil" || cs.Cases[0].Classname != "coverage" {
		t.Fatalf("coverage suite %+v\n%s", cs, raw)
	}
	// The text the XML says, once read, is the text report's, escaped alike.
	want := []string{
		`evil, ev"il]]>: 1 of 4 provided methods called`,
		safe(`not called: c` + "\x01d\x1b[31mred\x7f" + `, q"u'o<t>e&, leak.[redacted]`),
		`called, not in its list: a]]><x/>b`,
	}
	for _, w := range want {
		if !strings.Contains(cs.Cases[0].Out, w) || !strings.Contains(cs.Out, w) || !strings.Contains(text.String(), w) {
			t.Errorf("the coverage lacks %q:\ncase: %s\nsuite: %s\ntext: %s", w, cs.Cases[0].Out, cs.Out, text.String())
		}
	}
	props := map[string]string{}
	for _, p := range cs.Props {
		props[p.Name] = p.Value
	}
	if props["coverage.1.target"] != "evil" || props["coverage.1.called"] != "auth.login, a]]><x/>b" ||
		props["coverage.1.provided"] != "4" || props["coverage.1.provided_called"] != "1" ||
		!strings.Contains(props["coverage.1.not_called"], `q"u'o<t>e&, leak.[redacted]`) ||
		strings.ContainsAny(props["coverage.1.not_called"], "\x01\x1b\x7f") {
		t.Errorf("properties %v", props)
	}

	// No --coverage: no coverage suite.
	ju2 := &JUnit{}
	(&Runner{Caller: &recCaller{}, Report: ju2}).Run(context.Background(), b)
	out.Reset()
	ju2.Write(&out)
	if strings.Contains(out.String(), "coverage") {
		t.Errorf("coverage without --coverage:\n%s", out.String())
	}
}

// A secret a peer answers under a secret key of an error's data stays
// hidden in the new places it can reach: a retry.until or expect.result
// quoting $error (the reason), a for_each's items a later step would send
// out of a secret key's place (refused, nothing sent, as for any outcome),
// in every report, JUnit's coverage included.
func TestSecretsInErrorsAndItemsStayHidden(t *testing.T) {
	const tok = "tok-ERRDATA-0a1b2c3d4e"
	book := `steps:
  - name: login
    call: evil auth.login
    idempotent: true
    retry: {until: '$error.data.token | error', times: 2, every: 1ms}
  - name: quoted
    call: evil auth.login
    expect: {error: -32000, result: 'error("saw " + $error.data.token)'}
  - name: each
    for_each: '{{ [1, 2] }}'
    call: evil auth.login
    expect: {error: -32000, equals: {data: {token: x}}}
  - name: leak
    call: other echo
    params: {x: "{{ .steps.each.items | tostring }}"}
`
	b, err := Parse("b.yaml", []byte(book))
	if err != nil {
		t.Fatal(err)
	}
	c := &seqCaller{answers: []Answer{{Error: &history.RPCError{Code: -32000, Message: "denied", Data: json.RawMessage(`{"token":"` + tok + `"}`)}, Outcome: history.OutcomeError}}}
	var text, js, tap bytes.Buffer
	ju := &JUnit{}
	tp := &TAP{W: &tap}
	r := &Runner{Caller: c, Report: Reporters{&Text{W: &text}, &JSON{W: &js}, tp, ju}}
	res, err := r.Run(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	r.ReportCoverage([]TargetCoverage{{Target: "evil", Spellings: []string{"evil"}, Called: []string{"auth.login"}, Provided: -1}})
	tp.End()
	var x bytes.Buffer
	if err := ju.Write(&x); err != nil {
		t.Fatal(err)
	}
	if s := statusesOf(res); s != "login=fail quoted=fail each[0]=fail each[1]=fail leak=fail" {
		t.Fatalf("statuses %s\n%s", s, text.String())
	}
	if len(c.calls) != 5 || res[4].Outcome != history.OutcomeRefused {
		t.Fatalf("the items' secret went to another target: %d calls, %+v", len(c.calls), res[4])
	}
	if !strings.Contains(res[0].Reason, "retry.until: jq") || !strings.Contains(res[1].Reason, "saw [redacted]") {
		t.Errorf("reasons %q, %q", res[0].Reason, res[1].Reason)
	}
	for name, out := range map[string]string{"text": text.String(), "json": js.String(), "tap": tap.String(), "junit": x.String()} {
		if strings.Contains(out, tok) {
			t.Errorf("the %s report shows the token:\n%s", name, out)
		}
	}
}
