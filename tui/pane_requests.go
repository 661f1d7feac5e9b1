package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func requestsSpec() paneSpec {
	return paneSpec{action: "requests", tab: "requests", focus: b([]string{"R", "8"}, "R", "server requests"),
		make: func(id paneID, pc *programContext) pane { return &requestsPane{paneBase: paneBase{id: id, pc: pc}} }}
}

// maxRequests bounds the requests kept (the oldest go).
const maxRequests = 500

// peerDeadlines are how long known peers wait for the answer to a request
// they send; after that an answer reaches nobody.
var peerDeadlines = map[string]time.Duration{
	// A go-holons server gives up on its Hello after 3 s (seen in #16).
	"client.v1.Client/Hello": 3 * time.Second,
	// Holon-RPC heartbeats time out after 5 s (ECOSYSTEM-FACTS).
	"rpc.heartbeat": 5 * time.Second,
}

// Request states, as the pane shows them.
const (
	reqWaiting  = "waiting"
	reqAnswered = "answered"
	reqExpired  = "expired" // older than the peer's known deadline
	reqGone     = "gone"    // the connection that asked is gone
)

// reqConn is the connection a server request came on, as answering it
// needs: the connection, and its generation when the request came (a
// Holon-RPC session reconnects under the same Conn).
type reqConn struct {
	c   linker
	gen int64
}

// linker is what reqConn asks of a connection (an *ipc.Conn).
type linker interface {
	Link() (gen int64, up bool)
	Err() error
}

// requestOn is how a request with id that came on c is told apart and
// answered: on c, never on a later connection.
func requestOn(c *ipc.Conn, id json.RawMessage) (reqConn, replyFunc) {
	gen, _ := c.Link()
	id = append(json.RawMessage(nil), id...)
	var used atomic.Bool // a request is answered once, whoever asks again
	return reqConn{c: c, gen: gen}, func(ctx context.Context, result json.RawMessage, rpcErr *ipc.RPCError) error {
		if used.Swap(true) {
			return fmt.Errorf("%w: it was answered already", errCannotAnswer)
		}
		return c.Reply(ctx, id, result, rpcErr)
	}
}

// state is the connection's state in a word ("open", "closed",
// "replaced", "down"; "" when unknown), and, when the request can no
// longer be answered on it, why.
func (rc reqConn) state() (word, why string) {
	if rc.c == nil {
		return "", ""
	}
	gen, up := rc.c.Link()
	switch {
	case gen != rc.gen:
		return "replaced", "the connection that asked was replaced (the session reconnected)"
	case up:
		return "open", ""
	}
	if err := rc.c.Err(); err != nil {
		return "closed", "the connection that asked is closed: " + err.Error()
	}
	if _, still := rc.c.Link(); !still {
		return "down", "the connection that asked dropped (the session is reconnecting)"
	}
	return "closed", "the connection that asked is closed"
}

// reqVerdict says where request r stands at now: its state, and when it
// can no longer be answered, why.
func reqVerdict(r *line, now time.Time) (state, why string) {
	if r.answered {
		return reqAnswered, ""
	}
	if _, why := r.conn.state(); why != "" {
		return reqGone, why
	}
	if d, ok := peerDeadlines[r.title]; ok && now.Sub(r.Time) > d {
		return reqExpired, fmt.Sprintf("it is %s old, and the peer stops waiting for %s after %s", age(now.Sub(r.Time)), r.title, d)
	}
	return reqWaiting, ""
}

// age is a request's age: seconds, then minutes, then hours.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%dh", int(d/time.Hour))
}

// errCannotAnswer wraps why a request can no longer be answered.
var errCannotAnswer = errors.New("cannot answer")

// requestsPane lists server-initiated requests, each with its age and the
// state of the connection it came on; the composer answers them.
type requestsPane struct {
	paneBase
	reqs     []line
	sel, off int
	// ticking: a timer runs to refresh the ages while requests wait.
	ticking bool
	// pendN is pending() as counted by fit, at the end of the last
	// Update: what the header and the title show (a frame counts
	// nothing). The timer that runs while requests wait updates it.
	pendN int
}

// requestsTickMsg refreshes the ages and states of waiting requests.
type requestsTickMsg struct{}

