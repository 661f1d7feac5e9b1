package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/itchyny/gojq"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// doc is a pretty-printed JSON document (or lines of plain text), built
// once in a command and read-only afterwards. A JSON document keeps its
// lines without their indentation (which is most of a pretty-printed
// text: a line's indentation is its depth), each ended by a newline, and
// where every docStride-th line starts and how deep it is: a line is
// found by walking at most docStride lines, and the brackets are matched
// when asked (folding), so a document costs about its compact size
// rather than four times it.
type doc struct {
	n     int    // lines
	text  string // JSON: the lines, unindented unless indent is 0, each ended by '\n'
	marks []docMark
	// indent is the spaces per depth the lines were indented by; 0 when
	// they keep their own (a text not indented by depth).
	indent int
	plainL []string // plain: the lines
	json   bool     // highlight as JSON
	plain  bool     // lines are already safe, styled text (diffs, errors)
}

// docMark is where line k·docStride starts in text, and its depth.
type docMark struct {
	off   int
	depth int32
}

// docStride is how many lines lie between two marks.
const docStride = 32

// newDoc splits pretty-printed JSON text (indented by render.DefaultIndent
// a level).
func newDoc(text string, isJSON bool) *doc { return newDocUntil(text, isJSON, nil) }

// newDocUntil is newDoc, which stops (nil) once stopped says so (nil:
// never).
func newDocUntil(text string, isJSON bool, stopped func() bool) *doc {
	if d, ok, stop := buildDoc(text, isJSON, render.DefaultIndent, stopped); ok || stop {
		return d // nil when stopped
	}
	d, _, _ := buildDoc(text, isJSON, 0, stopped)
	return d
}

// buildDoc builds a document from text whose lines are indented by indent
// spaces a level (0: kept as they are); ok is false when a line is not.
// It stops (nil, stop true) once stopped (nil: never) says so, looked at
// every stopEvery lines.
func buildDoc(text string, isJSON bool, indent int, stopped func() bool) (_ *doc, ok, stop bool) {
	d := &doc{json: isJSON, indent: indent}
	var b strings.Builder
	if indent == 0 {
		b.Grow(len(text) + 1)
	} else {
		b.Grow(len(text)/2 + 64)
	}
	depth := int32(0)
	prevOpen := false
	for first := true; first || len(text) > 0; first = false {
		l := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			l, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		body := strings.TrimLeft(l, " ")
		if prevOpen {
			depth++
		}
		if isJSON && isCloser(body) && depth > 0 {
			depth--
		}
		if indent > 0 {
			if len(l)-len(body) != int(depth)*indent && body != "" {
				return nil, false, false
			}
			l = body
		}
		if d.n%docStride == 0 {
			if stopped != nil && d.n%stopEvery == 0 && stopped() {
				return nil, false, true
			}
			d.marks = append(d.marks, docMark{off: b.Len(), depth: depth})
		}
		b.WriteString(l)
		b.WriteByte('\n')
		d.n++
		prevOpen = isJSON && isOpener(body)
	}
	d.text = b.String()
	return d, true, false
}

// isOpener reports whether a line (unindented) opens an object or array.
func isOpener(body string) bool {
	t := strings.TrimRight(body, " ")
	return t != "" && (t[len(t)-1] == '{' || t[len(t)-1] == '[')
}

// isCloser reports whether a line (unindented) closes one.
func isCloser(body string) bool {
	return body != "" && (body[0] == '}' || body[0] == ']')
}

// textDoc is a document of plain (already safe) lines.
func textDoc(lines []string) *doc {
	if len(lines) == 0 {
		lines = []string{""}
	}
	return &doc{n: len(lines), plainL: lines, plain: true}
}

// len is how many lines d has.
func (d *doc) len() int { return d.n }

// each calls fn with lines from, from+1, … (their depth and their text
// without indentation) until it returns false or the lines end.
func (d *doc) each(from int, fn func(i, depth int, body string) bool) {
	if from < 0 || from >= d.n {
		return
	}
	if d.plainL != nil {
		for i := from; i < d.n; i++ {
			if !fn(i, 0, d.plainL[i]) {
				return
			}
		}
		return
	}
	m := d.marks[from/docStride]
	off, depth := m.off, int(m.depth)
	prevOpen := false
	for i := from / docStride * docStride; i < d.n; i++ {
		e := strings.IndexByte(d.text[off:], '\n')
		body := d.text[off : off+e]
		off += e + 1
		if i%docStride == 0 {
			depth = int(d.marks[i/docStride].depth)
		} else {
			if prevOpen {
				depth++
			}
			if d.json && isCloser(strings.TrimLeft(body, " ")) && depth > 0 {
				depth--
			}
		}
		prevOpen = d.json && isOpener(strings.TrimLeft(body, " "))
		if i >= from && !fn(i, depth, body) {
			return
		}
	}
}

