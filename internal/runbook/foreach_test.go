package runbook

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// forEachBook runs job.get once per id (skipping "skipme"), then sends
// what a later step reads of it: every item's outcome and, as before, the
// last item's.
const forEachBook = `vars: {ids: [a, b, skipme, c]}
steps:
  - name: each
    for_each: "{{ .vars.ids }}"
    if: '.item != "skipme"'
    call: t job.get
    params: {id: "{{ .item }}"}
  - name: check
    call: t check
    params:
      items: "{{ .steps.each.items | map(del(.ms)) }}"
      last: "{{ .steps.each | del(.items, .ms) }}"
`

func sentParams(t *testing.T, c *seqCaller) map[string]any {
	t.Helper()
	last := c.calls[len(c.calls)-1]
	if last.Method != "check" {
		t.Fatalf("the check step did not run: calls %+v", c.calls)
	}
	var m map[string]any
	if err := json.Unmarshal(last.Params, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A for_each step's .steps.NAME holds every item's outcome as items, in
// item order, each with its result or error (it held only the last
// item's: a later step could not check the others), and keeps the last
// item's fields as before.
func TestForEachKeepsEveryItemsOutcome(t *testing.T) {
	c := &seqCaller{answers: []Answer{result(`{"id":"a"}`), rpcErr(-32001, "busy"), result(`{"id":"c"}`), result(`{}`)}}
	res, out := runText(t, []byte(forEachBook), c)
	if s := statusesOf(res); s != "each[0]=pass each[1]=fail each[2]=skip each[3]=pass check=pass" {
		t.Fatalf("statuses %s\n%s", s, out)
	}
	p := sentParams(t, c)
	wantItems := `[{"error":null,"index":0,"item":"a","outcome":"ok","result":{"id":"a"},"status":"pass"},` +
		`{"error":{"code":-32001,"data":{"retry_ms":5},"message":"busy"},"index":1,"item":"b","outcome":"error","result":null,"status":"fail"},` +
		`{"error":null,"index":2,"item":"skipme","outcome":null,"result":null,"status":"skip"},` +
		`{"error":null,"index":3,"item":"c","outcome":"ok","result":{"id":"c"},"status":"pass"}]`
	if got := jsonOf(t, p["items"]); got != wantItems {
		t.Errorf("items\n got %s\nwant %s", got, wantItems)
	}
	if got, want := jsonOf(t, p["last"]), `{"error":null,"outcome":"ok","result":{"id":"c"},"status":"pass"}`; got != want {
		t.Errorf("the last item's outcome\n got %s\nwant %s", got, want)
	}
}

// The answers items keep are bounded (a peer answering large for each of
// 10,000 items held them all): past the bound an item's result and error,
// and every later item's, are null and truncated is true; its status and
// outcome stay.
func TestForEachItemsAreBounded(t *testing.T) {
	b, err := Parse("b.yaml", []byte(forEachBook))
	if err != nil {
		t.Fatal(err)
	}
	c := &seqCaller{answers: []Answer{result(`{"id":"a"}`), rpcErr(-32001, "busy"), result(`{"id":"c"}`), result(`{}`)}}
	var out bytes.Buffer
	// {"id":"a"} is 10 bytes, busy and its data 17: the second item is past 20.
	r := &Runner{Caller: c, Report: &Text{W: &out}, itemsBytes: 20}
	if _, err := r.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	items, _ := sentParams(t, c)["items"].([]any)
	if len(items) != 4 {
		t.Fatalf("items %v\n%s", items, out.String())
	}
	for i, want := range []string{
		`{"error":null,"index":0,"item":"a","outcome":"ok","result":{"id":"a"},"status":"pass"}`,
		`{"error":null,"index":1,"item":"b","outcome":"error","result":null,"status":"fail","truncated":true}`,
		`{"error":null,"index":2,"item":"skipme","outcome":null,"result":null,"status":"skip"}`,
		`{"error":null,"index":3,"item":"c","outcome":"ok","result":null,"status":"pass","truncated":true}`,
	} {
		if got := jsonOf(t, items[i]); got != want {
			t.Errorf("item %d\n got %s\nwant %s", i, got, want)
		}
	}
}
