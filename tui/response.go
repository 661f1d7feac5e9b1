package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// answer is one finished call as the response viewer shows it.
type answer struct {
	seq      int
	target   *discovery.Target
	req      ipc.Request
	elapsed  time.Duration
	size     int
	outcome  string // ok, error, timeout, closed, cancelled, refused
	rpcErr   *ipc.RPCError
	errText  string
	result   []byte // the result (or error object) to pretty-print
	raw      []byte // the whole envelope received
	sent     []byte // the request frame sent
	title    string // overrides the title (replay diffs, frames)
	noResult bool
}

// responseView shows one answer: pretty or raw envelope, folded, searched
// and filtered. High-volume: only visible lines are highlighted, and each
// highlighted line is cached.
type responseView struct {
	ans     *answer
	pretty  *doc // result, pretty
	env     *doc // envelope sent+received, pretty
	rawMode bool
	pending bool // formatting in a command
	partial bool // pretty is a preview; the whole answer is being formatted
	// fmtStop stops the commands formatting the answer shown (the whole
	// of a previewed answer, the envelope) once another replaces it.
	fmtStop *atomic.Bool

	cur, off int
	xoff     int // columns scrolled to the right
	// atEnd: the cursor was sent to the end (G) and has not moved since;
	// the whole document, when it replaces a preview, is shown at its end.
	atEnd bool
	folds map[*doc]*foldSet
	// foldGen numbers the changes of folds; folding is set while a
	// command works one out (foldingAll: a fold-all). foldStop stops
	// that command's walk once a change of the folds (a newer fold, a
	// new answer) makes what it works out stale.
	foldGen             int
	folding, foldingAll bool
	foldStop            *atomic.Bool

	jq    field
	jqDoc *doc
	jqErr string
	jqSeq int
	// jqStop cancels the jq run in flight once a newer filter, or a new
	// answer, makes what it works out stale.
	jqStop    context.CancelFunc
	jqInput   any // parsed result, kept for the next filter
	jqInputOf *answer
	jqRunning bool

	search field
	// searchStop cancels the search in flight once a newer one, or a new
	// answer, makes what it finds stale.
	searchStop context.CancelFunc
	matches    []int
	matchDoc   *doc
	matchQ     string // the query the matches are of
	mi         int

	hl    map[*doc]map[int]string
	hlOf  *styles // the styles hl was drawn in
	hlN   int
	lastH int

	// empty is what the pane says before the first answer.
	empty string
	// more says how to read an error cut for room ("! message").
	more string
}

// current is the document on screen.
func (r *responseView) current() *doc {
	switch {
	case r.jqDoc != nil && !r.jq.Empty():
		return r.jqDoc
	case r.rawMode:
		return r.env
	}
	return r.pretty
}

// foldSet is the folded blocks of a document: each by its opening line
// and by its closing line.
type foldSet struct {
	byOpen, byClose map[int]int
}

func (f *foldSet) add(o, c int) {
	if f.byOpen == nil {
		f.byOpen, f.byClose = map[int]int{}, map[int]int{}
	}
	f.byOpen[o], f.byClose[c] = c, o
}

func (f *foldSet) del(o int) {
	if c, ok := f.byOpen[o]; ok {
		delete(f.byOpen, o)
		delete(f.byClose, c)
	}
}

// closeOf is the closing line of the block folded at o.
func (f *foldSet) closeOf(o int) (int, bool) {
	if f == nil {
		return 0, false
	}
	c, ok := f.byOpen[o]
	return c, ok
}

func (r *responseView) folded(d *doc) *foldSet {
	if r.folds == nil {
		r.folds = map[*doc]*foldSet{}
	}
	f := r.folds[d]
	if f == nil {
		f = &foldSet{}
		r.folds[d] = f
	}
	return f
}

// next is the line shown after i (skipping a folded block).
func (r *responseView) next(d *doc, i int) int {
	if c, ok := r.folds[d].closeOf(i); ok {
		return c + 1
	}
	return i + 1
}

// prev is the line shown before i.
func (r *responseView) prev(d *doc, i int) int {
	if i <= 0 {
		return 0
	}
	p := i - 1
	if f := r.folds[d]; f != nil {
		if o, ok := f.byClose[p]; ok {
			p = o
		}
	}
	return p
}

