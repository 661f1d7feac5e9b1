package runbook

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// Reporters is several reporters told the same things.
type Reporters []Reporter

func (rs Reporters) BookStarted(b *Book, n int) {
	for _, r := range rs {
		r.BookStarted(b, n)
	}
}
func (rs Reporters) StepStarted(b *Book, l string) {
	for _, r := range rs {
		r.StepStarted(b, l)
	}
}
func (rs Reporters) StepDone(b *Book, x StepResult) {
	for _, r := range rs {
		r.StepDone(b, x)
	}
}
func (rs Reporters) BookDone(b *Book, x []StepResult, d time.Duration) {
	for _, r := range rs {
		r.BookDone(b, x, d)
	}
}

// safe escapes peer and book text for a terminal or a log.
func safe(s string) string { return textsafe.Sanitize(s) }

// Text prints each step as it runs: on a terminal a progress line that the
// verdict replaces, in a pipe plain lines.
type Text struct {
	W        io.Writer
	Terminal bool
	pending  bool
}

func (t *Text) BookStarted(b *Book, n int) {
	fmt.Fprintf(t.W, "%s (%s, %d steps)\n", safe(b.Name), safe(b.File), n)
}

func (t *Text) StepStarted(_ *Book, label string) {
	if t.Terminal {
		fmt.Fprintf(t.W, "  … %s\r", safe(label))
		t.pending = true
	}
}

func (t *Text) StepDone(_ *Book, r StepResult) {
	if t.pending {
		fmt.Fprint(t.W, "\x1b[2K")
		t.pending = false
	}
	glyph := map[Status]string{Pass: "✓", Fail: "✗", Skip: "-"}[r.Status]
	call := strings.TrimSpace(r.Target + " " + r.Method)
	line := fmt.Sprintf("  %s %-20s %s", glyph, safe(r.Step), safe(call))
	if r.Status != Skip {
		line += fmt.Sprintf("  %s", fmtMs(r.Ms))
	}
	if r.Attempts > 1 {
		line += fmt.Sprintf("  (%d calls)", r.Attempts)
	}
	fmt.Fprintln(t.W, strings.TrimRight(line, " "))
	if r.Reason != "" {
		fmt.Fprintf(t.W, "      %s\n", safe(r.Reason))
	}
	if r.Status == Fail {
		fmt.Fprintf(t.W, "      at %s\n", safe(r.Pos))
	}
	if len(r.Diff) > 0 {
		var buf bytes.Buffer
		_ = history.FormatDiff(&buf, r.Diff, history.DiffFormat{})
		for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
			fmt.Fprintf(t.W, "      %s\n", l)
		}
	}
	if len(r.Saw) > 0 {
		s := string(r.Saw)
		if len(s) > 400 {
			s = s[:400] + "…"
		}
		fmt.Fprintf(t.W, "      saw: %s\n", safe(s))
	}
}

func (t *Text) BookDone(b *Book, rs []StepResult, d time.Duration) {
	p, f, s := Count(rs)
	fmt.Fprintf(t.W, "%s: %d passed, %d failed, %d skipped (%s)\n", safe(b.Name), p, f, s, d.Round(time.Millisecond))
}

