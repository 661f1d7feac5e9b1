package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func composerSpec() paneSpec {
	return paneSpec{action: "composer", tab: "call", focus: b([]string{"3"}, "3", "composer"),
		make: func(id paneID, pc *programContext) pane { return newComposer(id, pc) }}
}

const (
	fMethod = iota
	fParams
	fSession
	fPool
)

// composer is the call being written: method, params, and for buses the
// session and pool. In reply mode it answers a server-initiated request.
type composer struct {
	paneBase
	// bookIdx is the runbook step the book-step key takes next.
	bookIdx int
	field   int
	method  lineEdit
	params  lineEdit
	session lineEdit
	pool    lineEdit

	// live JSON check of params
	paramsErr   string
	paramsErrAt int // rune index of the fault, -1 when none

	comps   []string // method completions
	compIdx int

	inflight    bool
	inflightAt  string // method in flight
	inflightSeq int    // its number (programContext.seq)
	cancel      context.CancelFunc

	reply *line // answering this server request when set
	// result is the answer to the server request, typed in reply mode in
	// its own field: the call being written stays as it was.
	result     lineEdit
	resultInit string

	// saved is the call as last loaded or sent, and edited says the user
	// changed a field since: together they tell unsent edits.
	saved  draft
	edited bool
	// on is the key of the target the composer last saw as current;
	// carried names the one the method was written for when the current
	// target changed under it (until the method is edited, loaded or sent).
	on      string
	carried string
}

// draft is what the composer sends.
type draft struct{ method, params, session, pool string }

func (c *composer) draft() draft {
	return draft{c.method.String(), c.params.String(), c.session.String(), c.pool.String()}
}

// loaded marks the composer's call as the one loaded or sent: nothing of
// the user's is left unsent.
func (c *composer) loaded() {
	c.saved, c.edited, c.carried = c.draft(), false, ""
}

// unsaved says what a quit would lose: a call in flight, an answer to a
// server request or edits not sent (quitGuard).
func (c *composer) unsaved() string {
	switch {
	case c.inflight:
		return "a call to " + render.Sanitize(c.inflightAt) + " is in flight"
	case c.reply != nil && c.result.String() != c.resultInit:
		return "the answer to " + render.Sanitize(c.reply.title) + " is not sent"
	case c.edited && c.draft() != c.saved:
		return "the composer holds edits not sent"
	}
	return ""
}

// paramsEdit is the params field, or in reply mode the result field.
func (c *composer) paramsEdit() *lineEdit {
	if c.reply != nil {
		return &c.result
	}
	return &c.params
}

// notOffered reports whether the method is missing from t's capability
// list (false when t has none: nothing is known).
func (c *composer) notOffered(t *target) bool {
	m := strings.TrimSpace(c.method.String())
	return m != "" && t != nil && t.caps() != nil && !c.methodKnown(m)
}

// setReply enters reply mode for r (nil leaves it), keeping the call.
func (c *composer) setReply(r *line, result string) {
	c.reply = r
	c.result.Set(result)
	c.resultInit = result
	c.field = fParams
	c.checkParams()
}

// composeMsg puts a call in the composer (or, with reply set, the answer
// to a server request) and focuses it. Nil session and pool keep theirs.
type composeMsg struct {
	method, params string
	session, pool  *string
	reply          *line
}

// Messages of the composer's commands.
type (
	prefillMsg struct {
		method string
		params json.RawMessage
	}
	editorReadyMsg struct {
		path string
		err  error
	}
	editorDoneMsg struct {
		path string
		err  error
	}
	editorTextMsg struct {
		text string
		err  error
	}
	// replyDoneMsg says how answering the server request id from the
	// target targetKey went.
	replyDoneMsg struct {
		targetKey string
		id        json.RawMessage
		err       error
	}
)

// maxLiveCheck is the largest params checked as they are typed; larger
// ones (pasted or from $EDITOR) are checked in the command that sends them.
const maxLiveCheck = 64 << 10