func (r *responseView) resetView() {
	r.cur, r.off, r.xoff, r.atEnd = 0, 0, 0, false
	// The matches go with their document (held, it could not be let go
	// when the answer is replaced).
	r.matches, r.mi, r.matchDoc, r.matchQ = nil, 0, nil, ""
}

// move moves the cursor by n visible lines and keeps it on screen.
func (r *responseView) move(n int) {
	d := r.current()
	if d == nil {
		return
	}
	r.atEnd = false
	last := d.len() - 1
	for ; n > 0; n-- {
		nx := r.next(d, r.cur)
		if nx > last {
			break
		}
		r.cur = nx
	}
	for ; n < 0; n++ {
		if r.cur == 0 {
			break
		}
		r.cur = r.prev(d, r.cur)
	}
	r.follow()
}

// ScrollBy scrolls the view (mouse wheel) by n lines, dragging the cursor.
func (r *responseView) ScrollBy(n int) {
	d := r.current()
	r.atEnd = false
	if d == nil {
		return
	}
	for ; n > 0; n-- {
		nx := r.next(d, r.off)
		if nx >= d.len() {
			break
		}
		r.off = nx
	}
	for ; n < 0 && r.off > 0; n++ {
		r.off = r.prev(d, r.off)
	}
	if r.cur < r.off {
		r.cur = r.off
	}
	h := max(r.lastH, 1)
	i := r.off
	for k := 1; k < h && r.next(d, i) < d.len(); k++ {
		i = r.next(d, i)
	}
	if r.cur > i {
		r.cur = i
	}
}

// jump puts the cursor on line i (unfolding what hides it).
func (r *responseView) jump(i int) {
	d := r.current()
	r.atEnd = false
	if d == nil || i < 0 || i >= d.len() {
		return
	}
	if f := r.folds[d]; f != nil {
		for o, c := range f.byOpen {
			if o < i && c >= i {
				f.del(o)
				r.foldChanged()
			}
		}
	}
	r.cur = i
	r.follow()
}

func (r *responseView) home() { r.cur, r.off, r.atEnd = 0, 0, false }

func (r *responseView) end() {
	d := r.current()
	if d == nil {
		return
	}
	// the last line shown: the opener of a folded block that ends it
	r.cur = r.prev(d, d.len())
	r.atEnd = true
	r.follow()
}

// follow scrolls so the cursor is visible: a cursor above the view
// becomes its first row, one below it its last row (however far below:
// G, a page, a search hit). It walks at most a screen's worth of lines.
func (r *responseView) follow() {
	d := r.current()
	if d == nil {
		return
	}
	h := max(r.lastH, 1)
	r.cur = min(max(r.cur, 0), d.len()-1)
	if r.cur < r.off {
		r.off = r.cur
		return
	}
	// Is the cursor within the h rows shown from off?
	i, k := r.off, 0
	for i < r.cur && k < h {
		i = r.next(d, i)
		k++
	}
	if k < h {
		return
	}
	// Below: the view ends on the cursor's row.
	off := r.cur
	for k := 1; k < h && off > 0; k++ {
		off = r.prev(d, off)
	}
	r.off = off
}

// Folding walks the document (a block to its end, or every line for
// fold-all: 30–40 ms at 10 MiB), so it runs in a command over the
// document, which is immutable: the key asks (foldReq), the command
// answers (foldDoneMsg) and Update swaps the answer in. foldGen numbers
// the requests: a change of the folds since (a newer fold, a new answer)
// makes an answer stale, and it is dropped.

// foldNoteAbove is how many lines a document has when folding it may
// take long enough to show: the title says "folding…" meanwhile.
const foldNoteAbove = 100_000

// foldDoneMsg is a fold worked out: the block opening at o (closing at c;
// -1 when there is none) to fold or unfold, or the whole new set (all).
type foldDoneMsg struct {
	gen  int
	d    *doc
	cur  int // the cursor when asked
	fold bool
	o, c int
	all  *foldSet
}

// foldChanged starts a new generation of folds: what commands are still
// working out is stale, and they stop walking.
func (r *responseView) foldChanged() {
	r.foldGen++
	r.folding, r.foldingAll = false, false
	if r.foldStop != nil {
		r.foldStop.Store(true)
		r.foldStop = nil
	}
}

// jqStale cancels the jq run in flight, if any: its answer is stale.
func (r *responseView) jqStale() {
	if r.jqStop != nil {
		r.jqStop()
		r.jqStop = nil
	}
	r.jqRunning = false
}

