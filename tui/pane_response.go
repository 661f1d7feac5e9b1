package tui

import (
	"context"
	"runtime/debug"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/ecoPrimals/primalscope/history"
)

func responseSpec() paneSpec {
	return paneSpec{action: "response", tab: "resp", focus: b([]string{"4"}, "4", "response"),
		make: func(id paneID, pc *programContext) pane { return newResponsePane(id, pc) }}
}

// responsePane shows the last answer (a call, a replay's diff, an inspected
// event or frame): pretty or as the envelope, folded, searched, filtered
// with jq, copied.
type responsePane struct {
	paneBase
	responseView
}

// Messages of the response pane's commands.
type (
	jqTickMsg struct{ seq int }
	jqDoneMsg struct {
		seq     int
		doc     *doc
		err     error
		input   any
		inputOf *answer
	}
	searchDoneMsg struct {
		d       *doc
		q       string
		matches []int
	}
)

func newResponsePane(id paneID, pc *programContext) *responsePane {
	r := &responsePane{paneBase: paneBase{id: id, pc: pc}}
	// The keys are remapped before the panes are made, never after.
	k := pc.keys
	r.empty = "Pick a target (" + helpKey(k.focusKey(pTargets)) + "), a method (" + helpKey(k.focusKey(pCaps)) +
		"), edit params (" + helpKey(k.focusKey(pComposer)) + ") and press " + helpKey(k.Send) + "."
	r.more = messageHint(k)
	return r
}

// Typing reports whether the jq filter or the search has the keyboard.
func (r *responsePane) Typing() bool { return r.jq.active || r.search.active }

// KeyMap is the status bar's keys.
func (r *responsePane) KeyMap() help.KeyMap {
	k := r.keys()
	return hints{k.Help, k.Jq, k.Search, k.RawToggle, k.Fold, k.Copy, k.CopyCmd, k.Quit}
}

// View draws the answer: the visible lines only, highlighted once each
// (by fit). It changes nothing: the scroll is fitted to the pane, and
// the lines that show highlighted, by Update and SetSize.
func (r *responsePane) View() string {
	title, right := r.titles(r.pc.st)
	w, h := r.inner()
	return r.box(title, right, r.rows(r.pc.st, w, h, r.focused()))
}

// SetSize records the pane's size and fits the view to it.
func (r *responsePane) SetSize(w, h int) {
	r.paneBase.SetSize(w, h)
	r.fit()
}

// fit fits the view to the pane as it is now (its size, the fields and
// the error shown above the document).
func (r *responsePane) fit() {
	if w, h := r.inner(); w > 0 && h > 0 { // laid out
		r.responseView.fit(r.pc.st, w, h)
	}
}

// Update shows answers as they come, runs the jq filter and the search,
// and handles the pane's keys and wheel; then fits the view to what the
// pane shows.
func (r *responsePane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := r.update(msg)
	r.fit()
	return r, cmd
}

func (r *responsePane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case callDoneMsg:
		return r.show(msg)
	case copyReadyMsg:
		if msg.doc == r.jqDoc { // still the filter shown
			return r.pc.copyText(msg.what, msg.text)
		}
		return nil
	case fullDocMsg:
		if msg.ans == r.ans {
			r.pretty, r.partial = msg.doc, false
			if r.atEnd && r.current() == r.pretty {
				r.end() // G on the preview meant the answer's end
			}
			r.follow()
			// Formatting took several times the answer's size for a moment.
			return releaseMemory
		}
	case foldDoneMsg:
		r.applyFold(msg)
	case envDoneMsg:
		if msg.ans == r.ans {
			r.env = msg.doc
			r.pending = false
		}
	case jqTickMsg:
		if msg.seq == r.jqSeq {
			return r.runJQ()
		}
	case jqDoneMsg:
		if msg.seq != r.jqSeq {
			break
		}
		r.jqStale() // done: its context goes, it no longer runs
		if msg.input != nil {
			r.jqInput, r.jqInputOf = msg.input, msg.inputOf
		}
		if msg.err != nil {
			r.jqErr = msg.err.Error()
			break
		}
		r.jqErr = ""
		r.jqDoc = msg.doc
		r.resetView()
	case searchDoneMsg:
		r.searchStale() // done: its context goes
		if msg.d != r.current() {
			break // lines of a document no longer shown
		}
		r.matchDoc, r.matches, r.mi, r.matchQ = msg.d, msg.matches, 0, msg.q
		if len(msg.matches) == 0 {
			r.pc.setErr("no match")
			break
		}
		for i, l := range msg.matches {
			if l >= r.cur {
				r.mi = i
				break
			}
		}
		r.jump(msg.matches[r.mi])
	case tea.KeyPressMsg, tea.PasteMsg:
		switch {
		case r.search.active:
			if r.search.Update(msg, r.keys(), false) == editDone {
				return r.runSearch()
			}
			return nil
		case r.jq.active:
			return r.typeJQ(msg)
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return r.onKey(kp)
		}
	case wheelMsg:
		r.ScrollBy(msg.delta)
	}
	return nil
}

