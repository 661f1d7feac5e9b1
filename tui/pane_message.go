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
	p.fit()
	return true
}

// SetSize records the overlay's size and wraps the message to it.
func (p *messagePane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit wraps the message shown to the overlay's width (once a width) and
// keeps the scroll within its lines: View draws from them and changes
// nothing.
func (p *messagePane) fit() {
	if !p.shown {
		return
	}
	if w, _ := p.inner(); p.lines == nil || p.wrapW != w {
		p.lines, p.wrapW = p.wrap(w), w
	}
	p.scroll(0)
}

// wrap is the message wrapped to an overlay w cells wide inside.
func (p *messagePane) wrap(w int) []string {
	return wrapText(render.Sanitize(human.Clip(p.text, maxMessage)), w-2, w-2)
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
	p.off = max(min(p.off+d, len(p.lines)-p.rows()), 0)
}

// rows is how many lines of the message show: all but the two rows
// saying how to close it.
func (p *messagePane) rows() int {
	_, h := p.inner()
	return max(h-2, 1)
}

// View draws the message wrapped to the overlay's width (by fit), with
// how to close it below. It changes nothing.
func (p *messagePane) View() string {
	st := p.pc.st
	w, _ := p.inner()
	lines := p.lines
	if lines == nil || p.wrapW != w { // not fitted yet (drawn before SetSize): wrapped, not kept
		lines = p.wrap(w)
	}
	title, style := "Message", st.OK
	if p.isErr {
		title, style = "Error", st.Err
	}
	rows := p.rows()
	off := max(min(p.off, len(lines)-rows), 0) // for drawing only
	var body []string
	for i := off; i < len(lines) && len(body) < rows; i++ {
		body = append(body, " "+style.Render(lines[i]))
	}
	for len(body) < rows {
		body = append(body, "")
	}
	right := ""
	if len(lines) > rows {
		right = st.Dim.Render(fmt.Sprintf("%d–%d of %d lines", off+1, off+min(rows, len(lines)-off), len(lines)))
	}
	body = append(body, "", st.Dim.Render(" Any key closes this."))
	return joinLines(st.box(p.w, p.h, title, right, true, body))
}
