package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/ipc"
)

// finish runs cmd where the program would (off the key path) and hands
// what it returns to the model, with what that returns in turn.
func finish(m *model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			finish(m, c)
		}
	default:
		finish(m, m.update(msg))
	}
}

// BenchmarkFoldKey measures the key handler (Update) of a fold (h on the
// line that opens the answer's one big block, which ends at its end) and
// of fold-all (Z) on a 10 MiB answer: only the key, not the work it
// hands to a command nor applying that work's result. Each iteration
// checks the fold was made, and undoes it outside the timer.
func BenchmarkFoldKey(b *testing.B) {
	data := genAnswer(10 << 20)
	m := benchModel(b, 120, 35)
	a := answerOf(0, named("big"), ipc.Request{Method: "big.get"}, time.Now(), &ipc.Response{Result: data}, nil)
	d := prettyDoc(a.result)
	m.update(callDoneMsg{ans: a, doc: d})
	m.setFocus(pResponse)
	_ = m.render()
	keys := press("j", "h", "l", "Z")
	down, fold, unfold, all := keys[0], keys[1], keys[2], keys[3]
	m.update(down) // line 1: "items": [ … ] (all but the answer's last line)
	r := m.resp()
	if !d.opens(r.cur) || d.closeOf(r.cur) != d.len()-2 {
		b.Fatalf("line %d: %q is not the big block", r.cur, d.line(r.cur))
	}
	b.Run("fold", func(b *testing.B) {
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			b.StartTimer()
			cmd := m.update(fold)
			b.StopTimer()
			finish(m, cmd)
			if _, ok := r.folds[d].closeOf(1); !ok {
				b.Fatal("not folded")
			}
			finish(m, m.update(unfold))
			if _, ok := r.folds[d].closeOf(1); ok {
				b.Fatal("not unfolded")
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		b.StopTimer()
		for i := 0; i < b.N; i++ {
			b.StartTimer()
			cmd := m.update(all)
			b.StopTimer()
			finish(m, cmd)
			if _, ok := r.folds[d].closeOf(1); !ok {
				b.Fatal("fold-all did not fold the block")
			}
			finish(m, m.update(all))
			if len(r.folds[d].byOpen) != 0 {
				b.Fatal("fold-all did not unfold")
			}
		}
	})
	// Applying what the command worked out (Update, on its message).
	for _, c := range []struct {
		name     string
		key, off tea.Msg
	}{{"fold-apply", fold, unfold}, {"all-apply", all, all}} {
		b.Run(c.name, func(b *testing.B) {
			b.StopTimer()
			m.update(press("g")[0]) // fold-all left the cursor on line 0
			m.update(down)
			for i := 0; i < b.N; i++ {
				cmd := m.update(c.key)
				if cmd == nil {
					b.Skip("the key worked the fold out itself: nothing to apply")
				}
				msg := cmd()
				b.StartTimer()
				m.update(msg)
				b.StopTimer()
				if _, ok := r.folds[d].closeOf(1); !ok {
					b.Fatal("not folded")
				}
				finish(m, m.update(c.off))
			}
		})
	}
}

// foldNow runs a fold's command, if any, and applies what it worked out.
func foldNow(r *responseView, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	if msg, ok := cmd().(foldDoneMsg); ok {
		r.applyFold(msg)
	}
}

// TestFoldInCommand: a fold key only asks (the document is walked in the
// command it returns, and the pane shows the old view meanwhile); the
// fold worked out is applied when it comes back, unless the folds
// changed since (a newer fold, a new answer, fold-all asked again), when
// it is dropped. Before, the key handler walked the document itself.
func TestFoldInCommand(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	d := prettyDoc([]byte(`{"a":{"b":[1,2,3]},"c":[4,5],"e":true}`))
	show := func() {
		a := &answer{seq: m.pc.nextSeq(), target: named("t"), req: ipc.Request{Method: "m"}, outcome: "ok"}
		m.update(callDoneMsg{ans: a, doc: d})
	}
	show()
	r := m.resp()
	folded := func(o int) bool { _, ok := r.folds[d].closeOf(o); return ok }
	ask := func(k string) foldDoneMsg {
		t.Helper()
		cmd := m.update(press(k)[0])
		if cmd == nil {
			t.Fatalf("%s: no command: the fold was worked out in the key handler", k)
		}
		msg, ok := cmd().(foldDoneMsg)
		if !ok {
			t.Fatalf("%s: the command did not work out a fold", k)
		}
		return msg
	}
	keyMsgs(t, m, "j") // line 1: "a": {
	before := m.render()

	// Applied: the key leaves the view as it was; the message folds.
	msg := ask("h")
	if folded(1) || m.render() != before {
		t.Fatal("the key changed the view before the fold came back")
	}
	keyMsgs(t, m, "j", "j") // keys still move meanwhile (into the block)
	m.update(msg)
	if !folded(1) || r.cur != 1 {
		t.Fatalf("the fold was not applied (folded %v, cursor %d)", folded(1), r.cur)
	}
	keyMsgs(t, m, "l")
	if folded(1) {
		t.Fatal("l on a folded opener did not unfold it")
	}

	// Stale: a newer fold (fold-all) was asked before the first came back.
	first := ask("h")
	all := ask("Z")
	m.update(first)
	if folded(1) {
		t.Fatal("a fold asked before a newer fold-all was applied")
	}
	m.update(all)
	if !folded(1) || !folded(d.closeOf(1)+1) {
		t.Fatalf("fold-all not applied: %v", r.folds[d].byOpen)
	}
	keyMsgs(t, m, "Z") // unfolds all, at once
	if len(r.folds[d].byOpen) != 0 {
		t.Fatal("Z did not unfold all")
	}

	// Stale: a new answer (the same document) came meanwhile.
	keyMsgs(t, m, "j")
	msg = ask("h")
	show()
	m.update(msg)
	if folded(1) {
		t.Fatal("a fold asked on the answer before was applied to the new one")
	}

	// Another document shown meanwhile (the envelope): dropped, and the
	// pane no longer says it is folding.
	msg = ask("h")
	keyMsgs(t, m, "r")
	m.update(msg)
	if f := r.folds[d]; r.folding || (f != nil && len(f.byOpen) != 0) {
		t.Fatalf("a fold of the document no longer shown: folding %v, folds %v", r.folding, f)
	}
	keyMsgs(t, m, "r")

	// Z again before fold-all came back: nothing is folded.
	all = ask("Z")
	if cmd := m.update(press("Z")[0]); cmd != nil {
		t.Fatal("a second Z asked for fold-all again")
	}
	m.update(all)
	if len(r.folds[d].byOpen) != 0 {
		t.Fatal("a fold-all cancelled by Z was applied")
	}
}

// TestFoldingNote: while a large document's fold is worked out, the title
// says so; a small one's does not (it is back before a frame).
func TestFoldingNote(t *testing.T) {
	for _, n := range []int{10, foldNoteAbove} {
		m, _ := testModel(t, goldenConfig("dark"))
		m.setFocus(pResponse)
		d := itemsDoc(n)
		m.update(callDoneMsg{ans: &answer{seq: m.pc.nextSeq(), target: named("t"), req: ipc.Request{Method: "m"}, outcome: "ok"}, doc: d})
		cmd := m.update(press("Z")[0])
		if got, want := strings.Contains(m.render(), "folding…"), n >= foldNoteAbove; got != want {
			t.Errorf("%d lines: folding note shown %v, want %v", n, got, want)
		}
		m.update(cmd())
		if strings.Contains(m.render(), "folding…") {
			t.Errorf("%d lines: the note stays after the fold came", n)
		}
	}
}