// searchStale cancels the search in flight, if any: what it finds is
// stale.
func (r *responseView) searchStale() {
	if r.searchStop != nil {
		r.searchStop()
		r.searchStop = nil
	}
}

// formatter is the stop of a command formatting the answer shown.
func (r *responseView) formatter() func() bool {
	if r.fmtStop == nil {
		r.fmtStop = new(atomic.Bool)
	}
	return r.fmtStop.Load
}

// formatsStale stops the commands formatting the answer shown: another
// replaces it.
func (r *responseView) formatsStale() {
	if r.fmtStop != nil {
		r.fmtStop.Store(true)
		r.fmtStop = nil
	}
}

// folder is the stop of a fold command about to start (for this
// generation of folds): the command polls it.
func (r *responseView) folder() func() bool {
	r.foldStop = new(atomic.Bool)
	return r.foldStop.Load
}

// toggleFold folds the block the cursor opens (or is inside) or unfolds
// it: at once when the cursor is on a folded block's opener, else in the
// command it returns (nil when there is nothing to do).
func (r *responseView) toggleFold(fold bool) tea.Cmd {
	d := r.current()
	r.atEnd = false
	if d == nil {
		return nil
	}
	if _, ok := r.folds[d].closeOf(r.cur); ok {
		if !fold {
			r.folds[d].del(r.cur)
			r.foldChanged()
			r.follow()
		}
		return nil // folded already
	}
	r.foldChanged()
	r.folding = true
	gen, cur, stopped := r.foldGen, r.cur, r.folder()
	return func() tea.Msg {
		o := cur
		if !d.opens(o) {
			// the enclosing opener (of a closing line too), looking
			// back a bounded distance
			o = d.enclosing(cur, 20000)
		}
		c := -1
		if fold && o >= 0 {
			c = d.closeUntil(o, stopped)
		}
		if stopped() {
			return nil // a newer fold or answer: what this worked out is stale
		}
		return foldDoneMsg{gen: gen, d: d, cur: cur, fold: fold, o: o, c: c}
	}
}

// foldAll folds every block nested one level inside the root (in the
// command it returns), or unfolds all (at once). Asked again before the
// folds come, it cancels them: the blocks stay unfolded.
func (r *responseView) foldAll() tea.Cmd {
	d := r.current()
	if d == nil {
		return nil
	}
	if f := r.folds[d]; r.foldingAll || (f != nil && len(f.byOpen) > 0) {
		r.folded(d)
		r.folds[d] = &foldSet{}
		r.foldChanged()
		return nil
	}
	if !d.opens(0) {
		return nil
	}
	r.foldChanged()
	r.folding, r.foldingAll = true, true
	gen, stopped := r.foldGen, r.folder()
	return func() tea.Msg {
		f := depthOneBlocks(d, stopped)
		if f == nil {
			return nil // a newer fold or answer: what this worked out is stale
		}
		return foldDoneMsg{gen: gen, d: d, all: f}
	}
}

// stopEvery is how many lines a walk that can be stopped goes between
// two looks at its stop.
const stopEvery = 1024

// depthOneBlocks is the blocks of d that open at depth 1, folded: one
// walk, which stops (nil) once stopped says so (nil: never).
func depthOneBlocks(d *doc, stopped func() bool) *foldSet {
	f := &foldSet{}
	var open []int
	d.each(1, func(i, depth int, b string) bool {
		if stopped != nil && i%stopEvery == 0 && stopped() {
			f = nil
			return false
		}
		b = strings.TrimLeft(b, " ")
		if isCloser(b) {
			if depth == 0 {
				return false // the root's end
			}
			if depth == 1 && len(open) > 0 {
				f.add(open[len(open)-1], i)
				open = open[:0]
			}
		}
		if depth == 1 && isOpener(b) {
			open = append(open[:0], i)
		}
		return true
	})
	return f
}

// applyFold swaps in a fold a command worked out, unless it is stale (the
// folds changed since it was asked, or another document shows).
func (r *responseView) applyFold(msg foldDoneMsg) {
	if msg.gen != r.foldGen {
		return // the answer to a newer request is to come
	}
	r.folding, r.foldingAll = false, false
	d := r.current()
	if msg.d != d || d == nil {
		return
	}
	if msg.all != nil {
		r.folded(d)
		r.folds[d] = msg.all
		r.cur, r.off = 0, 0
		return
	}
	if msg.o < 0 {
		return
	}
	f := r.folded(d)
	if msg.fold {
		if _, ok := f.closeOf(msg.o); !ok && msg.c > msg.o {
			f.add(msg.o, msg.c)
		}
	} else {
		f.del(msg.o)
	}
	// The cursor goes to the block's opener, unless it moved meanwhile to
	// a line that still shows.
	if r.cur == msg.cur || (msg.fold && r.cur > msg.o && r.cur <= msg.c) {
		r.cur = msg.o
	}
	r.follow()
}

