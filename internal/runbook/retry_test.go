package runbook

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/history"
)

// seqCaller answers its calls in turn from answers, the last one again
// once they run out, and records them.
type seqCaller struct {
	recCaller
	answers []Answer
}

func (c *seqCaller) Call(_ context.Context, call Call) Answer {
	c.calls = append(c.calls, call)
	i := min(len(c.calls), len(c.answers)) - 1
	return c.answers[i]
}

func rpcErr(code int64, msg string) Answer {
	return Answer{Error: &history.RPCError{Code: code, Message: msg, Data: json.RawMessage(`{"retry_ms":5}`)}, Outcome: history.OutcomeError}
}

func result(s string) Answer { return Answer{Result: json.RawMessage(s), Outcome: history.OutcomeOK} }

// retry.until judges an error answer as it judges a result: it sees the
// error as $error ({code, message, data}; . is null), so a book waits out
// a peer's "busy" error, or waits for an expected error. It did not: an
// error answer was never judged, so a retry waiting out "busy" ran out its
// times whatever came, and $error was no variable (exit 2). A call is
// still sent again only when the book may repeat it, and expect still
// judges the answer until accepted.
func TestRetryUntilSeesTheError(t *testing.T) {
	busy := rpcErr(-32001, "busy")
	for _, c := range []struct {
		name, book string
		answers    []Answer
		calls      int
		status     Status
		reason     string
	}{
		{"waits out busy", `steps:
  - call: t job.state
    idempotent: true
    retry: {until: '$error.code != -32001', times: 5, every: 1ms}
    expect: {result: .done}
`, []Answer{busy, busy, result(`{"done":true}`)}, 3, Pass, ""},
		{"waits for an error", `steps:
  - call: t job.cancel
    idempotent: true
    retry: {until: '$error.code == -32602 and $error.data.retry_ms == 5 and . == null', times: 5, every: 1ms}
    expect: {error: -32602, result: '$error.message == "gone"'}
`, []Answer{result(`{"n":1}`), rpcErr(-32602, "gone")}, 2, Pass, ""},
		{"an error until accepts is still judged", `steps:
  - call: t health.check
    retry: {until: '$error != null', times: 5, every: 1ms}
`, []Answer{result(`{}`), busy}, 2, Fail, "the peer answered error -32001: busy"},
		{"a result: $error is null", `steps:
  - call: t health.check
    retry: {until: '$error == null and .ok', times: 3, every: 1ms}
`, []Answer{busy, result(`{"ok":false}`), result(`{"ok":true}`)}, 3, Pass, ""},
		{"never twice unless the book may repeat it", `steps:
  - call: t ledger.entry.append
    retry: {until: '$error.code != -32001', times: 5, every: 1ms}
`, []Answer{busy, result(`{}`)}, 1, Fail, "not sent again: ledger.entry.append is neither marked idempotent"},
		{"ran out waiting out busy", `steps:
  - call: t health.check
    retry: {until: '$error.code != -32001', times: 3, every: 1ms}
`, []Answer{busy}, 3, Fail, "not met after 3 calls (the last call answered error -32001: busy)"},
	} {
		sc := &seqCaller{answers: c.answers}
		res, out := runText(t, []byte(c.book), sc)
		if len(sc.calls) != c.calls || len(res) != 1 || res[0].Status != c.status || !strings.Contains(res[0].Reason, c.reason) {
			t.Errorf("%s: %d calls (want %d), %+v\n%s", c.name, len(sc.calls), c.calls, res, out)
		}
	}
}

// $error is read only where there is an answer: in an if:, a template or
// an event's match it is exit 2 before anything is sent, not a null.
func TestErrorVariableOnlyOverAnAnswer(t *testing.T) {
	for _, book := range []string{
		"steps:\n  - call: t a\n    if: '$error == null'\n",
		"steps:\n  - call: t a\n    params: {x: \"{{ $error }}\"}\n",
		"steps:\n  - call: t a\n    expect: {event: {from: t, match: '$error == null', within: 1s}}\n",
	} {
		be := bookErr(t, book)
		if !strings.Contains(be.Msg, "$error") {
			t.Errorf("%q: %s", book, be.Msg)
		}
	}
}
