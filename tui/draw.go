package tui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/themes"
)

// styles are the theme's styles plus what the TUI precomputes from them
// once per theme change (never per frame).
type styles struct {
	themes.Styles
	theme  themes.Theme
	hl     *render.Highlighter
	border [2]lipgloss.Style
	title  [2]lipgloss.Style
	cursor lipgloss.Style
	// pre-rendered border pieces: [focused][piece]
	vbar [2]string
}

func newStyles(t themes.Theme) *styles {
	s := &styles{Styles: themes.NewStyles(t), theme: t}
	// The program downsamples colours to the terminal's profile (and drops
	// them for NO_COLOR), so highlight in true colour here.
	jc := t.JSON
	s.hl = render.NewHighlighter(&jc, colorprofile.TrueColor)
	s.border[0] = lipgloss.NewStyle().Foreground(t.UI.Border)
	s.border[1] = lipgloss.NewStyle().Foreground(t.UI.FocusBorder).Bold(true)
	s.title[0] = s.Title
	s.title[1] = s.TitleFocus
	s.cursor = lipgloss.NewStyle().Reverse(true)
	for i := 0; i < 2; i++ {
		s.vbar[i] = s.border[i].Render("│")
	}
	return s
}

// fit truncates a styled line to w cells (with an ellipsis) and pads it.
func fit(line string, w int) string {
	if w <= 0 {
		return ""
	}
	lw := ansi.StringWidth(line)
	if lw > w { // measured once: every line of every pane passes here each frame
		line = human.Truncate(line, w)
		lw = ansi.StringWidth(line)
	}
	if lw < w {
		line += strings.Repeat(" ", w-lw)
	}
	return line
}

// box draws a rounded pane of exactly w×h cells: the title (and a right-hand
// note) in the top border, body lines fitted inside. It returns h lines.
func (s *styles) box(w, h int, title, right string, focused bool, body []string) []string {
	if w < 4 || h < 2 {
		out := make([]string, max(h, 0))
		for i := range out {
			out[i] = strings.Repeat(" ", max(w, 0))
		}
		return out
	}
	f := 0
	if focused {
		f = 1
	}
	bs := s.border[f]
	inner := w - 2
	out := make([]string, 0, h)
	// Top: ╭ title ───── right ╮
	t := ""
	tw := 0
	if title != "" {
		t = " " + title + " "
		if ansi.StringWidth(t) > inner-1 {
			t = ansi.Truncate(t, inner-1, "… ") // the border's own tail: the mark, then the space before ─
		}
		tw = ansi.StringWidth(t)
	}
	r := ""
	rw := 0
	if right != "" && inner-tw-4 > 4 {
		r = " " + right + " "
		if ansi.StringWidth(r) > inner-tw-2 {
			r = ansi.Truncate(r, inner-tw-2, "… ")
		}
		rw = ansi.StringWidth(r)
	}
	fill := inner - tw - rw - 1
	if fill < 0 {
		fill = 0
	}
	var top strings.Builder
	top.WriteString(bs.Render("╭─"))
	if t != "" {
		top.WriteString(s.title[f].Render(ansi.Strip(t)))
	}
	top.WriteString(bs.Render(strings.Repeat("─", fill)))
	if r != "" {
		top.WriteString(r)
	}
	top.WriteString(bs.Render("╮"))
	out = append(out, fit(top.String(), w))
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, s.vbar[f]+fit(line, inner)+s.vbar[f])
	}
	out = append(out, bs.Render("╰"+strings.Repeat("─", inner)+"╯"))
	return out
}

// scrollInto returns an offset that keeps sel visible in h rows.
func scrollInto(off, sel, h, n int) int {
	if h <= 0 {
		return 0
	}
	if sel < off {
		off = sel
	}
	if sel >= off+h {
		off = sel - h + 1
	}
	if off > n-h {
		off = n - h
	}
	if off < 0 {
		off = 0
	}
	return off
}

// ring is a bounded buffer that overwrites its oldest item and counts what
// it dropped.
type ring[T any] struct {
	buf     []T
	start   int
	n       int
	dropped uint64
	total   uint64
}

func newRing[T any](size int) *ring[T] { return &ring[T]{buf: make([]T, size)} }

func (r *ring[T]) Append(x T) {
	r.total++
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = x
		r.n++
		return
	}
	r.buf[r.start] = x
	r.start = (r.start + 1) % len(r.buf)
	r.dropped++
}

func (r *ring[T]) Len() int { return r.n }

// At returns the i-th oldest item kept.
func (r *ring[T]) At(i int) *T { return &r.buf[(r.start+i)%len(r.buf)] }

func (r *ring[T]) Clear() {
	var zero T
	for i := range r.buf {
		r.buf[i] = zero
	}
	r.start, r.n = 0, 0
}

// joinLines joins a pane's or the screen's lines.
func joinLines(lines []string) string { return strings.Join(lines, "\n") }