// body is line i without its indentation, and its depth.
func (d *doc) body(i int) (depth int, s string) {
	d.each(i, func(_, dp int, b string) bool {
		depth, s = dp, b
		return false
	})
	return depth, s
}

// line is line i as shown, indented.
func (d *doc) line(i int) string {
	depth, s := d.body(i)
	if d.indent == 0 || depth == 0 {
		return s
	}
	return strings.Repeat(" ", depth*d.indent) + s
}

// opens reports whether line i opens an object or array.
func (d *doc) opens(i int) bool {
	if !d.json || i < 0 || i >= d.n {
		return false
	}
	_, s := d.body(i)
	return isOpener(strings.TrimLeft(s, " "))
}

// closes reports whether line i closes one.
func (d *doc) closes(i int) bool {
	if !d.json || i < 0 || i >= d.n {
		return false
	}
	_, s := d.body(i)
	return isCloser(strings.TrimLeft(s, " "))
}

// closeOf is the line that closes the block line i opens (-1 when it
// opens none). It walks the block.
func (d *doc) closeOf(i int) int { return d.closeUntil(i, nil) }

// closeUntil is closeOf, whose walk stops (-1) once stopped says so
// (nil: never).
func (d *doc) closeUntil(i int, stopped func() bool) int {
	if !d.opens(i) {
		return -1
	}
	out, level := -1, 0
	d.each(i, func(j, _ int, b string) bool {
		if stopped != nil && j%stopEvery == 0 && stopped() {
			out = -1
			return false
		}
		b = strings.TrimLeft(b, " ")
		if j > i && isCloser(b) {
			if level == 1 {
				out = j
				return false
			}
			level--
		}
		if isOpener(b) {
			level++
		}
		return true
	})
	return out
}

// openOf is the line that opens the block line i closes (-1 when it
// closes none), looking back at most limit lines.
func (d *doc) openOf(i, limit int) int {
	if !d.closes(i) {
		return -1
	}
	return d.enclosing(i, limit)
}

// enclosing is the opener of the block line i is in (or closes), looking
// back at most limit lines; -1 when none is found.
func (d *doc) enclosing(i, limit int) int {
	if !d.json {
		return -1
	}
	// Walk back by marks: lines are read forwards, a stride at a time.
	level := 0
	for s := i / docStride * docStride; s >= 0 && i-s <= limit+docStride; s -= docStride {
		var opener, closer []bool
		var n int
		d.each(s, func(j, _ int, b string) bool {
			if j >= i || j-s >= docStride {
				return false
			}
			b = strings.TrimLeft(b, " ")
			opener, closer = append(opener, isOpener(b)), append(closer, isCloser(b))
			n++
			return true
		})
		for k := n - 1; k >= 0; k-- {
			j := s + k
			if i-j > limit {
				return -1
			}
			if opener[k] {
				if level == 0 {
					return j
				}
				level--
			}
			if closer[k] {
				level++
			}
		}
	}
	return -1
}

// String is the whole text as shown (indented), lines joined by newlines.
func (d *doc) String() string {
	if d.plainL != nil {
		return strings.Join(d.plainL, "\n")
	}
	if d.indent == 0 {
		return strings.TrimSuffix(d.text, "\n")
	}
	var b strings.Builder
	b.Grow(len(d.text) * 2)
	d.each(0, func(i, depth int, s string) bool {
		if i > 0 {
			b.WriteByte('\n')
		}
		for k := 0; k < depth*d.indent; k++ {
			b.WriteByte(' ')
		}
		b.WriteString(s)
		return true
	})
	return b.String()
}

// prettyDoc pretty-prints data (plain, no colours: lines are highlighted
// when drawn) and splits it. Invalid JSON is shown sanitized, line by line.
func prettyDoc(data []byte) *doc { return prettyDocUntil(data, nil) }

