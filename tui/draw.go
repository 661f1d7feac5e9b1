package tui

import (
	"strings"
	"sync"
	"unicode/utf8"

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
	// edges are box's top and bottom borders as drawn last, by what they
	// are drawn from: most panes' borders do not change from one frame to
	// the next, and drawing them was a fifth of a frame.
	edgesMu sync.Mutex
	edges   map[edgeKey]string
}

// edgeKey is what a box's top (title, right) or bottom (bottom set) border
// is drawn from.
type edgeKey struct {
	w, f         int
	title, right string
	bottom       bool
}

// maxEdges bounds styles.edges: a few panes, each with a couple of titles
// (a right-hand note with live figures changes every frame).
const maxEdges = 64

// edge is the border k draws, from the cache or drawn by draw.
func (s *styles) edge(k edgeKey, draw func() string) string {
	s.edgesMu.Lock()
	e, ok := s.edges[k]
	s.edgesMu.Unlock()
	if ok {
		return e
	}
	e = draw()
	s.edgesMu.Lock()
	if s.edges == nil || len(s.edges) >= maxEdges {
		s.edges = make(map[edgeKey]string, maxEdges)
	}
	s.edges[k] = e
	s.edgesMu.Unlock()
	return e
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
	inner := w - 2
	out := make([]string, 0, h)
	out = append(out, s.edge(edgeKey{w: w, f: f, title: title, right: right}, func() string { return s.top(w, f, title, right) }))
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, s.vbar[f]+fit(line, inner)+s.vbar[f])
	}
	out = append(out, s.edge(edgeKey{w: w, f: f, bottom: true}, func() string {
		return s.border[f].Render("╰" + strings.Repeat("─", inner) + "╯")
	}))
	return out
}

// top draws a box's top border w cells wide: ╭ title ───── right ╮.
func (s *styles) top(w, f int, title, right string) string {
	bs := s.border[f]
	inner := w - 2
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
	return fit(top.String(), w)
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
// it dropped. It grows as items arrive, up to its size: a tail that holds
// a few events does not hold room for 10,000 (2.4 MiB of lines for the
// events pane, allocated whole, before the first one arrived).
type ring[T any] struct {
	buf     []T
	max     int
	start   int
	n       int
	dropped uint64
	total   uint64
}

func newRing[T any](size int) *ring[T] { return &ring[T]{max: max(size, 1)} }

// ringFirst is the room a ring makes for its first items.
const ringFirst = 64

func (r *ring[T]) Append(x T) {
	r.total++
	if r.n < r.max {
		if r.n == len(r.buf) {
			// Not full, so start is 0 (it moves only once full).
			nb := make([]T, min(r.max, max(ringFirst, 2*len(r.buf))))
			copy(nb, r.buf)
			r.buf = nb
		}
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

// Clear forgets every item and gives back the room they took.
func (r *ring[T]) Clear() {
	r.buf = nil
	r.start, r.n = 0, 0
}

// joinLines joins a pane's or the screen's lines.
func joinLines(lines []string) string { return strings.Join(lines, "\n") }

// wrapText wraps plain one-line text into lines of at most w cells (the
// first line at most first cells), between words where it can. A word
// longer than a line (a path, an address) is broken after a slash where
// that leaves at least a third of the line used, else where the line ends.
// Runs of spaces become one. Give it peer text only after render.Sanitize,
// and bound its length first (human.Clip): every line is kept.
func wrapText(s string, first, w int) []string {
	if w <= 0 {
		return nil
	}
	first = min(max(first, 1), w)
	var out []string
	line, lw := "", 0
	limit := func() int {
		if len(out) == 0 {
			return first
		}
		return w
	}
	flush := func() {
		out = append(out, line)
		line, lw = "", 0
	}
	for _, word := range strings.Fields(s) {
		ww := ansi.StringWidth(word)
		switch {
		case lw > 0 && lw+1+ww <= limit():
			line, lw = line+" "+word, lw+1+ww
			continue
		case lw == 0 && ww <= limit():
			line, lw = word, ww
			continue
		case lw > 0:
			flush()
			if ww <= limit() {
				line, lw = word, ww
				continue
			}
		}
		// Longer than a line: cut it into lines, the last piece staying
		// on the line for the words after it.
		for ww > limit() {
			n := limit()
			part := ansi.Truncate(word, n, "")
			if i := strings.LastIndexByte(part, '/'); i >= 0 && (i+1)*3 >= n {
				part = part[:i+1]
			}
			if part == "" { // a character wider than the line
				_, size := utf8.DecodeRuneInString(word)
				part = word[:size]
			}
			line = part
			flush()
			word = word[len(part):]
			ww = ansi.StringWidth(word)
		}
		line, lw = word, ww
	}
	if lw > 0 || len(out) == 0 {
		out = append(out, line)
	}
	return out
}