// releaseMemory gives the system back the memory a large answer took
// (formatting it, or holding it until replaced): the Go runtime keeps
// freed memory for a while otherwise, and the process stays as large as
// at its peak. It runs as a command, off the UI's path.
func releaseMemory() tea.Msg {
	debug.FreeOSMemory()
	return nil
}

// show puts a finished call (or anything opened here) on screen.
func (r *responsePane) show(msg callDoneMsg) tea.Cmd {
	a := msg.ans
	var cmds []tea.Cmd
	if old := r.ans; old != nil && old.size > previewAbove {
		// The large answer this one replaces is let go: so is its memory.
		cmds = append(cmds, releaseMemory)
	}
	r.formatsStale() // the answer shown before is formatted no further
	r.ans, r.pretty, r.env = a, msg.doc, nil
	if a.noResult {
		r.pretty = textDoc(nil)
	}
	r.rawMode, r.pending = false, false
	r.folds, r.hl, r.hlN = nil, nil, 0
	r.foldChanged()
	r.jqStale() // a filter of the answer before: stale
	r.searchStale()
	r.jqDoc, r.jqErr, r.jqInput, r.jqInputOf = nil, "", nil, nil
	r.resetView()
	r.partial = msg.partial
	if a.outcome != "ok" && a.outcome != "error" {
		r.pc.setErr(a.outcome + ": " + a.errText)
	}
	// The focus stays where the user was: keys typed next must not
	// become the viewer's commands (the response shows beside the
	// composer at every size).
	if msg.partial {
		stopped := r.formatter()
		cmds = append(cmds, r.pc.safe(func() tea.Msg {
			if d := prettyDocUntil(a.result, stopped); d != nil {
				return fullDocMsg{ans: a, doc: d}
			}
			return nil // another answer replaced it
		}))
	}
	if !r.jq.Empty() {
		r.jqSeq++
		cmds = append(cmds, r.runJQ())
	}
	return tea.Batch(cmds...)
}

func (r *responsePane) typeJQ(msg tea.Msg) tea.Cmd {
	switch r.jq.Update(msg, r.keys(), true) {
	case editBack:
		r.jqStale()
		r.jqDoc, r.jqErr = nil, ""
		r.resetView()
	case editChanged:
		r.jqStale() // the filter run is no longer the one typed
		r.jqSeq++
		seq := r.jqSeq
		if r.jq.Empty() {
			r.jqDoc, r.jqErr = nil, ""
			r.resetView()
			return nil
		}
		return tea.Tick(120*time.Millisecond, func(time.Time) tea.Msg { return jqTickMsg{seq: seq} })
	}
	return nil
}

func (r *responsePane) runJQ() tea.Cmd {
	if r.ans == nil || r.jq.Empty() {
		return nil
	}
	seq, filter, a := r.jqSeq, r.jq.String(), r.ans
	input := r.jqInput
	if r.jqInputOf != a {
		input = nil
	}
	r.jqStale()
	ctx, cancel := context.WithCancel(r.pc.ctx)
	r.jqStop, r.jqRunning = cancel, true
	return r.pc.safe(func() tea.Msg {
		var newInput any
		if input == nil {
			v, err := parseForJQ(a.result)
			if err != nil {
				return jqDoneMsg{seq: seq, err: err}
			}
			input, newInput = v, v
		}
		d, err := jqRun(ctx, filter, input)
		if ctx.Err() != nil {
			return nil // a newer filter or answer: stale, stopped
		}
		return jqDoneMsg{seq: seq, doc: d, err: err, input: newInput, inputOf: a}
	})
}