// line renders line i of d, highlighted: as cached by highlight, else
// drawn now (and not kept: View keeps nothing).
func (r *responseView) line(st *styles, d *doc, i int) string {
	if d.plain {
		return d.line(i)
	}
	if r.hlOf == st {
		if s, ok := r.hl[d][i]; ok {
			return s
		}
	}
	return st.hl.Line(human.Clip(d.line(i), 4096))
}

// highlight caches the highlighted lines the view shows (fit calls it):
// each is highlighted once, however many frames show it.
func (r *responseView) highlight(st *styles) {
	d := r.current()
	if d == nil || d.plain {
		return
	}
	if r.hl == nil || r.hlN > 4096 || r.hlOf != st {
		r.hl = map[*doc]map[int]string{}
		r.hlN, r.hlOf = 0, st
	}
	m := r.hl[d]
	if m == nil {
		m = map[int]string{}
		r.hl[d] = m
	}
	for i, k := r.off, 0; i < d.len() && k < r.lastH; i, k = r.next(d, i), k+1 {
		if _, ok := m[i]; !ok {
			m[i] = st.hl.Line(human.Clip(d.line(i), 4096))
			r.hlN++
		}
	}
}

// head is the rows above the document: the jq filter (and its error),
// the search field, what went wrong.
func (r *responseView) head(st *styles, w, h int) []string {
	var rows []string
	if r.jq.active || !r.jq.Empty() {
		label := st.Accent.Render("jq ")
		field := r.jq.View(w-4, r.jq.active, st, -1)
		rows = append(rows, label+field)
		if r.jqErr != "" {
			rows = append(rows, st.Err.Render(render.Sanitize(r.jqErr)))
		}
	}
	if r.search.active {
		rows = append(rows, st.Accent.Render("/ ")+r.search.View(w-3, true, st, -1))
	}
	if r.ans == nil || r.pending {
		return rows
	}
	if a := r.ans; a.rpcErr != nil || a.errText != "" {
		rows = append(rows, r.errorLines(st, w, h-len(rows))...)
	}
	return rows
}

// fit sets the rows the document has in a pane body of w×h (lastH) and
// keeps the cursor on screen in them: the rows may be fewer than when the
// cursor last moved (a smaller screen, the search field open, an error
// shown); then highlights the lines that show. Update and SetSize call
// it; View only draws what it left.
func (r *responseView) fit(st *styles, w, h int) {
	r.lastH = max(h-len(r.head(st, w, h)), 1)
	r.follow()
	r.highlight(st)
}

// rows renders the body rows of the pane (w×h), from the first line the
// view shows (off, which fit keeps the cursor in).
func (r *responseView) rows(st *styles, w, h int, focused bool) []string {
	rows := r.head(st, w, h)
	if r.ans == nil {
		return append(rows, "", st.Dim.Render("  No answer yet."), "", st.Dim.Render("  "+r.empty))
	}
	if r.pending {
		rows = append(rows, st.Dim.Render("  formatting…"))
		return rows
	}
	d := r.current()
	if d == nil {
		return rows
	}
	avail := h - len(rows)
	isMatch := map[int]bool{}
	if r.matchDoc == d {
		for _, m := range r.matches {
			if m >= r.off {
				isMatch[m] = true
			}
			if len(isMatch) > avail {
				break
			}
		}
	}
	f := r.folds[d]
	for i, k := r.off, 0; i < d.len() && k < avail; i, k = r.next(d, i), k+1 {
		g := "  "
		if isMatch[i] {
			g = st.Match.Render("▌") + " "
		}
		if focused && i == r.cur {
			g = st.Accent.Render("›") + " "
			if isMatch[i] {
				g = st.Match.Render("›") + " "
			}
		}
		l := r.line(st, d, i)
		if isMatch[i] && r.matchQ != "" {
			l = markMatches(st, d.line(i), r.matchQ)
		}
		if c, ok := f.closeOf(i); ok {
			n := c - i - 1
			_, cl := d.body(c)
			cl = strings.TrimLeft(cl, " ")
			l += st.Dim.Render(fmt.Sprintf(" … %d lines ", n)) + st.hl.Line(cl)
		}
		if r.xoff > 0 {
			l = ansi.Cut(l, r.xoff, r.xoff+w)
		}
		rows = append(rows, g+l)
	}
	return rows
}