// prettyDocUntil is prettyDoc, which stops (nil) once stopped says so
// (nil: never): while formatting (formatUntil) and while the lines are
// split.
func prettyDocUntil(data []byte, stopped func() bool) *doc {
	if len(bytes.TrimSpace(data)) == 0 {
		return textDoc([]string{"(empty)"})
	}
	out, stop, err := formatUntil(data, stopped)
	if stop {
		return nil
	}
	if err != nil {
		var lines []string
		for _, l := range strings.Split(render.SanitizeMultiline(string(data)), "\n") {
			lines = append(lines, render.Sanitize(l))
		}
		lines = append([]string{"(not valid JSON: " + render.Sanitize(err.Error()) + ")"}, lines...)
		return textDoc(lines)
	}
	return newDocUntil(strings.TrimRight(string(out), "\n"), true, stopped)
}

// formatUntil is render.Format (pretty-printed, not highlighted), which
// stops once stopped says so (nil: never): the answer is read in by the
// printer a chunk (64 KiB) at a time, and stopped is asked before each.
// stop reports it stopped (out and err are then nothing).
func formatUntil(data []byte, stopped func() bool) (out []byte, stop bool, err error) {
	opts := render.Options{Indent: render.DefaultIndent}
	if stopped == nil {
		out, err = render.Format(data, opts)
		return out, false, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/2 + 64) // as Format
	err = render.JSON(&b, stopReader{r: bytes.NewReader(data), stopped: stopped}, opts)
	if errors.Is(err, context.Canceled) {
		return nil, true, nil
	}
	return b.Bytes(), false, err
}

// stopReader reads r until stopped says stop (then: context.Canceled).
type stopReader struct {
	r       *bytes.Reader
	stopped func() bool
}

func (s stopReader) Read(p []byte) (int, error) {
	if s.stopped() {
		return 0, context.Canceled
	}
	return s.r.Read(p)
}

// jqResult runs a jq filter on a parsed value with a time limit.
func jqRun(ctx context.Context, filter string, input any) (*doc, error) {
	q, err := gojq.Parse(filter)
	if err != nil {
		return nil, fmt.Errorf("jq: %w", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq: %w", err)
	}
	stale := ctx // cancelled: nobody wants the result (not the time limit)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	iter := code.RunWithContext(ctx, input)
	var buf bytes.Buffer
	n := 0
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if e, ok := v.(error); ok {
			var he *gojq.HaltError
			if errors.As(e, &he) && he.Value() == nil {
				break
			}
			if errors.Is(e, context.DeadlineExceeded) {
				return nil, errors.New("jq: took longer than 2 s")
			}
			return nil, fmt.Errorf("jq: %w", e)
		}
		b, err := gojq.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("jq: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
		n++
		if buf.Len() > 64<<20 {
			return nil, errors.New("jq: output larger than 64 MiB")
		}
	}
	if n == 0 {
		return textDoc([]string{"(no output)"}), nil
	}
	if d := prettyDocUntil(buf.Bytes(), func() bool { return stale.Err() != nil }); d != nil {
		return d, nil
	}
	return nil, stale.Err()
}

// parseForJQ decodes data into the values gojq works on (render.JQInput,
// as the command line's --jq does).
func parseForJQ(data []byte) (any, error) {
	v, err := render.JQInput(data)
	if err != nil {
		return nil, fmt.Errorf("jq input: %w", err)
	}
	return v, nil
}

// searchDoc finds the lines containing q (case-insensitive; the
// indentation is not searched).
func searchDoc(ctx context.Context, d *doc, q string) []int {
	var out []int
	for i, rest := 0, d.text; i < d.n; i++ {
		var l string
		if d.plainL != nil {
			l = d.plainL[i]
		} else {
			e := strings.IndexByte(rest, '\n')
			l, rest = rest[:e], rest[e+1:]
		}
		if i&0xfff == 0 && ctx.Err() != nil {
			break
		}
		if containsFold(l, q) {
			out = append(out, i)
			if len(out) >= 100000 {
				break
			}
		}
	}
	return out
}

// containsFold reports whether s contains q, ignoring case, without
// allocating (a search reads every line of a large answer; the tail
// filter every event of its ring).
func containsFold(s, q string) bool {
	if q == "" {
		return true
	}
	c := q[0]
	if c >= utf8.RuneSelf {
		for i := 0; i+len(q) <= len(s); i++ {
			if strings.EqualFold(s[i:i+len(q)], q) {
				return true
			}
		}
		return false
	}
	lo, up := c, c
	if 'A' <= c && c <= 'Z' {
		lo = c + 'a' - 'A'
	} else if 'a' <= c && c <= 'z' {
		up = c - ('a' - 'A')
	}
	for i := 0; i+len(q) <= len(s); i++ {
		if b := s[i]; (b == lo || b == up) && strings.EqualFold(s[i:i+len(q)], q) {
			return true
		}
	}
	return false
}