func (r *responsePane) runSearch() tea.Cmd {
	d := r.current()
	q := r.search.String()
	r.searchStale()
	if d == nil || q == "" {
		r.matches, r.matchDoc = nil, nil
		return nil
	}
	ctx, cancel := context.WithCancel(r.pc.ctx)
	r.searchStop = cancel
	return r.pc.safe(func() tea.Msg {
		ms := searchDoc(ctx, d, q)
		if ctx.Err() != nil {
			return nil // a newer search or answer: stale, stopped
		}
		return searchDoneMsg{d: d, q: q, matches: ms}
	})
}

func (r *responsePane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := r.keys()
	page := max(r.lastH-1, 1)
	switch {
	case key.Matches(kp, k.Up):
		r.move(-1)
	case key.Matches(kp, k.Down):
		r.move(1)
	case key.Matches(kp, k.PageUp):
		r.move(-page)
	case key.Matches(kp, k.PageDown):
		r.move(page)
	case key.Matches(kp, k.Top):
		r.home()
	case key.Matches(kp, k.Bottom):
		r.end()
	case key.Matches(kp, k.Fold):
		return r.pc.safe(r.toggleFold(true))
	case key.Matches(kp, k.Unfold), key.Matches(kp, k.Select):
		d := r.current()
		_, isFolded := r.folds[d].closeOf(r.cur)
		if d != nil && key.Matches(kp, k.Select) && isFolded {
			return r.pc.safe(r.toggleFold(false))
		} else if key.Matches(kp, k.Select) && d != nil && d.opens(r.cur) {
			return r.pc.safe(r.toggleFold(true))
		}
		return r.pc.safe(r.toggleFold(false))
	case key.Matches(kp, k.FoldAll):
		return r.pc.safe(r.foldAll())
	case key.Matches(kp, k.Left):
		r.ScrollX(-20)
	case key.Matches(kp, k.Right):
		r.ScrollX(20)
	case key.Matches(kp, k.Jq):
		if r.ans != nil {
			r.jq.active = true
		}
	case key.Matches(kp, k.Search):
		r.search.active = true
		r.search.Set("")
	case key.Matches(kp, k.NextMatch), key.Matches(kp, k.PrevMatch):
		if len(r.matches) == 0 || r.matchDoc != r.current() {
			return nil
		}
		if key.Matches(kp, k.NextMatch) {
			r.mi = (r.mi + 1) % len(r.matches)
		} else {
			r.mi = (r.mi - 1 + len(r.matches)) % len(r.matches)
		}
		r.jump(r.matches[r.mi])
	case key.Matches(kp, k.RawToggle):
		if r.ans == nil {
			return nil
		}
		r.rawMode = !r.rawMode
		r.cur, r.off = 0, 0
		if r.rawMode && r.env == nil {
			r.pending = true
			a := r.ans
			stopped := r.formatter()
			return r.pc.safe(func() tea.Msg {
				if d := prettyDocUntil(envelopeOf(a), stopped); d != nil {
					return envDoneMsg{ans: a, doc: d}
				}
				return nil // another answer replaced it
			})
		}
	case key.Matches(kp, k.Copy):
		if r.ans == nil {
			return nil
		}
		return r.pc.copyText("answer", string(r.ans.result))
	case key.Matches(kp, k.CopyPart):
		switch {
		case r.jqDoc != nil:
			// Writing the whole filtered document out is work (97 ms at
			// 10 MiB): in a command, and copied when it comes back.
			doc := r.jqDoc
			return r.pc.safe(func() tea.Msg { return copyReadyMsg{what: "filtered answer", doc: doc, text: doc.String()} })
		case r.ans != nil:
			return r.pc.copyText("answer", string(r.ans.result))
		}
	case key.Matches(kp, k.CopyCmd):
		if r.ans == nil {
			return nil
		}
		if r.ans.req.Method == "" {
			r.pc.setErr("this answer is not a call: nothing to copy as a command")
			return nil
		}
		a := r.ans
		e := recordFor(a.target, a.req, time.Time{}, nil, nil)
		if r.pc.client != nil {
			e = r.pc.client.record(a.target, a.req, time.Time{}, nil, nil)
		}
		return r.pc.copyCommand(history.CommandFor(e))
	}
	return nil
}

// copyReadyMsg is a filtered document written out for the clipboard.
type copyReadyMsg struct {
	what string
	doc  *doc
	text string
}
