package tui

import (
	"bytes"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestSupersededFoldStops: a fold command whose answer a change of the
// folds made stale (a newer fold, a new answer) stops instead of walking
// the document to its end, and hands the model nothing. Before, it ran
// to its end (30-40 ms at 10 MiB) and its answer was dropped by Update.
func TestSupersededFoldStops(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	d := itemsDoc(200_000)
	show := func() {
		m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: named("t"), req: ipc.Request{Method: "m"}, outcome: "ok"}, doc: d})
	}
	ask := func(k string) tea.Cmd {
		t.Helper()
		cmd := m.update(press(k)[0])
		if cmd == nil {
			t.Fatalf("%s: no command", k)
		}
		return cmd
	}
	for _, c := range []struct {
		name string
		key  string // the fold asked first
		then func() // what makes it stale
	}{
		{"fold-all, a new answer", "Z", show},
		{"fold, a new answer", "h", show},
		{"fold, then fold-all", "h", func() { _ = ask("Z") }},
	} {
		show()
		if c.key == "h" {
			keyMsgs(t, m, "g") // line 0 opens the block that ends at the end
		}
		stale := ask(c.key)
		c.then()
		if msg := stale(); msg != nil {
			t.Errorf("%s: the stale command ran to its end and handed back %T", c.name, msg)
		}
	}

	// Not stale: it works out its fold as before.
	show()
	if msg, ok := ask("Z")().(foldDoneMsg); !ok || msg.all == nil {
		t.Fatalf("fold-all worked out nothing: %+v", msg)
	}
	keyMsgs(t, m, "g")
	if msg, ok := ask("h")().(foldDoneMsg); !ok || msg.c != d.len()-1 {
		t.Fatalf("the fold of line 0 worked out %+v, want it closed at %d", msg, d.len()-1)
	}
}

// TestFoldWalksStopEarly: the walks of a fold and of building a document
// look at their stop every stopEvery lines and end at the first look that
// says stop, not at the document's end.
func TestFoldWalksStopEarly(t *testing.T) {
	d := itemsDoc(200_000)
	stopAt := func(n int) (func() bool, *int) {
		looks := 0
		return func() bool { looks++; return looks >= n }, &looks
	}
	stop, looks := stopAt(3)
	if f := depthOneBlocks(d, stop); f != nil || *looks != 3 {
		t.Errorf("depthOneBlocks: %v after %d looks, want nil after 3", f, *looks)
	}
	stop, looks = stopAt(3)
	if c := d.closeUntil(0, stop); c != -1 || *looks != 3 {
		t.Errorf("closeUntil: %d after %d looks, want -1 after 3", c, *looks)
	}
	never := func() bool { return false }
	if c := d.closeUntil(0, never); c != d.len()-1 {
		t.Errorf("closeUntil, never stopped: %d, want %d", c, d.len()-1)
	}
	if f := depthOneBlocks(d, never); f == nil {
		t.Error("depthOneBlocks, never stopped: nil")
	}
	// Formatting: a look before each chunk (64 KiB) the printer reads,
	// then one every stopEvery lines split.
	data := itemsAnswer(200_000) // 3 MB: 45 chunks
	stop, looks = stopAt(3)
	if out, stopped, err := formatUntil(data, stop); !stopped || out != nil || err != nil || *looks != 3 {
		t.Errorf("formatUntil: stopped %v (%d bytes, %v) after %d looks, want stopped after 3", stopped, len(out), err, *looks)
	}
	counted, looks := stopAt(1 << 30)
	out, stopped, err := formatUntil(data, counted)
	if want, _ := render.Format(data, render.Options{Indent: render.DefaultIndent}); stopped || err != nil || !bytes.Equal(out, want) {
		t.Errorf("formatUntil, never stopped: stopped %v, %v, %d bytes, want render.Format's %d", stopped, err, len(out), len(want))
	}
	if chunks := len(data) / (64 << 10); *looks < chunks {
		t.Errorf("formatUntil looked %d times over %d chunks read: it does not look while it formats", *looks, chunks)
	}
	stop, looks = stopAt(3 + len(data)/(64<<10) + 1 + 2) // formatted whole, then two looks into the lines
	if got := prettyDocUntil(data, stop); got != nil {
		t.Errorf("prettyDocUntil: a document after %d looks, want nil", *looks)
	}
	if got := prettyDocUntil(data, never); got == nil || got.len() != 200_002 {
		t.Errorf("prettyDocUntil, never stopped: %v lines", got)
	}
}

