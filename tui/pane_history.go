package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func historySpec() paneSpec {
	return paneSpec{action: "history", tab: "history", focus: b([]string{"H", "7"}, "H", "history"),
		make: func(id paneID, pc *programContext) pane { return &historyPane{paneBase: paneBase{id: id, pc: pc}} }}
}

// historyPane lists past calls: load one in the composer, replay it and
// see what changed, save it under a name, copy it as a command.
type historyPane struct {
	paneBase
	entries  []history.Entry
	sel, off int
	search   field
	loaded   bool
	err      string
	// name is the name the selected call is saved under, while typed.
	name field
	// replaying is the number (programContext.seq) of the replay in
	// flight, 0 when none.
	replaying int
	// reload numbers the searches asked for after answers (the last one
	// asked runs).
	reload int
}

// historyReloadMsg asks for the search after an answer (number n).
type historyReloadMsg struct{ n int }

// replayFailedMsg says a replay could not be made.
type replayFailedMsg struct {
	seq int
	err error
}

// historyMsg is what a history search found.
type historyMsg struct {
	entries []history.Entry
	err     error
}

// Typing reports whether the search or the name has the keyboard.
func (p *historyPane) Typing() bool { return p.search.active || p.name.active }

// KeyMap is the status bar's keys.
func (p *historyPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Select, k.Replay, k.Save, k.Export, k.AddToBook, k.Filter, k.Quit}
}