func newComposer(id paneID, pc *programContext) *composer {
	c := &composer{paneBase: paneBase{id: id, pc: pc}, paramsErrAt: -1}
	c.params.Set("{}")
	c.loaded()
	return c
}

// Typing is always true: the composer is all text fields.
func (c *composer) Typing() bool { return true }

// KeyMap is the status bar's keys.
func (c *composer) KeyMap() help.KeyMap {
	k := c.keys()
	return hints{k.Send, k.Editor, k.Complete, k.Cancel, k.Back, k.NextPane}
}

// Update handles typing, the composer's keys, what its commands report,
// and follows the current target (completions, a bus's pool).
func (c *composer) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg, tea.PasteMsg:
		return c, c.onKey(msg)
	case composeMsg:
		if msg.reply != nil {
			// An answer has its own field: the call being written stays.
			c.setReply(msg.reply, msg.params)
		} else {
			c.reply = nil
			c.method.Set(msg.method)
			c.params.Set(msg.params)
			if msg.session != nil {
				c.session.Set(*msg.session)
			}
			if msg.pool != nil {
				c.pool.Set(*msg.pool)
			}
			c.loaded()
			c.checkParams()
			c.field = fParams
		}
		cmd := c.pc.do(focusMsg{c.id})
		c.comps = nil
		return c, cmd
	case bookStepsMsg:
		return c, c.takeBookStep(msg)
	case focusedMsg:
		c.complete()
	case currentMsg:
		c.follow(msg.changed)
		c.complete()
	case callDoneMsg:
		if c.inflight && msg.ans.seq == c.inflightSeq {
			c.inflight, c.cancel = false, nil
		}
	case cancelMsg:
		if c.cancel != nil {
			c.cancel()
			c.cancel = nil
			c.pc.setInfo("cancelled")
		}
	case prefillMsg:
		// Only over what was loaded: never over the user's typing.
		if msg.method == c.method.String() && msg.params != nil && !c.edited {
			c.params.Set(string(msg.params))
			c.loaded()
			c.checkParams()
		}
	case editorReadyMsg:
		return c, c.runEditor(msg)
	case editorDoneMsg:
		return c, c.readEdited(msg)
	case editorTextMsg:
		if msg.err != nil {
			c.pc.setErr("editor: " + msg.err.Error())
			break
		}
		if c.paramsEdit().String() != msg.text && c.reply == nil {
			c.edited = true
		}
		c.paramsEdit().Set(msg.text)
		c.checkParams()
	case clickMsg:
		if msg.y <= 2 {
			c.field = []int{fMethod, fParams, fParams}[msg.y]
		}
	}
	return c, nil
}

func (c *composer) onKey(msg tea.Msg) tea.Cmd {
	k := c.keys()
	kp, _ := msg.(tea.KeyPressMsg)
	nfields := 2
	if t := c.pc.target(); t != nil && t.bus() && c.reply == nil {
		nfields = 4
	}
	switch {
	case key.Matches(kp, k.Back):
		if c.reply != nil {
			c.setReply(nil, "")
			c.pc.setInfo("not answered: back to the call")
			return nil
		}
		return c.pc.do(focusMsg{pCaps})
	case key.Matches(kp, k.Accept) && c.field == fMethod && len(c.comps) > 0 &&
		(!key.Matches(kp, k.Send) || c.method.String() != c.comps[c.compIdx] && !c.methodKnown(c.method.String())):
		// Take the highlighted completion (a key that also sends does
		// so only while the typed method is not one the target has).
		c.method.Set(c.comps[c.compIdx])
		c.edited, c.carried = true, ""
		c.comps = nil
		c.field = fParams
		return c.offerParams()
	case key.Matches(kp, k.NextPane):
		return c.pc.do(cycleMsg{1})
	case key.Matches(kp, k.PrevPane):
		return c.pc.do(cycleMsg{-1})
	case key.Matches(kp, k.PrevField):
		c.field = (c.field - 1 + nfields) % nfields
		return nil
	case key.Matches(kp, k.NextField):
		c.field = (c.field + 1) % nfields
		return nil
	case key.Matches(kp, k.Complete) && c.field == fMethod:
		if len(c.comps) > 0 {
			c.compIdx = (c.compIdx + 1) % len(c.comps)
		} else {
			c.complete()
		}
		return nil
	case key.Matches(kp, k.Cancel):
		_, cmd := c.Update(cancelMsg{})
		return cmd
	case key.Matches(kp, k.Editor):
		return c.openEditor()
	case key.Matches(kp, k.BookStep):
		return c.loadBookStep()
	case key.Matches(kp, k.Send):
		return c.send()
	}
	fe := c.fieldEdit()
	before := fe.String()
	if fe.Update(msg, k) {
		if fe.String() != before && fe != &c.result {
			c.edited = true
			if fe == &c.method {
				c.carried = ""
			}
		}
		switch c.field {
		case fParams:
			c.checkParams()
		case fMethod:
			c.complete()
		}
	}
	return nil
}