// TestSupersededFormattingStops: the whole of a previewed answer (and
// its envelope) formatted in a command is not formatted further once
// another answer replaces it: the command hands back nothing. Before, it
// formatted the whole answer for Update to drop.
func TestSupersededFormattingStops(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	big := answerOf(m.pc.nextSeq(), named("big"), ipc.Request{Method: "big.list"}, time.Now(), &ipc.Response{Result: itemsAnswer(100_000)}, nil)
	msg := answerMsg(big)
	if !msg.partial {
		t.Fatal("the answer is not previewed: the test shows nothing")
	}
	whole := m.update(msg)
	env := m.update(press("r")[0]) // the envelope, formatted in a command
	if whole == nil || env == nil {
		t.Fatal("no formatting command")
	}
	small := answerOf(m.pc.nextSeq(), named("small"), ipc.Request{Method: "m"}, time.Now(), &ipc.Response{Result: []byte(`{"a":1}`)}, nil)
	m.update(answerMsg(small))
	var got []tea.Msg
	var collect func(tea.Cmd)
	collect = func(c tea.Cmd) {
		if c == nil {
			return
		}
		switch x := c().(type) {
		case tea.BatchMsg:
			for _, c := range x {
				collect(c)
			}
		case fullDocMsg, envDoneMsg:
			got = append(got, x)
		}
	}
	collect(whole)
	collect(env)
	if len(got) != 0 {
		t.Fatalf("the replaced answer was formatted to its end: %d documents handed back", len(got))
	}
	// The answer shown is still formatted.
	m.update(answerMsg(big))
	if _, ok := m.update(press("r")[0])().(envDoneMsg); !ok {
		t.Fatal("the envelope of the answer shown was not formatted")
	}
}

// BenchmarkPrettyDocStoppable measures formatting a 10 MB answer into a
// document as the commands do, able to stop (the printer reads it a
// chunk at a time), beside prettyDoc (the answer formatted in one go).
func BenchmarkPrettyDocStoppable(b *testing.B) {
	data := genAnswer(10 << 20)
	never := func() bool { return false }
	for _, c := range []struct {
		name    string
		stopped func() bool
	}{{"whole", nil}, {"stoppable", never}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if prettyDocUntil(data, c.stopped) == nil {
					b.Fatal("no document")
				}
			}
		})
	}
}

// TestSupersededJQStops: a jq run made stale by a newer filter or a new
// answer is cancelled: its command ends at once and hands back nothing.
// Before, it ran until its own end or its 2 s limit, for Update to drop.
func TestSupersededJQStops(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	show := func() {
		a := answerOf(m.pc.nextSeq(), named("t"), ipc.Request{Method: "m"}, time.Now(), &ipc.Response{Result: []byte(`{"a":[1,2,3]}`)}, nil)
		m.update(answerMsg(a))
	}
	// typed: keys whose commands (the debounce ticks) are not run: the
	// test runs the jq itself.
	typed := func(keys ...string) {
		for _, k := range press(keys...) {
			m.update(k)
		}
	}
	show()
	r := m.resp()
	const slow = `last(range(1e12))` // runs until stopped or its 2 s
	for _, c := range []struct {
		name string
		then func()
	}{
		{"a newer filter", func() { typed("backspace") }},
		{"a new answer", show},
	} {
		typed("esc", ":") // the jq field
		if !r.jq.active {
			t.Fatal("the jq field did not open")
		}
		typed(slow)
		run := r.runJQ() // what the debounce tick asks for
		if run == nil {
			t.Fatalf("%s: no jq command", c.name)
		}
		c.then()
		start := time.Now()
		msg := run()
		if took := time.Since(start); msg != nil || took > time.Second {
			t.Errorf("%s: the stale jq run took %v and handed back %T", c.name, took.Round(time.Millisecond), msg)
		}
	}
	// Not stale: it runs to its answer.
	typed("esc", ":", ".a | length")
	if msg, ok := r.runJQ()().(jqDoneMsg); !ok || msg.err != nil || msg.doc == nil || msg.doc.line(0) != "3" {
		t.Fatalf("the jq run worked out %+v", msg)
	}
}

// TestSupersededSearchStops: a search made stale by a newer one or a new
// answer is cancelled (its command hands back nothing), and what a
// search found in a document no longer shown moves nothing. Before, a
// stale search ran to its end and was applied: its line numbers, of
// another document, moved the cursor.
func TestSupersededSearchStops(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	typed := func(keys ...string) tea.Cmd {
		var cmd tea.Cmd
		for _, k := range press(keys...) {
			cmd = m.update(k)
		}
		return cmd
	}
	show := func(d *doc) {
		m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: named("t"), req: ipc.Request{Method: "m"}, outcome: "ok"}, doc: d})
	}
	big := itemsDoc(100_000)
	r := m.resp()
	for _, c := range []struct {
		name string
		then func()
	}{
		{"a newer search", func() { _ = typed("/", "item 0000002", "enter") }},
		{"a new answer", func() { show(itemsDoc(10)) }},
	} {
		show(big)
		stale := typed("/", "item 0099999", "enter")
		if stale == nil {
			t.Fatalf("%s: no search command", c.name)
		}
		c.then()
		if msg := stale(); msg != nil {
			t.Errorf("%s: the stale search handed back %T", c.name, msg)
			m.update(msg)
			if r.cur == 99_999+1 {
				t.Errorf("%s: and it moved the cursor to its hit", c.name)
			}
		}
	}
	// What a search found in another document moves nothing.
	show(itemsDoc(10))
	m.update(searchDoneMsg{d: big, q: "item 0000007", matches: []int{8}})
	if r.cur != 0 || r.matchDoc == big {
		t.Errorf("a search of another document was applied: cursor %d", r.cur)
	}
	// Not stale: it finds and jumps.
	show(big)
	if msg, ok := typed("/", "item 0000500", "enter")().(searchDoneMsg); !ok || len(msg.matches) != 1 || msg.matches[0] != 501 {
		t.Fatalf("the search found %+v", msg)
	}
}