// Update loads the history when the pane is focused (and after each call
// once it has been), and handles the pane's keys, clicks and wheel; then
// fits the scroll to the calls (View changes nothing).
func (p *historyPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

// SetSize records the pane's size and fits the scroll to it.
func (p *historyPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit keeps the cursor's call among the rows the list has: the pane's
// less the fields and the error above it.
func (p *historyPane) fit() {
	if _, h := p.inner(); h > 0 {
		p.off = scrollInto(p.off, p.sel, h-p.headRows(), len(p.entries))
	}
}

// headRows is how many rows are above the calls: the search field, the
// name typed, the error.
func (p *historyPane) headRows() int {
	n := 0
	if p.search.active || !p.search.Empty() {
		n++
	}
	if p.name.active {
		n++
	}
	if p.err != "" {
		n++
	}
	return n
}

func (p *historyPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case focusedMsg:
		return p.load(p.search.String())
	case historyMsg:
		p.loaded = true
		if msg.err != nil {
			p.err = msg.err.Error()
			break
		}
		p.err = ""
		p.keep(msg.entries)
	case replayFailedMsg:
		if msg.seq == p.replaying {
			p.replaying = 0
		}
		p.pc.setErr("replay: " + render.Sanitize(msg.err.Error()))
	case callDoneMsg:
		if msg.ans != nil && msg.ans.seq == p.replaying {
			p.replaying = 0
		}
		// Shown, the list takes the call in once it is recorded (off the
		// UI's path): one search for a burst of answers. Not shown, it
		// is searched again when focused (focusedMsg), not after every
		// answer.
		if p.focused() || p.loaded && p.pc.visible != nil && p.pc.visible(p.id) {
			p.reload++
			n := p.reload
			return tea.Tick(100*time.Millisecond, func(time.Time) tea.Msg { return historyReloadMsg{n: n} })
		}
	case historyReloadMsg:
		if msg.n == p.reload {
			return p.load(p.search.String())
		}
	case tea.KeyPressMsg, tea.PasteMsg:
		switch {
		case p.name.active:
			return p.typeName(msg)
		case p.search.active:
			if p.search.Update(msg, p.keys(), false) == editDone {
				return p.load(p.search.String())
			}
			return nil
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			return p.onKey(kp)
		}
	case clickMsg:
		// The rows above the list (search, name, error) are no calls.
		if row := msg.y - p.headRows(); row >= 0 && p.off+row < len(p.entries) {
			p.sel = p.off + row
		}
	case wheelMsg:
		p.sel = min(max(p.sel+msg.delta, 0), len(p.entries)-1)
	}
	return nil
}

func (p *historyPane) typeName(msg tea.Msg) tea.Cmd {
	if p.name.Update(msg, p.keys(), false) == editDone {
		if e := p.selected(); e != nil && p.pc.hist != nil {
			id, name, hs, ctx := e.ID, p.name.String(), p.pc.hist, p.pc.ctx
			return p.pc.safe(func() tea.Msg {
				if err := hs.Save(ctx, id, name); err != nil {
					return statusMsg{text: "save: " + err.Error(), err: true}
				}
				return statusMsg{text: fmt.Sprintf("saved call %d as %s: primalscope replay %s", id, name, name)}
			})
		}
	}
	return nil
}

func (p *historyPane) onKey(kp tea.KeyPressMsg) tea.Cmd {
	k := p.keys()
	if d, ok := moveBy(kp, k, len(p.entries)); ok {
		p.sel = min(max(p.sel+d, 0), len(p.entries)-1)
		return nil
	}
	switch {
	case key.Matches(kp, k.Filter):
		p.search.active = true
	case key.Matches(kp, k.Refresh):
		return p.load(p.search.String())
	case key.Matches(kp, k.Save):
		if p.selected() != nil {
			p.name.active = true
			p.name.Set("")
		}
	case key.Matches(kp, k.Export), key.Matches(kp, k.CopyCmd):
		if e := p.selected(); e != nil {
			return p.pc.copyCommand(history.CommandFor(*e))
		}
	case key.Matches(kp, k.AddToBook):
		e := p.selected()
		if e == nil {
			return nil
		}
		books := p.pc.cfg.Books
		if books == nil || p.pc.hist == nil {
			p.pc.setErr("no runbook to add to here (primalscope history export ID --as runbook writes one)")
			return nil
		}
		id, hs, ctx := e.ID, p.pc.hist, p.pc.ctx
		return p.pc.safe(func() tea.Msg {
			full, err := hs.Get(ctx, id) // with its result, for equals
			if err != nil {
				return statusMsg{text: "add to book: " + err.Error(), err: true}
			}
			path, step, notes, err := books.Add(ctx, full)
			if err != nil {
				return statusMsg{text: "add to book: " + err.Error(), err: true}
			}
			text := fmt.Sprintf("call %d added to %s as step %s: primalscope run %s", id, path, step, path)
			if len(notes) > 0 {
				text += " (" + strings.Join(notes, "; ") + ")"
			}
			return statusMsg{text: text}
		})
	case key.Matches(kp, k.Select):
		e := p.selected()
		if e == nil {
			return nil
		}
		var cmd tea.Cmd
		if t := p.pc.targetFor(e.Target, e.Endpoint); t != nil {
			cmd = p.pc.do(selectMsg{key: t.ID})
		}
		session, pool := e.Session, e.Pool
		return tea.Batch(cmd, p.pc.do(composeMsg{method: e.Method, params: string(e.Params), session: &session, pool: &pool}))
	case key.Matches(kp, k.Replay):
		e := p.selected()
		if e == nil || p.pc.hist == nil {
			return nil
		}
		if p.replaying != 0 {
			// A second key press is not a second call: one replay at a time.
			p.pc.setErr("a replay is in flight: wait for its answer (or cancel it)")
			return nil
		}
		if e.ParamsTruncated {
			p.pc.setErr("this call's params were stored cut: it cannot be replayed")
			return nil
		}
		if history.HasRedacted(e.Params) {
			p.pc.setErr(fmt.Sprintf(`call %d had secret params, stored as "[redacted]": it cannot be replayed as it was (⏎ puts it in the composer to fill in)`, e.ID))
			return nil
		}
		t := p.pc.targetFor(e.Target, e.Endpoint)
		if t == nil {
			p.pc.setErr("replay: target " + render.Sanitize(e.Target) + " is not live")
			return nil
		}
		if msg := replayRefusal(*e, t.Target, p.pc.client != nil && p.pc.client.secured(t.Target)); msg != "" {
			p.pc.setErr(msg)
			return nil
		}
		return p.replay(*e, t.Target)
	}
	return nil
}

// keep shows a new list of entries with the cursor on the entry it was
// on (a call just recorded comes in above it), else at the same place.
func (p *historyPane) keep(es []history.Entry) {
	if e := p.selected(); e != nil {
		for i := range es {
			if es[i].ID == e.ID {
				p.entries, p.sel = es, i
				return
			}
		}
	}
	p.entries = es
	p.sel = max(min(p.sel, len(es)-1), 0)
}

// unsaved says a replay is in flight (quitGuard).
func (p *historyPane) unsaved() string {
	if p.replaying != 0 {
		return "a replay is in flight"
	}
	return ""
}

func (p *historyPane) selected() *history.Entry {
	if p.sel >= 0 && p.sel < len(p.entries) {
		return &p.entries[p.sel]
	}
	return nil
}

// load searches the history for q.
func (p *historyPane) load(q string) tea.Cmd {
	hs, ctx := p.pc.hist, p.pc.ctx
	if hs == nil {
		p.loaded = true
		p.err = "history is off"
		return nil
	}
	return p.pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		es, err := hs.Search(ctx, q, 500)
		return historyMsg{entries: es, err: err}
	})
}