func fmtMs(ms float64) string {
	if ms < 10 {
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// Count tallies results.
func Count(rs []StepResult) (pass, fail, skip int) {
	for _, r := range rs {
		switch r.Status {
		case Pass:
			pass++
		case Fail:
			fail++
		case Skip:
			skip++
		}
	}
	return
}

// JSON writes one JSON object a line for every step.
type JSON struct{ W io.Writer }

func (j *JSON) BookStarted(*Book, int)    {}
func (j *JSON) StepStarted(*Book, string) {}
func (j *JSON) StepDone(_ *Book, r StepResult) {
	b, err := json.Marshal(r)
	if err == nil {
		j.W.Write(append(b, '\n'))
	}
}
func (j *JSON) BookDone(*Book, []StepResult, time.Duration) {}

// TAP writes TAP version 14: a subtest per book, a test point per step,
// the plan at the end.
type TAP struct {
	W     io.Writer
	books int
	n     int
	began bool
}

func (t *TAP) BookStarted(b *Book, _ int) {
	if !t.began {
		fmt.Fprintln(t.W, "TAP version 14")
		t.began = true
	}
	t.n = 0
	fmt.Fprintf(t.W, "# Subtest: %s\n", tapText(b.Name))
}

func (t *TAP) StepStarted(*Book, string) {}

func (t *TAP) StepDone(_ *Book, r StepResult) {
	t.n++
	desc := tapText(r.Step)
	switch r.Status {
	case Pass:
		fmt.Fprintf(t.W, "    ok %d - %s\n", t.n, desc)
	case Skip:
		fmt.Fprintf(t.W, "    ok %d - %s # SKIP %s\n", t.n, desc, tapText(r.Reason))
	default:
		fmt.Fprintf(t.W, "    not ok %d - %s\n", t.n, desc)
		fmt.Fprintln(t.W, "      ---")
		fmt.Fprintf(t.W, "      message: %s\n", yamlString(r.Reason))
		fmt.Fprintf(t.W, "      at: %s\n", yamlString(r.Pos))
		if r.Outcome != "" {
			fmt.Fprintf(t.W, "      outcome: %s\n", r.Outcome)
		}
		if len(r.Diff) > 0 {
			fmt.Fprintln(t.W, "      diff:")
			for _, c := range r.Diff {
				fmt.Fprintf(t.W, "        - %s\n", yamlString(diffLine(c)))
			}
		}
		if len(r.Saw) > 0 {
			fmt.Fprintf(t.W, "      saw: %s\n", yamlString(string(r.Saw)))
		}
		fmt.Fprintln(t.W, "      ...")
	}
}

func (t *TAP) BookDone(b *Book, rs []StepResult, _ time.Duration) {
	fmt.Fprintf(t.W, "    1..%d\n", t.n)
	t.books++
	_, f, _ := Count(rs)
	if f == 0 {
		fmt.Fprintf(t.W, "ok %d - %s\n", t.books, tapText(b.Name))
	} else {
		fmt.Fprintf(t.W, "not ok %d - %s\n", t.books, tapText(b.Name))
	}
}

// End writes the plan; call it once after the last book.
func (t *TAP) End() {
	if !t.began {
		fmt.Fprintln(t.W, "TAP version 14")
	}
	fmt.Fprintf(t.W, "1..%d\n", t.books)
}

func tapText(s string) string {
	s = safe(s)
	s = strings.NewReplacer("#", `\#`, "\n", " ").Replace(s)
	return s
}

func yamlString(s string) string {
	b, _ := json.Marshal(safe(s)) // a JSON string is a YAML flow scalar
	return string(b)
}

func diffLine(c history.Change) string {
	switch c.Kind {
	case history.Added:
		return fmt.Sprintf("%s added: %s", c.Path, c.New)
	case history.Removed:
		return fmt.Sprintf("%s removed: %s", c.Path, c.Old)
	case history.Changed:
		return fmt.Sprintf("%s: %s → %s", c.Path, c.Old, c.New)
	}
	return fmt.Sprintf("%s: %s", c.Path, c.Note)
}

// JUnit collects results and writes JUnit XML (as GitLab and GitHub test
// reports read it): a testsuite per book, a testcase per step.
type JUnit struct {
	suites []junitSuite
	// coverage is the run's --coverage, when it was reported: a
	// testsuite of its own after the books'.
	coverage *junitSuite
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

// The elements are in the order the JUnit schema gives them (properties,
// testcases, system-out), which some readers insist on.
type junitSuite struct {
	Name       string           `xml:"name,attr"`
	File       string           `xml:"file,attr,omitempty"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
	SystemOut  string           `xml:"system-out,omitempty"`
}

type junitProperties struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	File      string        `xml:"file,attr,omitempty"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

func (j *JUnit) BookStarted(*Book, int)     {}
func (j *JUnit) StepStarted(*Book, string)  {}
func (j *JUnit) StepDone(*Book, StepResult) {}

func (j *JUnit) BookDone(b *Book, rs []StepResult, d time.Duration) {
	s := junitSuite{Name: xmlText(b.Name), File: xmlText(b.File), Time: secs(d)}
	for _, r := range rs {
		c := junitCase{Name: xmlText(r.Step), Classname: xmlText(b.Name), File: xmlText(r.Pos), Time: secs(time.Duration(r.Ms * float64(time.Millisecond)))}
		s.Tests++
		switch r.Status {
		case Fail:
			s.Failures++
			var body strings.Builder
			fmt.Fprintf(&body, "%s\nat %s\n", r.Reason, r.Pos)
			for _, ch := range r.Diff {
				body.WriteString(diffLine(ch) + "\n")
			}
			if len(r.Saw) > 0 {
				body.WriteString("saw: " + string(r.Saw) + "\n")
			}
			typ := "assertion"
			if r.Outcome != "" && r.Outcome != history.OutcomeOK && r.Outcome != history.OutcomeError {
				typ = string(r.Outcome)
			}
			c.Failure = &junitFailure{Message: xmlText(r.Reason), Type: typ, Text: xmlText(body.String())}
		case Skip:
			s.Skipped++
			c.Skipped = &junitSkipped{Message: xmlText(r.Reason)}
		}
		s.Cases = append(s.Cases, c)
	}
	j.suites = append(j.suites, s)
}

// Write writes the XML document.
func (j *JUnit) Write(w io.Writer) error {
	doc := junitSuites{Suites: j.suites}
	if j.coverage != nil {
		doc.Suites = append(doc.Suites[:len(doc.Suites):len(doc.Suites)], *j.coverage)
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// xmlText keeps only characters XML 1.0 allows (a peer's text may hold
// any), after escaping controls for people.
func xmlText(s string) string {
	s = textsafe.SanitizeMultiline(s)
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r == 0xFFFE, r == 0xFFFF, r >= 0xD800 && r <= 0xDFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

// TargetCoverage is which of one target's provided methods a run called.
// A target is what the books' spellings of it resolved to (an alias and
// the name it links to, a socket path and its name are one target).
type TargetCoverage struct {
	// Target names it: the first spelling the books used.
	Target string `json:"target"`
	// Spellings are every way the books wrote it, in the order first used.
	Spellings []string `json:"spellings"`
	// Endpoint is where the spellings resolved to ("" when none did).
	Endpoint string `json:"endpoint,omitempty"`
	// Called are the methods the books called on it, sorted.
	Called []string `json:"called"`
	// Provided is how many methods its capability list names (-1 when
	// it could not be read), ProvidedCalled how many of those were
	// called, NotCalled the others.
	Provided       int      `json:"provided"`
	ProvidedCalled int      `json:"provided_called"`
	NotCalled      []string `json:"not_called,omitempty"`
	// NotListed are the methods called that its capability list does
	// not name.
	NotListed []string `json:"not_listed,omitempty"`
}

// Summary is the coverage line reports print for t.
func (t TargetCoverage) Summary() string {
	name := strings.Join(t.Spellings, ", ")
	if len(t.Spellings) > 1 && t.Endpoint != "" {
		name += " (one target: " + t.Endpoint + ")"
	}
	if t.Provided < 0 {
		return fmt.Sprintf("%s: %d method(s) called; its capability list could not be read", name, len(t.Called))
	}
	return fmt.Sprintf("%s: %d of %d provided methods called", name, t.ProvidedCalled, t.Provided)
}

// CoverageReporter is a Reporter that also reports --coverage.
type CoverageReporter interface {
	Coverage(cov []TargetCoverage)
}

// Coverage tells every reporter that reports coverage.
func (rs Reporters) Coverage(cov []TargetCoverage) {
	for _, r := range rs {
		if c, ok := r.(CoverageReporter); ok {
			c.Coverage(cov)
		}
	}
}

// Details are the lines every report prints under t's Summary (unescaped:
// each report escapes them its own way).
func (t TargetCoverage) Details() []string {
	var out []string
	if len(t.NotCalled) > 0 {
		out = append(out, "not called: "+strings.Join(t.NotCalled, ", "))
	}
	if len(t.NotListed) > 0 {
		out = append(out, "called, not in its list: "+strings.Join(t.NotListed, ", "))
	}
	return out
}

// Coverage prints the coverage after the books' reports.
func (t *Text) Coverage(cov []TargetCoverage) {
	fmt.Fprintln(t.W, "coverage:")
	for _, c := range cov {
		fmt.Fprintf(t.W, "  %s\n", safe(c.Summary()))
		for _, l := range c.Details() {
			fmt.Fprintf(t.W, "    %s\n", safe(l))
		}
	}
}

// Coverage writes one line {"coverage":[...]} after the steps' lines.
func (j *JSON) Coverage(cov []TargetCoverage) {
	if cov == nil {
		cov = []TargetCoverage{}
	}
	b, err := json.Marshal(struct {
		Coverage []TargetCoverage `json:"coverage"`
	}{cov})
	if err == nil {
		j.W.Write(append(b, '\n'))
	}
}

// Coverage writes the coverage as TAP comments (valid anywhere in TAP).
func (t *TAP) Coverage(cov []TargetCoverage) {
	if !t.began {
		fmt.Fprintln(t.W, "TAP version 14")
		t.began = true
	}
	fmt.Fprintln(t.W, "# coverage:")
	for _, c := range cov {
		fmt.Fprintf(t.W, "#   %s\n", tapComment(c.Summary()))
		for _, l := range c.Details() {
			fmt.Fprintf(t.W, "#     %s\n", tapComment(l))
		}
	}
}

// Coverage adds a testsuite "coverage" after the books': a passing
// testcase per target whose system-out says what the text report says of
// it (the test report views of GitLab, GitHub and Jenkins show a
// testcase's output), the suite's system-out all of it, and its
// properties the same as values (coverage.N.target, .spellings,
// .endpoint, .called, .provided, .provided_called, .not_called,
// .not_listed; lists comma-separated, N from 1 in the report's order).
// Every text is escaped as the rest of the XML is (xmlText); encoding/xml
// escapes markup, so a name holding "]]>" or a quote stays text.
func (j *JUnit) Coverage(cov []TargetCoverage) {
	s := &junitSuite{Name: "coverage", Time: secs(0), Properties: &junitProperties{}}
	var all strings.Builder
	all.WriteString("coverage:\n")
	if len(cov) == 0 {
		all.WriteString("  no target was called\n")
	}
	prop := func(n int, key, v string) {
		s.Properties.Props = append(s.Properties.Props, junitProperty{Name: fmt.Sprintf("coverage.%d.%s", n, key), Value: xmlText(v)})
	}
	for i, c := range cov {
		var out strings.Builder
		out.WriteString(c.Summary() + "\n")
		for _, l := range c.Details() {
			out.WriteString("  " + l + "\n")
		}
		all.WriteString(indentLines(out.String(), "  "))
		s.Tests++
		s.Cases = append(s.Cases, junitCase{Name: xmlText(c.Target), Classname: "coverage", Time: secs(0), SystemOut: xmlText(out.String())})
		n := i + 1
		prop(n, "target", c.Target)
		prop(n, "spellings", strings.Join(c.Spellings, ", "))
		prop(n, "endpoint", c.Endpoint)
		prop(n, "called", strings.Join(c.Called, ", "))
		prop(n, "provided", fmt.Sprint(c.Provided))
		prop(n, "provided_called", fmt.Sprint(c.ProvidedCalled))
		prop(n, "not_called", strings.Join(c.NotCalled, ", "))
		prop(n, "not_listed", strings.Join(c.NotListed, ", "))
	}
	if len(s.Properties.Props) == 0 {
		s.Properties = nil
	}
	s.SystemOut = xmlText(all.String())
	j.coverage = s
}

// indentLines puts prefix before every line of s.
func indentLines(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}

// tapComment is text for a TAP comment line: one line, escaped.
func tapComment(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(safe(s))
}
