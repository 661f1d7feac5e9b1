package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func traceSpec() paneSpec {
	return paneSpec{action: "trace", tab: "trace", focus: b([]string{"t", "6"}, "t", "trace"),
		make: func(id paneID, pc *programContext) pane { return newTracePane(id, pc, pc.cfg.TraceBuffer) }}
}

// tracePane shows every frame both ways, and the notes of each connection
// (dial, handshake steps, close).
type tracePane struct {
	paneBase
	tail
	ring *ring[TraceFrame]
	// mgen numbers the filter texts; a frame keeps whether it matched
	// the current one (TraceFrame.mgen), so a frame is matched once, not
	// on every walk of the ring.
	mgen uint32
	mTxt string
}

func newTracePane(id paneID, pc *programContext, size int) *tracePane {
	return &tracePane{paneBase: paneBase{id: id, pc: pc}, ring: newRing[TraceFrame](size)}
}

// Typing reports whether the filter has the keyboard.
func (p *tracePane) Typing() bool { return p.filter.active }

// KeyMap is the status bar's keys.
func (p *tracePane) KeyMap() help.KeyMap {
	k := p.keys()
	return hints{k.Help, k.Pause, k.Filter, inspectKey(k), k.Clear, k.focusKey(pEvents), k.Quit}
}

// Update appends the frames of the live connections, and handles the
// pane's keys and wheel; then fits the view to the frames that match.
func (p *tracePane) Update(msg tea.Msg) (pane, tea.Cmd) {
	cmd := p.update(msg)
	p.fit()
	return p, cmd
}

func (p *tracePane) update(msg tea.Msg) tea.Cmd {
	p.syncFilter()
	switch msg := msg.(type) {
	case liveMsg:
		for _, f := range msg.frames {
			p.Append(f)
		}
	case tea.KeyPressMsg, tea.PasteMsg:
		if p.filter.active {
			p.typeFilter(msg, p.keys())
			return nil
		}
		if kp, ok := msg.(tea.KeyPressMsg); ok {
			switch p.tail.onKey(kp, p.keys()) {
			case tailClear:
				p.ring.Clear()
			case tailInspect:
				settle(&p.tail, p.ring, p.matcher(true))
				return p.inspect()
			}
		}
	case wheelMsg:
		p.wheel(msg.delta)
	case clickMsg:
		p.click(msg.y)
	}
	return nil
}

// SetSize records the pane's size and fits the view to it.
func (p *tracePane) SetSize(w, h int) {
	p.paneBase.SetSize(w, h)
	p.fit()
}

// fit brings the matches up to the filter as it is now and fits the view
// and the cursor to the pane's rows (View changes neither).
func (p *tracePane) fit() {
	p.syncFilter()
	if _, h := p.inner(); h > 0 {
		fitTail(&p.tail, p.ring, h, p.matcher(true))
	}
}

// inspect opens the frame under the cursor in the response viewer.
func (p *tracePane) inspect() tea.Cmd {
	f := p.at(p.sel())
	if f == nil {
		return nil
	}
	a := &answer{title: fmt.Sprintf("frame %s %s · %s · %s", f.Dir, f.Source, human.Bytes(int64(f.Size)), f.Time.Format("15:04:05.000")), result: f.Data, outcome: "ok", size: f.Size}
	if f.Size > len(f.Data) {
		a.title += fmt.Sprintf(" (first %s)", human.Bytes(int64(len(f.Data))))
	}
	switch {
	case len(f.Data) == 0 && f.Warning != "":
		// A note (dial, handshake step, close) says it all in its text.
		a.result, a.size = []byte(f.Warning), len(f.Warning)
	case f.Warning != "":
		a.title += " · ⚠ " + f.Warning
	}
	return openAnswer(p.pc, a)
}

// Append adds a frame.
func (p *tracePane) Append(f TraceFrame) {
	p.ring.Append(f)
	p.appended(func() bool { return p.matcher(true)(p.ring.At(p.ring.Len() - 1)) })
}

// at returns the back-th newest frame that matches the filter.
func (p *tracePane) at(back int) *TraceFrame { return nth(p.ring, p.matcher(true), back) }

// syncFilter starts a new generation of matches when the filter changed.
func (p *tracePane) syncFilter() {
	if f := p.filter.String(); p.mgen == 0 || f != p.mTxt {
		p.mgen++
		p.mTxt = f
	}
}

// matcher is the filter (as of the last syncFilter) as a test of a frame
// (its source, warning and first KiB of data); keep says a frame keeps
// whether it matched, so it is matched once a generation (View keeps
// nothing: fit matched the rows it shows).
func (p *tracePane) matcher(keep bool) func(*TraceFrame) bool {
	f, gen := p.mTxt, p.mgen
	return func(fr *TraceFrame) bool {
		if f == "" {
			return true
		}
		if fr.mgen == gen {
			return fr.mres
		}
		res := containsFold(fr.Source, f) || containsFold(fr.Warning, f) || containsFold(string(fr.Data[:min(len(fr.Data), 1024)]), f)
		if keep {
			fr.mgen, fr.mres = gen, res
		}
		return res
	}
}

func (p *tracePane) titles(st *styles) (string, string) {
	var right []string
	if p.paused {
		right = append(right, st.Warn.Render(fmt.Sprintf("paused +%d", p.newer)))
	}
	// Frames older than the ring's window were shown in their time and
	// let go: not a loss (as on the events title).
	if p.ring.dropped > 0 {
		right = append(right, st.Dim.Render(fmt.Sprintf("last %d of %d", p.ring.Len(), p.ring.total)))
	} else {
		right = append(right, st.Dim.Render(fmt.Sprint(p.ring.Len())))
	}
	return "Trace", strings.Join(right, " ")
}

// View draws the visible rows only: it walks back from the newest frame.
// It changes nothing: Update and SetSize fitted the view.
func (p *tracePane) View() string {
	title, right := p.titles(p.pc.st)
	w, h := p.inner()
	return p.box(title, right, p.rows(p.pc.st, w, h))
}

func (p *tracePane) rows(st *styles, w, h int) []string {
	row := func(i int, fr *TraceFrame) string {
		var prev *TraceFrame
		if i > 0 {
			prev = p.ring.At(i - 1)
		}
		return p.row(st, fr, prev)
	}
	return tailView(st, &p.tail, p.ring, w, h, p.matcher(false), row, p.focused(),
		" no frames yet: every frame sent and received shows here", " nothing matches the filter")
}

func (p *tracePane) row(st *styles, f *TraceFrame, prev *TraceFrame) string {
	ts := st.Dim.Render(f.Time.Format("15:04:05.000"))
	delta := ""
	if prev != nil && !prev.Time.IsZero() {
		if d := f.Time.Sub(prev.Time); d >= 0 && d < time.Hour {
			delta = "+" + human.Duration(d)
		}
	}
	ts += st.Dim.Render(fmt.Sprintf(" %9s", delta))
	var arrow string
	switch f.Dir {
	case ipc.Out:
		arrow = st.Sent.Render("→")
	case ipc.In:
		arrow = st.Received.Render("←")
	case ipc.Stderr:
		arrow = st.Warn.Render("⚠")
	default:
		arrow = st.Dim.Render("·")
	}
	line := ts + " " + arrow + " " + st.Accent.Render(render.Sanitize(f.Source)) + " " + st.Dim.Render(human.Bytes(int64(f.Size)))
	if f.Warning != "" {
		line += " " + st.Warn.Render("⚠ "+render.Sanitize(f.Warning))
	}
	return line + " " + render.Sanitize(human.Clip(string(f.Data), 512))
}