func (c *composer) fieldEdit() *lineEdit {
	switch c.field {
	case fParams:
		return c.paramsEdit()
	case fSession:
		return &c.session
	case fPool:
		return &c.pool
	}
	return &c.method
}

func (c *composer) methodKnown(name string) bool {
	t := c.pc.target()
	if t == nil || t.caps() == nil {
		return false
	}
	for _, mm := range t.caps().Methods {
		if mm == name {
			return true
		}
	}
	return false
}

// send starts the composed call (or the reply) in a command.
func (c *composer) send() tea.Cmd {
	pc := c.pc
	k := c.keys()
	if c.paramsErr != "" && c.paramsErrAt >= 0 {
		pc.setErr("params are not valid JSON: " + c.paramsErr)
		return nil
	}
	params := json.RawMessage(strings.TrimSpace(c.paramsEdit().String()))
	if len(params) == 0 {
		params = nil
	}
	if c.reply != nil {
		r := *c.reply
		c.setReply(nil, "") // the call being written is back as it was
		cmd := pc.do(focusMsg{pRequests})
		ctx := pc.ctx
		return tea.Batch(cmd, pc.safe(func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			res := params
			if res == nil {
				res = json.RawMessage("null")
			}
			err := fmt.Errorf("%w: the connection it came on is not known", errCannotAnswer)
			if r.reply != nil { // on the connection it came on, once
				err = r.reply(ctx, res, nil)
			}
			return replyDoneMsg{targetKey: r.key, id: r.id, err: err}
		}))
	}
	t := pc.target()
	if t == nil {
		pc.setErr("no target selected: pick one in Targets (" + helpKey(k.focusKey(pTargets)) + ")")
		return nil
	}
	method := strings.TrimSpace(c.method.String())
	if method == "" {
		pc.setErr("no method: type one or pick it in Capabilities (" + helpKey(k.focusKey(pCaps)) + ")")
		return nil
	}
	if c.inflight {
		pc.setErr("a call is in flight: " + helpKey(k.Cancel) + " cancels it")
		return nil
	}
	if c.carried != "" && c.notOffered(t) {
		// Written for another target: say so once, never send it as if
		// this one had it.
		pc.setErr(fmt.Sprintf("%s does not offer %s (it was written for %s): %s again sends it anyway, or pick one in Capabilities (%s)",
			render.Sanitize(t.Name), render.Sanitize(method), render.Sanitize(c.carried), helpKey(k.Send), helpKey(k.focusKey(pCaps))))
		c.carried = ""
		return nil
	}
	req := ipc.Request{Method: method, Params: params}
	if t.bus() { // the routing fields are a bus's: never sent to another kind of target
		req.SessionID, req.Pool = c.session.String(), c.pool.String()
	}
	c.loaded()
	ctx, cancel := context.WithTimeout(pc.ctx, pc.callTimeout())
	c.cancel = cancel
	seq := pc.nextSeq()
	c.inflight, c.inflightAt, c.inflightSeq = true, method, seq
	tgt := t.Target
	cl, hs := pc.client, pc.hist
	pc.setInfo("")
	return pc.safe(func() tea.Msg {
		defer cancel()
		start := time.Now()
		if len(req.Params) > maxLiveCheck && !json.Valid(req.Params) {
			return callDoneMsg{ans: &answer{seq: seq, target: tgt, req: req, outcome: "not sent", errText: "params are not valid JSON", noResult: true}, doc: textDoc(nil)}
		}
		resp, err := cl.send(ctx, tgt, req)
		if hs != nil {
			hs.Record(cl.record(tgt, req, start, resp, err))
		}
		return answerMsg(answerOf(seq, tgt, req, start, resp, err))
	})
}