// replay sends a stored call again and shows the diff against its answer.
func (p *historyPane) replay(e history.Entry, t *discovery.Target) tea.Cmd {
	cl, hs, timeout, ctx := p.pc.client, p.pc.hist, p.pc.callTimeout(), p.pc.ctx
	p.pc.setInfo(fmt.Sprintf("replaying call %d…", e.ID))
	seq := p.pc.nextSeq()
	p.replaying = seq
	return p.pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		old, err := hs.Get(ctx, e.ID)
		if err != nil {
			return replayFailedMsg{seq: seq, err: err}
		}
		req := ipc.Request{Method: e.Method, Params: e.Params, SessionID: e.Session, Pool: e.Pool}
		start := time.Now()
		resp, err := cl.send(ctx, t, req)
		hs.Record(cl.record(t, req, start, resp, err))
		a := answerOf(seq, t, req, start, resp, err)
		a.title = fmt.Sprintf("replay of %d · %s · %s · %s", e.ID, e.Method, a.outcome, human.Duration(a.elapsed))
		oldDoc := old.Result
		if old.Error != nil {
			oldDoc, _ = json.Marshal(old.Error)
		}
		var lines []string
		if old.Truncated {
			lines = append(lines, "(the stored answer was cut; the diff covers what was kept)")
		}
		dl, derr := diffLines(oldDoc, a.result)
		if derr != nil {
			lines = append(lines, "cannot diff: "+render.Sanitize(derr.Error()))
		}
		lines = append(lines, dl...)
		return callDoneMsg{ans: a, doc: textDoc(lines)}
	})
}

// View draws the visible calls.
func (p *historyPane) View() string {
	st, k := p.pc.st, p.keys()
	title := "History"
	if !p.search.Empty() {
		title += " · " + render.Sanitize(p.search.String())
	}
	right := st.Dim.Render(joinHints(" · ", hint(k.Select, "load"), hint(k.Replay, "replay"), hint(k.Save, "save"), hint(k.Export, "export")))
	w, h := p.inner()
	return p.box(title, right, p.rows(st, w, h, p.pc.now()))
}

func (p *historyPane) rows(st *styles, w, h int, now time.Time) []string {
	var out []string
	if p.search.active || !p.search.Empty() {
		out = append(out, p.search.view(st, "/ ", w))
	}
	if p.name.active {
		out = append(out, p.name.view(st, "save as ", w))
	}
	if p.err != "" {
		out = append(out, st.Err.Render(render.Sanitize(p.err)))
	}
	if len(p.entries) == 0 {
		msg := " No calls yet."
		if !p.loaded {
			msg = " loading…"
		}
		return append(out, st.Dim.Render(msg))
	}
	avail := h - len(out)
	// fit scrolled the list (off); clamped here for drawing only.
	off := scrollInto(p.off, p.sel, avail, len(p.entries))
	for i := off; i < len(p.entries) && i < off+avail; i++ {
		e := &p.entries[i]
		cur := " "
		if i == p.sel {
			cur = st.Accent.Render("›")
		}
		oc := st.OK.Render("ok ")
		if e.Outcome != history.OutcomeOK {
			oc = st.Err.Render(fmt.Sprintf("%-3.3s", string(e.Outcome)))
		}
		when := e.Time.Format("15:04:05")
		if now.Sub(e.Time) > 24*time.Hour {
			when = e.Time.Format("01-02 15:04")
		}
		line := cur + st.Dim.Render(fmt.Sprintf("%4d ", e.ID)) + st.Dim.Render(when) + " " + oc + " " +
			st.Accent.Render(render.Sanitize(e.Target)) + " " + render.Sanitize(e.Method) + " " +
			st.Dim.Render(render.Sanitize(string(e.Params)))
		out = append(out, line)
	}
	return out
}

// Init loads the history once at start, so that calls made before the pane
// is opened reload it.
func (p *historyPane) Init() tea.Cmd { return p.load("") }

// replayRefusal says why a call recorded over BTSP is not replayed to t:
// it went over an encrypted session, and t (found again by its name, at
// another endpoint perhaps) would take it in cleartext (secured: the one
// dialer sends t nothing in cleartext). The CLI's replay
// holds the same rule (a BTSP call is replayed only over BTSP).
func replayRefusal(e history.Entry, t *discovery.Target, secured bool) string {
	if !strings.Contains(e.Transport, "+btsp") || secured {
		return ""
	}
	return fmt.Sprintf("call %d was made over BTSP; %s (%s) does not ask for BTSP now: not replayed in cleartext",
		e.ID, render.Sanitize(t.Name), render.Sanitize(t.Address))
}