// ScrollX scrolls the view sideways by n columns (long lines).
func (r *responseView) ScrollX(n int) {
	r.xoff = max(r.xoff+n, 0)
}

// markMatches draws a line with every case-insensitive occurrence of q
// emphasised (the line's JSON colours give way to the matches).
func markMatches(st *styles, line, q string) string {
	line = human.Clip(line, 4096)
	var sb strings.Builder
	n := len(q)
	last := 0
	for i := 0; i+n <= len(line); {
		if strings.EqualFold(line[i:i+n], q) {
			sb.WriteString(render.Sanitize(line[last:i]))
			sb.WriteString(st.Match.Render(render.Sanitize(line[i : i+n])))
			i += n
			last = i
			continue
		}
		i++
	}
	sb.WriteString(render.Sanitize(line[last:]))
	return sb.String()
}

// maxErrorText bounds how much of an error's text the pane wraps.
const maxErrorText = 16 << 10

// errorLines says what went wrong, wrapped to w cells: the JSON-RPC
// error's code, meaning and message, or why the call failed. It takes at
// most h rows (half of them when the error object follows); a cut ends
// with r.more.
func (r *responseView) errorLines(st *styles, w, h int) []string {
	a := r.ans
	var badge, text string
	if e := a.rpcErr; e != nil {
		badge = fmt.Sprintf("error %d", e.Code)
		if m := e.Meaning(); m != "" {
			badge += " (" + m + ")"
		}
		text = e.Message
		h = max(h/2, 2)
	} else if a.errText != "" {
		badge, text = a.outcome, a.errText
	} else {
		return nil
	}
	b := st.ErrBadge.Render(badge)
	// No more than the rows can show is wrapped (on every frame).
	keep := min(maxErrorText, (max(h, 1)+1)*max(w, 1)*4)
	lines := wrapText(render.Sanitize(human.Clip(text, keep)), w-ansi.StringWidth(b)-1, w)
	if len(lines) > h {
		lines = lines[:max(h, 1)]
		lines[len(lines)-1] = human.Truncate(lines[len(lines)-1]+" …", w-ansi.StringWidth(r.more)-1) + " " + st.Dim.Render(r.more)
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = st.Err.Render(l)
	}
	out[0] = b + " " + out[0]
	return out
}

// titles returns the pane title and its right-hand note.
func (r *responseView) titles(st *styles) (string, string) {
	a := r.ans
	if a == nil {
		return "Response", ""
	}
	if a.title != "" {
		return "Response · " + render.Sanitize(a.title), ""
	}
	mode := "pretty"
	if r.rawMode {
		mode = "envelope"
	}
	t := fmt.Sprintf("Response · %s · %s · %s · %s", render.Sanitize(a.req.Method), a.outcome, human.Duration(a.elapsed), human.Bytes(int64(a.size)))
	right := mode
	if r.partial {
		right = "formatting… · " + mode
	}
	if d := r.current(); r.folding && d != nil && d.len() >= foldNoteAbove {
		right = "folding… · " + mode
	}
	if !r.jq.Empty() {
		right = "jq: " + render.Sanitize(r.jq.String())
	}
	if len(r.matches) > 0 {
		right = fmt.Sprintf("%d/%d · %s", r.mi+1, len(r.matches), right)
	}
	if r.xoff > 0 {
		right = fmt.Sprintf("→%d · %s", r.xoff, right)
	}
	return t, st.Dim.Render(right)
}

// envelopeOf builds the envelope document's text: the request sent and the
// answer received, each pretty-printed.
func envelopeOf(a *answer) []byte {
	var b strings.Builder
	b.WriteString("[")
	if len(a.sent) > 0 && json.Valid(a.sent) {
		b.Write(a.sent)
	} else {
		b.WriteString("null")
	}
	b.WriteString(",")
	if len(a.raw) > 0 && json.Valid(a.raw) {
		b.Write(a.raw)
	} else {
		b.WriteString("null")
	}
	b.WriteString("]")
	return []byte(b.String())
}