// asker is a pane with requests waiting for the user (the header counts
// them).
type asker interface{ pending() int }

// KeyMap is the status bar's keys.
func (p *requestsPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Reply, k.focusKey(pEvents), k.Quit}
}

// Update collects the requests peers send, marks those answered, and
// handles the pane's keys and clicks; then counts those waiting and fits
// the scroll to them (View changes nothing).
func (p *requestsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

// SetSize records the pane's size and fits the scroll to it.
func (p *requestsPane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit counts the requests waiting (pendN) and keeps the cursor's request
// among those the pane has room for: two rows each, above the selected
// request's reason when it can no longer be answered.
func (p *requestsPane) fit() {
	p.pendN = p.count()
	if w, h := p.inner(); h > 0 && len(p.reqs) > 0 {
		p.off = scrollInto(p.off, p.sel, p.shows(w, h), len(p.reqs))
	}
}

// shows is how many requests a body of w×h shows (at now).
func (p *requestsPane) shows(w, h int) int {
	return max((h-len(p.foot(p.pc.st, w, h, p.pc.now())))/2, 1)
}

// foot is the selected request's reason, when it can no longer be
// answered: up to three rows at the bottom.
func (p *requestsPane) foot(st *styles, w, h int, now time.Time) []string {
	if p.sel < 0 || p.sel >= len(p.reqs) || h < 5 || w <= 2 {
		return nil
	}
	state, why := reqVerdict(&p.reqs[p.sel], now)
	if why == "" {
		return nil
	}
	var foot []string
	lines := strings.Split(ansi.Wrap(state+": "+render.Sanitize(why), w-1, " "), "\n")
	for _, l := range lines[:min(len(lines), 3)] {
		foot = append(foot, st.Err.Render(" "+l))
	}
	return foot
}

func (p *requestsPane) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case liveMsg:
		for _, l := range msg.lines {
			if l.kind == EvRequest {
				p.Append(l)
			}
		}
		return p.tick()
	case requestsTickMsg:
		p.ticking = false
		return p.tick()
	case replyDoneMsg:
		if msg.err != nil {
			p.pc.setErr("reply: " + render.Sanitize(msg.err.Error()))
			break
		}
		for i := len(p.reqs) - 1; i >= 0; i-- {
			if r := &p.reqs[i]; r.key == msg.targetKey && bytes.Equal(r.id, msg.id) {
				r.answered = true
				break
			}
		}
		p.pc.setInfo("answered")
	case tea.KeyPressMsg:
		k := p.keys()
		switch {
		case key.Matches(msg, k.Up):
			p.sel = max(p.sel-1, 0)
		case key.Matches(msg, k.Down):
			p.sel = min(p.sel+1, len(p.reqs)-1)
		case key.Matches(msg, k.Reply), key.Matches(msg, k.Select):
			return p.answer()
		}
	case clickMsg:
		// Two rows a request (the reason at the bottom is none).
		if i := p.off + msg.y/2; msg.y >= 0 && msg.y/2 < p.shows(p.inner()) && i < len(p.reqs) {
			p.sel = i
		}
	}
	return nil
}

// answer opens the selected request in the composer, or says why it can
// no longer be answered.
func (p *requestsPane) answer() tea.Cmd {
	if p.sel < 0 || p.sel >= len(p.reqs) {
		return nil
	}
	r := p.reqs[p.sel]
	what := render.Sanitize(r.title) + " from " + render.Sanitize(r.Source)
	switch state, why := reqVerdict(&r, p.pc.now()); state {
	case reqAnswered:
		p.pc.setErr(what + " is answered already")
		return nil
	case reqGone, reqExpired:
		p.pc.setErr("cannot answer " + what + ": " + render.Sanitize(why))
		return nil
	}
	if r.reply == nil {
		// Not known on which connection it came: an answer on another
		// one would reach a request the peer never made there.
		p.pc.setErr("cannot answer " + what + ": the connection it came on is not known")
		return nil
	}
	// Checked again when the answer is sent: the peer may have given up,
	// or the connection gone, while it was written.
	r.reply = guardReply(r, time.Now)
	return p.pc.do(composeMsg{reply: &r, params: "{}"})
}

