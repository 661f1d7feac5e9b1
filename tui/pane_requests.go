package tui

import (
	"bytes"
	"fmt"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/internal/render"
)

func requestsSpec() paneSpec {
	return paneSpec{action: "requests", tab: "requests", focus: b([]string{"R", "8"}, "R", "server requests"),
		make: func(id paneID, pc *programContext) pane { return &requestsPane{paneBase: paneBase{id: id, pc: pc}} }}
}

// maxRequests bounds the requests kept (the oldest go).
const maxRequests = 500

// requestsPane lists server-initiated requests; the composer answers them.
type requestsPane struct {
	paneBase
	reqs     []line
	sel, off int
}

// asker is a pane with requests waiting for the user (the header counts
// them).
type asker interface{ pending() int }

// KeyMap is the status bar's keys.
func (p *requestsPane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Reply, k.focusKey(pEvents), k.Quit}
}

// Update collects the requests peers send, marks those answered, and
// handles the pane's keys and clicks.
func (p *requestsPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg := msg.(type) {
	case liveMsg:
		for _, l := range msg.lines {
			if l.kind == EvRequest {
				p.Append(l)
			}
		}
	case replyDoneMsg:
		if msg.err != nil {
			p.pc.setErr("reply: " + msg.err.Error())
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
			if p.sel < 0 || p.sel >= len(p.reqs) {
				break
			}
			r := p.reqs[p.sel]
			return p, p.pc.do(composeMsg{reply: &r, params: "{}"})
		}
	case clickMsg:
		if i := p.off + msg.y; i < len(p.reqs) {
			p.sel = i
		}
	}
	return p, nil
}

// Append adds a request and selects it.
func (p *requestsPane) Append(e line) {
	p.reqs = append(p.reqs, e)
	if len(p.reqs) > maxRequests {
		p.reqs = p.reqs[len(p.reqs)-maxRequests:]
	}
	p.sel = len(p.reqs) - 1
}

func (p *requestsPane) pending() int {
	n := 0
	for _, r := range p.reqs {
		if !r.answered {
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
	p.off = scrollInto(p.off, p.sel, h, len(p.reqs))
	var out []string
	for i := p.off; i < len(p.reqs) && i < p.off+h; i++ {
		r := &p.reqs[i]
		cur := " "
		if i == p.sel {
			cur = st.Accent.Render("›")
		}
		state := st.Warn.Render("waiting ")
		if r.answered {
			state = st.OK.Render("answered")
		}
		out = append(out, cur+st.Dim.Render(r.Time.Format("15:04:05"))+" "+state+" "+st.Accent.Render(render.Sanitize(r.Source))+" "+
			render.Sanitize(r.title)+" "+st.Dim.Render(render.Sanitize(string(r.data))))
	}
	return out
}