// openEditor writes the params to a temporary file for $EDITOR.
func (c *composer) openEditor() tea.Cmd {
	text := c.paramsEdit().String()
	return c.pc.safe(func() tea.Msg {
		f, err := os.CreateTemp("", "primalscope-params-*.json")
		if err != nil {
			return editorReadyMsg{err: err}
		}
		defer f.Close()
		pretty, perr := render.Format([]byte(text), render.Options{Indent: 2})
		if perr != nil || strings.TrimSpace(text) == "" {
			pretty = []byte(text + "\n")
		}
		if _, err := f.Write(pretty); err != nil {
			return editorReadyMsg{err: err}
		}
		return editorReadyMsg{path: f.Name()}
	})
}

// runEditor hands the terminal to $VISUAL (or $EDITOR, or vi) on the file.
func (c *composer) runEditor(msg editorReadyMsg) tea.Cmd {
	if msg.err != nil {
		c.pc.setErr("editor: " + msg.err.Error())
		return nil
	}
	getenv := c.pc.cfg.Getenv
	ed := getenv("VISUAL")
	if ed == "" {
		ed = getenv("EDITOR")
	}
	if ed == "" {
		ed = "vi"
	}
	argv, err := ipc.SplitCommand(ed)
	if err != nil || len(argv) == 0 {
		c.pc.setErr("editor: cannot read $EDITOR")
		return nil
	}
	cmd := exec.Command(argv[0], append(argv[1:], msg.path)...)
	path := msg.path
	return tea.ExecProcess(cmd, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
}

// readEdited reads the edited params back (compacted when they are JSON).
func (c *composer) readEdited(msg editorDoneMsg) tea.Cmd {
	path, eerr := msg.path, msg.err
	return c.pc.safe(func() tea.Msg {
		defer os.Remove(path)
		if eerr != nil {
			return editorTextMsg{err: eerr}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return editorTextMsg{err: err}
		}
		var out bytes.Buffer
		if json.Compact(&out, b) == nil {
			return editorTextMsg{text: out.String()}
		}
		return editorTextMsg{text: strings.Join(strings.Fields(string(b)), " ")}
	})
}

// checkParams validates the params as JSON and finds the fault's position.
func (c *composer) checkParams() {
	c.paramsErr, c.paramsErrAt = "", -1
	raw := c.paramsEdit().String()
	s := strings.TrimSpace(raw)
	if s == "" {
		return
	}
	if len(s) > maxLiveCheck {
		return // checked when sent, off the UI's path
	}
	var v json.RawMessage
	err := json.Unmarshal([]byte(raw), &v)
	if err == nil {
		if s[0] != '{' && s[0] != '[' && c.reply == nil { // a result may be any value
			c.paramsErr = "params must be an object or an array"
		}
		return
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := int(se.Offset)
		switch {
		case strings.HasPrefix(se.Error(), "unexpected end") || off > len(raw):
			off = len(raw) // ran out of input: the fault is at the end
		case off > 0:
			off-- // Offset counts the byte that could not be read
		}
		c.paramsErrAt = utf8.RuneCountInString(raw[:off])
		c.paramsErr = fmt.Sprintf("col %d: %s", c.paramsErrAt+1, se.Error())
		return
	}
	c.paramsErrAt = utf8.RuneCountInString(raw)
	c.paramsErr = err.Error()
}

// follow keeps up with the current target: a bus's pool, and a method
// written for the target before (carried, marked until it is offered).
func (c *composer) follow(changed bool) {
	t := c.pc.target()
	if !changed || t == nil {
		return
	}
	if t.bus() && t.Pool != "" {
		if c.saved.pool == c.pool.String() {
			c.saved.pool = t.Pool // set for the user, not by them
		}
		c.pool.Set(t.Pool)
	}
	if c.on != "" && c.on != c.pc.current && strings.TrimSpace(c.method.String()) != "" {
		if prev := c.pc.targets[c.on]; prev != nil {
			c.carried = prev.Name
		} else {
			c.carried = "another target"
		}
	}
	c.on = c.pc.current
}

// complete recomputes the method completions for the typed prefix.
func (c *composer) complete() {
	c.comps, c.compIdx = nil, 0
	t := c.pc.target()
	if t == nil || t.caps() == nil {
		return
	}
	q := c.method.String()
	var prefix, fz []string
	for _, m := range t.caps().Methods {
		switch {
		case m == q:
		case strings.HasPrefix(m, q):
			prefix = append(prefix, m)
		case q != "" && fuzzy(m, q):
			fz = append(fz, m)
		}
	}
	sort.Strings(prefix)
	sort.Strings(fz)
	c.comps = append(prefix, fz...)
	if len(c.comps) > 200 {
		c.comps = c.comps[:200]
	}
}

// hint is "key desc" for an enabled binding, "" for a disabled one.
func hint(b key.Binding, desc string) string {
	if k := helpKey(b); k != "" {
		return k + " " + desc
	}
	return ""
}

// joinHints joins the hints that are not empty with sep.
func joinHints(sep string, hs ...string) string {
	var out []string
	for _, h := range hs {
		if h != "" {
			out = append(out, h)
		}
	}
	return strings.Join(out, sep)
}

// View draws the composer's three lines.
func (c *composer) View() string {
	k := c.keys()
	title := "Call"
	if c.reply != nil {
		title = "Reply"
	}
	right := c.pc.st.Dim.Render(joinHints(" · ", hint(k.Send, "send"), hint(k.Editor, "edit"), hint(k.Cancel, "cancel")))
	w, _ := c.inner()
	return c.box(title, right, c.body(w))
}

func (c *composer) body(w int) []string {
	st, k, t, focused := c.pc.st, c.keys(), c.pc.target(), c.focused()
	label := func(s string, f int) string {
		if focused && c.field == f {
			return st.Accent.Bold(true).Render(s)
		}
		return st.Dim.Render(s)
	}
	tgt := st.Dim.Render("no target")
	switch {
	case t != nil && t.gone:
		tgt = st.Err.Render("✕") + " " + st.Accent.Render(render.Sanitize(t.Name)) + st.Err.Render(" gone")
	case t != nil:
		tgt = healthDot(st, t.health()) + " " + st.Accent.Render(render.Sanitize(t.Name))
	}
	var l1 string
	if c.reply != nil {
		l1 = st.WarnBadge.Render("reply") + " " + st.Accent.Render(render.Sanitize(c.reply.Source)) + " " +
			render.Sanitize(c.reply.title) + st.Dim.Render(" id "+render.Sanitize(string(c.reply.id)))
	} else {
		busW := 0
		var bus string
		if t != nil && t.bus() {
			bus = "  " + label("session ", fSession) + c.session.View(12, focused && c.field == fSession, st, -1) +
				"  " + label("pool ", fPool) + c.pool.View(10, focused && c.field == fPool, st, -1)
			busW = ansi.StringWidth(bus)
		}
		head := tgt + "  " + label("method ", fMethod)
		mark := ""
		if c.notOffered(t) {
			mark = " " + st.Warn.Render("⚠ not offered here")
		}
		mw := w - ansi.StringWidth(head) - busW - ansi.StringWidth(mark)
		l1 = head + c.method.View(max(mw, 4), focused && c.field == fMethod, st, -1) + mark + bus
	}
	plabel := "params "
	if c.reply != nil {
		plabel = "result "
	}
	head2 := label(plabel, fParams)
	l2 := head2 + c.paramsEdit().View(max(w-ansi.StringWidth(head2), 4), focused && c.field == fParams, st, c.paramsErrAt)
	var l3 string
	switch {
	case c.inflight:
		l3 = st.Info.Render("sending " + render.Sanitize(c.inflightAt) + "…")
		if h := hint(k.Cancel, "cancel"); h != "" {
			l3 += st.Dim.Render("  " + h)
		}
	case focused && c.field == fMethod && len(c.comps) > 0:
		var sb strings.Builder
		sb.WriteString(st.Dim.Render("⇥ "))
		for i, m := range c.comps {
			if i > 0 {
				sb.WriteString("  ")
			}
			if i == c.compIdx {
				sb.WriteString(st.Selected.Render(render.Sanitize(m)))
			} else {
				sb.WriteString(render.Sanitize(m))
			}
			if sb.Len() > w*4 {
				break
			}
		}
		l3 = sb.String()
	case c.paramsErr != "":
		l3 = st.Err.Render("✗ " + render.Sanitize(c.paramsErr))
	default:
		fields := ""
		if f := helpKey(k.PrevField) + helpKey(k.NextField); f != "" {
			fields = f + " field"
		}
		l3 = st.OK.Render("✓ JSON") + st.Dim.Render("  "+joinHints("  ", hint(k.Send, "send"), hint(k.Editor, "$EDITOR"), fields, hint(k.Complete, "complete")))
	}
	return []string{l1, l2, l3}
}

// bookStepsMsg is the runbook's steps, read in a command.
type bookStepsMsg struct {
	path  string
	steps []BookStep
	err   error
}

// loadBookStep reads the runbook (Config.Books) in a command; its steps
// come back as a bookStepsMsg, and the next one is put in the composer.
func (c *composer) loadBookStep() tea.Cmd {
	books := c.pc.cfg.Books
	if books == nil {
		c.pc.setErr("no runbook here to take a step from")
		return nil
	}
	ctx := c.pc.ctx
	return c.pc.safe(func() tea.Msg {
		path, steps, err := books.Steps(ctx)
		return bookStepsMsg{path: path, steps: steps, err: err}
	})
}

// takeBookStep puts the book's next step (one more each time the key is
// pressed, round and round) in the composer, with its target made current
// when it is listed; ⏎ then sends it as any call.
func (c *composer) takeBookStep(msg bookStepsMsg) tea.Cmd {
	switch {
	case msg.err != nil:
		c.pc.setErr("book: " + msg.err.Error())
		return nil
	case len(msg.steps) == 0:
		c.pc.setErr("book " + render.Sanitize(msg.path) + " has no step to take")
		return nil
	}
	i := c.bookIdx % len(msg.steps)
	c.bookIdx = i + 1
	st := msg.steps[i]
	var cmds []tea.Cmd
	where := ""
	if t := c.pc.targetFor(st.Target, ""); t != nil {
		cmds = append(cmds, c.pc.do(selectMsg{key: t.ID}))
	} else {
		where = "; its target " + render.Sanitize(st.Target) + " is not listed here"
	}
	session, pool := st.Session, st.Pool
	cmds = append(cmds, c.pc.do(composeMsg{method: st.Method, params: st.Params, session: &session, pool: &pool}))
	text := fmt.Sprintf("book step %d/%d (%s) of %s%s: %s sends it", i+1, len(msg.steps), render.Sanitize(st.Name),
		render.Sanitize(msg.path), where, helpKey(c.keys().Send))
	if st.Note != "" {
		text += " (" + render.Sanitize(st.Note) + ")"
	}
	c.pc.setInfo(text)
	return tea.Batch(cmds...)
}