// guardReply answers r with its own reply function only while r can still
// be answered.
func guardReply(r line, now func() time.Time) replyFunc {
	send := r.reply
	return func(ctx context.Context, result json.RawMessage, rpcErr *ipc.RPCError) error {
		if state, why := reqVerdict(&r, now()); state == reqGone || state == reqExpired {
			return fmt.Errorf("%w %s: %s", errCannotAnswer, r.title, why)
		}
		return send(ctx, result, rpcErr)
	}
}

// tick keeps a timer running while requests wait, so their ages and
// states stay true on screen without a key being pressed.
func (p *requestsPane) tick() tea.Cmd {
	if p.ticking || p.pending() == 0 || p.pc.ticks == nil || !p.pc.ticks() {
		return nil
	}
	p.ticking = true
	return tea.Tick(time.Second, func(time.Time) tea.Msg { return requestsTickMsg{} })
}

// Append adds a request and selects it.
func (p *requestsPane) Append(e line) {
	p.reqs = append(p.reqs, e)
	if len(p.reqs) > maxRequests {
		p.reqs = p.reqs[len(p.reqs)-maxRequests:]
	}
	p.sel = len(p.reqs) - 1
}

// pending is how many requests wait for an answer and can still get one:
// while drawing, as fit counted them at the end of the last Update (the
// header and the title show one count, and a frame counts nothing);
// else counted now.
func (p *requestsPane) pending() int {
	if p.pc.drawing {
		return p.pendN
	}
	return p.count()
}

// count counts the requests that wait for an answer and can still get
// one.
func (p *requestsPane) count() int {
	now, n := p.pc.now(), 0
	for i := range p.reqs {
		if state, _ := reqVerdict(&p.reqs[i], now); state == reqWaiting {
			n++
		}
	}
	return n
}

// View draws the visible requests.
func (p *requestsPane) View() string {
	st := p.pc.st
	right := ""
	if n := p.pending(); n > 0 {
		right = st.Warn.Render(fmt.Sprintf("%d waiting", n))
	}
	return p.box("Server requests", right, p.rows(st))
}

func (p *requestsPane) rows(st *styles) []string {
	_, h := p.inner()
	if len(p.reqs) == 0 {
		how := " Holons and buses that call back show up here."
		if h := hint(p.keys().Reply, "to answer"); h != "" {
			how = " Holons and buses that call back show up here; press " + h + "."
		}
		return []string{"", st.Dim.Render(" No server-initiated requests yet."), st.Dim.Render(how)}
	}
	now := p.pc.now()
	// The selected request's reason, when it can no longer be answered,
	// takes the last rows (up to three).
	w, _ := p.inner()
	foot := p.foot(st, w, h, now)
	avail := h - len(foot)
	// Two rows a request: what it asks, then where it stands and who
	// asked. fit scrolled them (off); clamped here for drawing only (a
	// reason may have come since).
	off := scrollInto(p.off, p.sel, max(avail/2, 1), len(p.reqs))
	var out []string
	for i := off; i < len(p.reqs) && len(out)+2 <= max(avail, 2); i++ {
		r := &p.reqs[i]
		cur := " "
		if i == p.sel {
			cur = st.Accent.Render("›")
		}
		state, _ := reqVerdict(r, now)
		var word string
		switch state {
		case reqAnswered:
			word = st.OK.Render(state)
		case reqWaiting:
			word = st.Warn.Render(state)
		default:
			word = st.Err.Render(state)
		}
		sep := st.Dim.Render(" · ")
		status := "   " + word + sep + st.Dim.Render(age(now.Sub(r.Time)))
		if c, _ := r.conn.state(); c != "" && state != reqAnswered {
			style := st.Dim
			if c != "open" {
				style = st.Err
			}
			status += sep + style.Render("conn "+c)
		}
		status += sep + st.Accent.Render(render.Sanitize(r.Source)) + sep + st.Dim.Render(r.Time.Format("15:04:05"))
		out = append(out, cur+" "+render.Sanitize(r.title)+" "+st.Dim.Render(render.Sanitize(string(r.data))), status)
	}
	for len(foot) > 0 && len(out) < avail {
		out = append(out, "")
	}
	return append(out, foot...)
}
