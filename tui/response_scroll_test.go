package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/ipc"
)

// itemsAnswer is a JSON array of n strings, "item 0000000" to
// "item <n-1>": one line each once pretty-printed, between "[" and "]".
func itemsAnswer(n int) []byte {
	var b strings.Builder
	b.Grow(n * 16)
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"item %07d"`, i)
	}
	b.WriteByte(']')
	return []byte(b.String())
}

// itemsDoc is itemsAnswer(n) pretty-printed, built directly (a 10,000
// screen answer formatted by render.Format for every size would be slow).
func itemsDoc(n int) *doc {
	var b strings.Builder
	b.Grow(n * 18)
	b.WriteString("[\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `  "item %07d"`, i)
		if i < n-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]")
	return newDoc(b.String(), true)
}

// cursorRow is the response pane's row under the cursor, without its
// marker ("" when the cursor is not on screen).
func cursorRow(m *model) string {
	for _, l := range strings.Split(ansi.Strip(m.resp().View()), "\n") {
		l = strings.Trim(l, "│ ")
		if strings.HasPrefix(l, "›") {
			return strings.TrimSpace(strings.TrimPrefix(l, "›"))
		}
	}
	return ""
}

// TestLongAnswerReadToItsEnd reads answers of 1, 10 and 10,000 screens at
// every layout size with every motion key, a search hit and a jq result:
// the cursor lands on the line the key means and stays on screen (the view
// used to move one line at a time behind it, so G showed the answer's
// second line and a far search hit never showed).
func TestLongAnswerReadToItsEnd(t *testing.T) {
	type step struct {
		keys []string
		// want is the line the cursor must be on, of an answer of n items
		// (line 0 is "[", line n+1 is "]") with h rows in the pane.
		want func(n, h int) int
	}
	last := func(n, _ int) int { return n + 1 }
	cases := []struct {
		name  string
		steps []step
	}{
		{"j past the screen", []step{{keys: rep("j", 3), want: func(n, h int) int { return min(3, n+1) }},
			{keys: rep("j", 60), want: func(n, h int) int { return min(63, n+1) }}}},
		{"pgdown", []step{{keys: []string{"pgdown"}, want: func(n, h int) int { return min(h-1, n+1) }},
			{keys: []string{"pgdown"}, want: func(n, h int) int { return min(2*(h-1), n+1) }},
			{keys: []string{"pgdown"}, want: func(n, h int) int { return min(3*(h-1), n+1) }}}},
		{"G", []step{{keys: []string{"G"}, want: last}}},
		{"G then k", []step{{keys: []string{"G"}, want: last}, {keys: rep("k", 2), want: func(n, _ int) int { return max(n-1, 0) }}}},
		{"G then pgup", []step{{keys: []string{"G"}, want: last}, {keys: []string{"ctrl+u"}, want: func(n, h int) int { return max(n+1-(h-1), 0) }}}},
		{"G then g", []step{{keys: []string{"G"}, want: last}, {keys: []string{"g"}, want: func(int, int) int { return 0 }}}},
		{"end", []step{{keys: []string{"end"}, want: last}}},
	}
	sizes := []struct{ w, h int }{{80, 24}, {120, 35}, {200, 50}}
	for _, sz := range sizes {
		for _, screens := range []int{1, 10, 10000} {
			m, _ := testModel(t, goldenConfig("dark"))
			m.update(winSize(sz.w, sz.h))
			m.setFocus(pResponse)
			_ = m.render()
			h := m.resp().lastH
			n := max(screens*h-2, 1)
			d := itemsDoc(n)
			a := &answer{seq: m.pc.nextSeq(), target: named("big"), req: ipc.Request{Method: "big.list"}, outcome: "ok", size: n * 16}
			m.update(callDoneMsg{ans: a, doc: d})
			_ = m.render()
			for _, c := range cases {
				name := fmt.Sprintf("%dx%d/%d screens/%s", sz.w, sz.h, screens, c.name)
				m.resp().home()
				for _, st := range c.steps {
					for _, k := range press(st.keys...) {
						run(t, m, m.update(k))
					}
					want := st.want(n, h)
					_ = m.render()
					if got := m.resp().cur; got != want {
						t.Errorf("%s: after %v the cursor is on line %d, want %d", name, st.keys, got, want)
					}
					if row := cursorRow(m); row != strings.TrimSpace(d.line(want)) {
						t.Errorf("%s: after %v the cursor's row shows %q, want %q (off %d)", name, st.keys, row, d.line(want), m.resp().off)
					}
				}
			}
			// A search hit three quarters down, then the next one.
			target := n * 3 / 4
			m.resp().home()
			keyMsgs(t, m, "/")
			keyMsgs(t, m, fmt.Sprintf("item %07d", target))
			keyMsgs(t, m, "enter")
			_ = m.render()
			if row := cursorRow(m); row != strings.TrimSpace(d.line(target+1)) {
				t.Errorf("%dx%d/%d screens: the search hit for item %d shows %q under the cursor (line %d, off %d)",
					sz.w, sz.h, screens, target, row, m.resp().cur, m.resp().off)
			}
		}
	}
}

// TestLongJQResultReadToItsEnd filters a long answer with jq and reads the
// result to its end at every layout size.
func TestLongJQResultReadToItsEnd(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 35}, {200, 50}} {
		for _, screens := range []int{1, 10, 1000} {
			m, _ := testModel(t, goldenConfig("dark"))
			m.update(winSize(sz.w, sz.h))
			m.setFocus(pResponse)
			_ = m.render()
			n := screens * m.resp().lastH
			a := &answer{seq: m.pc.nextSeq(), target: named("big"), req: ipc.Request{Method: "big.list"}, outcome: "ok",
				result: itemsAnswer(2 * n)}
			m.update(callDoneMsg{ans: a, doc: prettyDoc(a.result)})
			keyMsgs(t, m, ":")
			// Pasted: typed, every key would wait for the filter's tick.
			m.update(tea.PasteMsg{Content: `map(select(endswith("0") or endswith("2") or endswith("4") or endswith("6") or endswith("8")))`})
			drainJQ(t, m)
			if m.resp().jqDoc == nil {
				t.Fatalf("%dx%d: no jq result (%s)", sz.w, sz.h, m.resp().jqErr)
			}
			keyMsgs(t, m, "enter") // leave the field; the filter stays
			jd := m.resp().jqDoc
			keyMsgs(t, m, "G")
			_ = m.render()
			want := jd.len() - 1
			if m.resp().cur != want || cursorRow(m) != "]" {
				t.Errorf("%dx%d/%d screens: G on the jq result: cursor on line %d showing %q, want line %d showing \"]\"",
					sz.w, sz.h, screens, m.resp().cur, cursorRow(m), want)
			}
			keyMsgs(t, m, "k")
			_ = m.render()
			if row, wl := cursorRow(m), strings.TrimSpace(jd.line(want-1)); row != wl {
				t.Errorf("%dx%d/%d screens: k after G shows %q, want %q", sz.w, sz.h, screens, row, wl)
			}
		}
	}
}

// drainJQ runs the jq filter the response pane waits to run (its tick
// and then the filter).
func drainJQ(t *testing.T, m *model) {
	t.Helper()
	r := m.resp()
	deadline := time.Now().Add(10 * time.Second)
	for r.jqDoc == nil && r.jqErr == "" && time.Now().Before(deadline) {
		run(t, m, m.update(jqTickMsg{seq: r.jqSeq}))
	}
}

func rep(k string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = k
	}
	return out
}

// BenchmarkLargeAnswerEnd measures G on a formatted 10 MB answer: the key
// and the frame that shows the answer's last line.
func BenchmarkLargeAnswerEnd(b *testing.B) {
	data := genAnswer(10 << 20)
	m := benchModel(b, 120, 35)
	a := answerOf(0, named("big"), ipc.Request{Method: "big.get"}, time.Now(), &ipc.Response{Result: data}, nil)
	d := prettyDoc(a.result)
	m.update(callDoneMsg{ans: a, doc: d})
	m.setFocus(pResponse)
	_ = m.render()
	end, top := press("G", "g")[0], press("G", "g")[1]
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(top)
		m.update(end)
		if s := ansi.Strip(m.render()); m.resp().cur != d.len()-1 || !strings.Contains(s, "› }") {
			b.Fatal("the last line is not on screen")
		}
	}
}

// BenchmarkSearchFarHit measures a search whose first hit is 100,000
// lines down a large answer: the search (a command), applying its result
// and the frame that shows the hit.
func BenchmarkSearchFarHit(b *testing.B) {
	n := 200000
	d := itemsDoc(n)
	m := benchModel(b, 120, 35)
	a := &answer{target: named("big"), req: ipc.Request{Method: "big.list"}, outcome: "ok"}
	m.update(callDoneMsg{ans: a, doc: d})
	m.setFocus(pResponse)
	_ = m.render()
	q := fmt.Sprintf("ITEM %07d", 100000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.resp().home()
		msg := searchDoneMsg{d: d, q: q, matches: searchDoc(context.Background(), d, q)}
		m.update(msg)
		if _ = m.render(); cursorRow(m) != `"item 0100000",` {
			b.Fatal("the hit is not on screen")
		}
	}
}

// TestEndBeforeFormatted: G pressed while a large answer's preview shows
// (the whole answer still formatting) lands on the answer's last line
// once the whole document arrives, in the frame that shows it; it used to
// stay on the preview's last line, far from the end.
func TestEndBeforeFormatted(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(120, 35))
	m.setFocus(pResponse)
	data := itemsAnswer(200000) // 3 MiB: a preview first
	a := answerOf(m.pc.nextSeq(), named("big"), ipc.Request{Method: "big.list"}, time.Now(), &ipc.Response{Result: data}, nil)
	msg := answerMsg(a)
	if !msg.partial {
		t.Fatal("no preview")
	}
	m.update(msg)
	_ = m.render()
	keyMsgs(t, m, "G")
	full := prettyDoc(a.result)
	m.update(fullDocMsg{ans: a, doc: full})
	_ = m.render()
	if m.resp().cur != full.len()-1 || cursorRow(m) != "]" {
		t.Fatalf("after the whole answer came the cursor is on line %d of %d, showing %q", m.resp().cur, full.len(), cursorRow(m))
	}
	// Moved since: the whole answer does not move it.
	m.update(msg)
	keyMsgs(t, m, "G", "k")
	cur := m.resp().cur
	m.update(fullDocMsg{ans: a, doc: full})
	if m.resp().cur != cur {
		t.Fatalf("the whole answer moved a cursor the user moved: %d, was %d", m.resp().cur, cur)
	}
}
