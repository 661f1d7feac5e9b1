package runbook

import (
	"strings"
	"testing"
)

// equals on an error compares the fields it names: {code: -32601} holds
// whatever the peer words its message or adds as data (it compared the
// whole error object, so it failed on any data or wording: 2 differences
// here). A named field is compared whole (ignore paths aside), a named
// field the error lacks is a difference, and a result is compared whole
// as before.
func TestEqualsOnAnErrorComparesTheFieldsItNames(t *testing.T) {
	notFound := rpcErr(-32601, "Method not found: job.nope") // data {"retry_ms":5}
	for _, c := range []struct {
		name, expect string
		ans          Answer
		status       Status
		diffs        string // the diff's paths, space-separated
	}{
		{"the code alone", `{error: -32601, equals: {code: -32601}}`, notFound, Pass, ""},
		{"another code", `{error_message: "not found", equals: {code: -32602}}`, notFound, Fail, ".code"},
		{"the message, as written", `{error: -32601, equals: {code: -32601, message: "method not found"}}`, notFound, Fail, ".message"},
		{"data whole", `{error: -32601, equals: {data: {retry_ms: 5}}}`, notFound, Pass, ""},
		{"data whole, a key more", `{error: -32601, equals: {data: {retry_ms: 5, why: x}}}`, notFound, Fail, ".data.why"},
		{"data, ignored paths aside", "{error: -32601, equals: {data: {retry_ms: 9}}, ignore: [.data.retry_ms]}", notFound, Pass, ""},
		{"a named field it lacks", `{error: -32601, equals: {code: -32601, data: {x: 1}}}`, rpcErrNoData(-32601, "nope"), Fail, ".data"},
		{"a result: whole", `{equals: {a: 1}}`, result(`{"a":1,"b":2}`), Fail, ".b"},
	} {
		book := "steps:\n  - call: t job.nope\n    expect: " + c.expect + "\n"
		res, out := runText(t, []byte(book), &seqCaller{answers: []Answer{c.ans}})
		var paths []string
		for _, d := range res[0].Diff {
			paths = append(paths, d.Path)
		}
		if res[0].Status != c.status || strings.Join(paths, " ") != c.diffs {
			t.Errorf("%s: %s, diff %v, want %s %q\n%s", c.name, res[0].Status, paths, c.status, c.diffs, out)
		}
	}
}

func rpcErrNoData(code int64, msg string) Answer {
	a := rpcErr(code, msg)
	a.Error.Data = nil
	return a
}

// equals on an expected error naming a field no error has (a typo) is
// exit 2 with its place, before anything is sent: it would fail every run.
// On a result any key is fine.
func TestEqualsOnAnErrorNamesItsFields(t *testing.T) {
	be := bookErr(t, "steps:\n  - call: t a\n    expect:\n      error: -32601\n      equals: {cod: -32601}\n")
	if be.Pos.Line != 5 || be.Pos.Column != 16 || !strings.Contains(be.Msg, `(code, message, data), not "cod"`) {
		t.Errorf("%s", be)
	}
	b, err := Parse("b.yaml", []byte("steps:\n  - call: t a\n    expect: {equals: {cod: 1}}\n"))
	if err == nil {
		err = Check(b)
	}
	if err != nil {
		t.Errorf("equals on a result: %v", err)
	}
}
