package tui

import (
	"fmt"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// maxMessage bounds how much of a message the overlay wraps.
const maxMessage = 64 << 10

// messagePane is the overlay the Message key (or a click on the status
// line) opens: the status line's message whole, wrapped, or the last
// error when the line has nothing to say. The moving keys scroll a long
// one; any other key or a click closes it.
type messagePane struct {
	paneBase
	shown bool
	text  string
	isErr bool
	off   int
	lines []string // text wrapped to the overlay's width
	wrapW int      // the width lines were wrapped to
}

func newMessagePane(pc *programContext) *messagePane {
	return &messagePane{paneBase: paneBase{id: -1, pc: pc}}
}

// open shows the status line's message, or the last error; it reports
// whether there was anything to show.
func (p *messagePane) open() bool {
	pc := p.pc
	text, isErr := pc.status, pc.statusErr
	if text == "" {
		text, isErr = pc.lastErr, true
	}
	if text == "" {
		return false
	}
	p.shown, p.text, p.isErr, p.off, p.lines = true, text, isErr, 0, nil
	return true
}

// KeyMap is the keys that scroll it.
func (p *messagePane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Up, k.Down, k.PageUp, k.PageDown}
}

// Update scrolls on the moving keys and the wheel, and closes on any other
// key or a click.
func (p *messagePane) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if d, ok := moveBy(msg, p.keys(), len(p.lines)); ok {
			p.scroll(d)
			return p, nil
		}
		p.shown = false
	case wheelMsg:
		p.scroll(msg.delta)
	case clickMsg:
		p.shown = false
	}
	return p, nil
}

func (p *messagePane) scroll(d int) {
	_, h := p.inner()
	p.off = max(min(p.off+d, len(p.lines)-(h-2)), 0)
}

// View draws the message wrapped to the overlay's width, with how to
// close it below.
func (p *messagePane) View() string {
	st := p.pc.st
	w, h := p.inner()
	if p.lines == nil || p.wrapW != w {
		p.lines, p.wrapW = wrapText(render.Sanitize(human.Clip(p.text, maxMessage)), w-2, w-2), w
	}
	title, style := "Message", st.OK
	if p.isErr {
		title, style = "Error", st.Err
	}
	rows := max(h-2, 1)
	p.off = max(min(p.off, len(p.lines)-rows), 0)
	var body []string
	for i := p.off; i < len(p.lines) && len(body) < rows; i++ {
		body = append(body, " "+style.Render(p.lines[i]))
	}
	for len(body) < rows {
		body = append(body, "")
	}
	right := ""
	if len(p.lines) > rows {
		right = st.Dim.Render(fmt.Sprintf("%d–%d of %d lines", p.off+1, p.off+min(rows, len(p.lines)-p.off), len(p.lines)))
	}
	body = append(body, "", st.Dim.Render(" Any key closes this."))
	return joinLines(st.box(p.w, p.h, title, right, true, body))
}
