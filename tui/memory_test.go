package tui

import (
	"context"
	"github.com/ecoPrimals/primalscope/internal/render"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/ecoPrimals/primalscope/ipc"
)

// heapNow is the live heap after a full collection.
func heapNow() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// showAnswer puts data on screen as a call's answer does: the preview,
// the whole document formatted, each frame drawn.
func showAnswer(m *model, data []byte) *answer {
	raw := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":`), data...), '}')
	resp := &ipc.Response{Result: raw[len(raw)-1-len(data) : len(raw)-1], Raw: raw, Elapsed: time.Millisecond}
	a := answerOf(m.pc.nextSeq(), named("big"), ipc.Request{Method: "big.get"}, time.Now(), resp, nil)
	msg := answerMsg(a)
	m.update(msg)
	_ = m.render()
	if msg.partial {
		m.update(fullDocMsg{ans: a, doc: prettyDoc(a.result)})
		_ = m.render()
	}
	return a
}

// TestLargeAnswerMemory shows a 10 MiB answer, reads it (to its end, a
// search), then replaces it with a small one: while shown it costs at
// most 3× its size, and once replaced nothing holds it (its bytes and its
// document are collected).
func TestLargeAnswerMemory(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(120, 35))
	m.setFocus(pResponse)
	before := heapNow()
	a := showAnswer(m, genAnswer(10<<20))
	size := uint64(a.size)
	keyMsgs(t, m, "G", "/", "rhizocrypt", "enter", "g")
	shown := heapNow()
	wAns, wDoc := weak.Make(a), weak.Make(m.resp().pretty)
	wRaw := weak.Make(&a.raw[0])
	a = nil
	if cost := shown - min(before, shown); cost > 3*size {
		t.Errorf("a %d MiB answer costs %.1f MiB while shown (%.1f×), want at most 3×", size>>20, float64(cost)/(1<<20), float64(cost)/float64(size))
	} else {
		t.Logf("a %d MiB answer costs %.1f MiB while shown (%.1f×)", size>>20, float64(cost)/(1<<20), float64(cost)/float64(size))
	}
	showAnswer(m, []byte(`{"ok":true}`))
	after := heapNow()
	if wAns.Value() != nil || wDoc.Value() != nil || wRaw.Value() != nil {
		t.Errorf("the replaced answer is still held: answer %v, document %v, bytes %v", wAns.Value() != nil, wDoc.Value() != nil, wRaw.Value() != nil)
	}
	t.Logf("heap: %.1f MiB before, %.1f shown, %.1f after replacing it", float64(before)/(1<<20), float64(shown)/(1<<20), float64(after)/(1<<20))
}

// TestDocKeepsEveryLine: a document kept without its indentation gives
// back every line as pretty-printed, and matches every bracket as a stack
// over the whole text does, for answers of every shape (and a text not
// indented by depth, kept as it is).
func TestDocKeepsEveryLine(t *testing.T) {
	texts := map[string]string{
		"generated":    string(mustFormat(t, genAnswer(200<<10))),
		"nested":       string(mustFormat(t, []byte(`[[[[[]]]],{"a":{"b":{"c":[1,{"d":"}{]["}]}}},[],{},"x"]`))),
		"scalar":       string(mustFormat(t, []byte(`"just a string"`))),
		"not by depth": "{\n    \"a\": [\n 1,\n      2\n  ]\n}",
	}
	for name, text := range texts {
		d := newDoc(text, true)
		want := strings.Split(text, "\n")
		if d.len() != len(want) {
			t.Fatalf("%s: %d lines, want %d", name, d.len(), len(want))
		}
		var stack []int
		for i, l := range want {
			if got := d.line(i); got != l {
				t.Fatalf("%s: line %d is %q, want %q", name, i, got, l)
			}
			body := strings.TrimLeft(l, " ")
			if isCloser(body) && len(stack) > 0 {
				o := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if c := d.closeOf(o); c != i {
					t.Fatalf("%s: line %d closes at %d, want %d", name, o, c, i)
				}
				if got := d.openOf(i, 1<<30); got != o {
					t.Fatalf("%s: line %d opens at %d, want %d", name, i, got, o)
				}
			}
			if isOpener(body) {
				stack = append(stack, i)
			}
		}
		if got := d.String(); got != text {
			k := 0
			for k < len(got) && k < len(text) && got[k] == text[k] {
				k++
			}
			t.Fatalf("%s: the whole text differs at %d of %d/%d: %q vs %q", name, k, len(got), len(text), got[max(k-20, 0):min(k+20, len(got))], text[max(k-20, 0):min(k+20, len(text))])
		}
	}
}

func mustFormat(t *testing.T, data []byte) []byte {
	t.Helper()
	out, err := render.Format(data, render.Options{Indent: render.DefaultIndent})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.TrimRight(string(out), "\n"))
}

// BenchmarkLargeAnswerHeld reports what a 10 MiB answer holds while shown
// (the live heap after a collection, over the heap before it came, per
// byte of the answer: "x-size"), and what stays once a small answer
// replaces it ("MiB-left").
func BenchmarkLargeAnswerHeld(b *testing.B) {
	m := benchModel(b, 120, 35)
	m.setFocus(pResponse)
	data := genAnswer(10 << 20)
	var cost, left float64
	for i := 0; i < b.N; i++ {
		before := heapNow()
		a := showAnswer(m, append([]byte(nil), data...))
		shown := heapNow()
		cost = float64(shown-min(before, shown)) / float64(a.size)
		showAnswer(m, []byte(`{"ok":true}`))
		left = float64(heapNow()-min(before, heapNow())) / (1 << 20)
	}
	b.ReportMetric(cost, "x-size")
	b.ReportMetric(left, "MiB-left")
}

// TestMemoryLimitFollowsLiveHeap: the TUI's soft memory limit is its
// floor while little is held, and never below what GOGC=100 would let the
// heap reach (so a large answer does not have the collector run without
// end); a user's GOMEMLIMIT stands, and the limit is put back at the end.
func TestMemoryLimitFollowsLiveHeap(t *testing.T) {
	if got := memoryLimitFor(10 << 20); got != memoryFloor {
		t.Errorf("10 MiB live: limit %d MiB, want the floor", got>>20)
	}
	if got := memoryLimitFor(100 << 20); got < 200<<20 {
		t.Errorf("100 MiB live: limit %d MiB, want at least twice the live heap", got>>20)
	}
	before := debug.SetMemoryLimit(-1)
	stop := keepMemory(context.Background(), func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set the limit moved to %d", got)
	}
	stop()
	stop = keepMemory(context.Background(), func(string) string { return "" })
	runtime.GC()
	if got := debug.SetMemoryLimit(-1); got < memoryFloor || got == before {
		t.Errorf("the TUI's limit is %d, want at least the floor", got)
	}
	stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("the limit was not put back: %d, was %d", got, before)
	}
}

// TestGCPercentKept: the TUI runs its collector at GOGC gcPercent (the
// heap's headroom was most of a flood's resident memory over its live
// data), puts the old value back at the end, and leaves a user's GOGC
// alone.
func TestGCPercentKept(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := keepMemory(context.Background(), func(string) string { return "" })
	if got := debug.SetGCPercent(-1); got != gcPercent {
		t.Errorf("GOGC in the TUI: %d, want %d", got, gcPercent)
	}
	debug.SetGCPercent(gcPercent)
	stop()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC not put back: %d, want 100", got)
	}
	stop = keepMemory(context.Background(), func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	})
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the TUI changed it to %d", got)
	}
	stop()
}
