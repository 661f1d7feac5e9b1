// Package render puts peer JSON and peer text onto a terminal, fast and
// safely: a streaming JSON pretty-printer and highlighter that writes ANSI
// directly, a per-line highlighter for the TUI, and sanitizers that turn
// terminal control sequences in peer data into visible escapes.
package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/themes"
)

// DefaultIndent is the usual indent width, the same as jq's.
const DefaultIndent = 2

// MaxIndent is the widest indent accepted; wider values are clamped.
const MaxIndent = 16

// MaxDepth is the deepest nesting of arrays and objects accepted; deeper
// input is a syntax error.
const MaxDepth = 10000

// maxIndentLevels caps the indentation of very deep documents, so that
// hostile nesting cannot blow up the output quadratically. Levels deeper
// than this are printed at this level's indentation.
const maxIndentLevels = 128

// Options say how JSON is printed.
type Options struct {
	// Indent is the number of spaces per nesting level. 0 prints compact
	// JSON, one value a line (like jq -c); DefaultIndent prints like jq.
	Indent int
	// Colors is the palette; nil prints plain text.
	Colors *themes.JSONColors
	// Profile is the terminal's colour profile. Unknown is taken as
	// TrueColor; NoTTY and ASCII print plain text.
	Profile colorprofile.Profile
	// Highlighter, when set, is used instead of Colors and Profile; it saves
	// compiling the palette on every call.
	Highlighter *Highlighter
	// Terminal escapes, inside strings, every character Classify does not
	// call Safe (bidirectional controls, line separators, invisible
	// characters) as JSON \uXXXX escapes, so that the output is safe for a
	// terminal and still valid JSON with the same values. Set it when the
	// output goes to a terminal; without it those characters are written as
	// they are (control characters and invalid UTF-8 are escaped either way).
	Terminal bool
	// Cuts, for JSONBytes, are offsets in the data of commas between the
	// elements of the array or object it holds (as ipc.Response.ResultCuts
	// gives them for a large result): the parts between them are printed
	// on several cores at once. The output is the same with or without
	// them; cuts that are not between elements only cost time.
	Cuts []int
}

// SyntaxError says where parsing failed. Offset is 0-based; Line and Column
// are 1-based, Column counted in bytes.
type SyntaxError struct {
	Msg    string
	Offset int64
	Line   int
	Column int
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at line %d, column %d (byte %d): %s", e.Line, e.Column, e.Offset, e.Msg)
}

const (
	inBufSize  = 64 << 10
	outBufSize = 64 << 10
	maxChunk   = 32 << 10
)

// JSON reads JSON values from r (one document, or several separated by
// whitespace, as in NDJSON) and writes them to w pretty-printed and, if
// opts has colours, highlighted. Control bytes and invalid UTF-8 inside
// strings are written as JSON escapes (\u001b, \ufffd becomes U+FFFD), so
// the output is safe for a terminal. On invalid JSON the values read so far
// are printed, then the rest of the input, sanitized and in the error
// colour, and a *SyntaxError is returned. Errors reading r or writing w are
// returned as they are, wrapped.
func JSON(w io.Writer, r io.Reader, opts Options) error {
	p := newPrinter(w, opts)
	p.r = r
	p.buf = make([]byte, inBufSize)
	return p.run()
}

// JSONBytes is JSON for input already in memory; it does not copy data.
func JSONBytes(w io.Writer, data []byte, opts Options) error {
	p := newPrinter(w, opts)
	p.buf = data
	p.end = len(data)
	p.eof = true
	if len(opts.Cuts) > 0 {
		if n := min(runtime.GOMAXPROCS(0), maxPartPrinters); n > 1 {
			return p.finish(p.parallel(n, opts.Cuts, maxPart))
		}
	}
	return p.run()
}

// Format returns data pretty-printed (and highlighted if opts has colours).
// On invalid JSON it returns what JSON would have written and the error.
func Format(data []byte, opts Options) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/2 + 64)
	err := JSONBytes(&b, data, opts)
	return b.Bytes(), err
}

type printer struct {
	// input
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	eof  bool
	rerr error
	base int64 // input offset of buf[0]

	line      int
	lineStart int64 // input offset of the current line's first byte

	// output
	w     io.Writer
	out   []byte
	werr  error
	last  byte // last byte flushed
	lastR rune // last rune flushed, if not ASCII

	indent   int
	hl       *Highlighter
	cur      class
	stack    []byte
	state    state
	terminal bool
	// part: the input is a run of the elements of one container, cut after
	// a comma (see parallel.go); its end, after an element, ends the value.
	part bool
}

func newPrinter(w io.Writer, opts Options) *printer {
	ind := opts.Indent
	if ind < 0 {
		ind = 0
	}
	if ind > MaxIndent {
		ind = MaxIndent
	}
	hl := opts.Highlighter
	if hl == nil {
		hl = NewHighlighter(opts.Colors, opts.Profile)
	}
	return &printer{
		w:        w,
		out:      make([]byte, 0, outBufSize+maxChunk+64),
		indent:   ind,
		hl:       hl,
		line:     1,
		stack:    make([]byte, 0, 64),
		terminal: opts.Terminal,
	}
}

var errUnexpectedEOF = errors.New("unexpected end of input")

func (p *printer) flush() {
	if len(p.out) == 0 || p.w == nil { // no writer: a part printed in memory (parallel.go)
		return
	}
	if p.werr == nil {
		_, p.werr = p.w.Write(p.out)
	}
	p.last = p.out[len(p.out)-1]
	p.lastR = textsafe.LastRune(p.out)
	p.out = p.out[:0]
}

// lastRune is the last rune written (0 for ASCII), for Classify: inside a
// string it is the rune before the current one as it was written (an
// escape ends in ASCII).
func (p *printer) lastRune() rune {
	if len(p.out) == 0 {
		return p.lastR
	}
	return textsafe.LastRune(p.out)
}

func (p *printer) maybeFlush() {
	if len(p.out) >= outBufSize {
		p.flush()
	}
}

// fill tries to make n bytes available at p.pos. It reports whether it did.
func (p *printer) fill(n int) bool {
	if p.end-p.pos >= n {
		return true
	}
	if p.eof {
		return false
	}
	if p.pos > 0 {
		copy(p.buf, p.buf[p.pos:p.end])
		p.base += int64(p.pos)
		p.end -= p.pos
		p.pos = 0
	}
	for empty := 0; p.end-p.pos < n; {
		m, err := p.r.Read(p.buf[p.end:])
		p.end += m
		if err != nil {
			p.eof = true
			if err != io.EOF {
				p.rerr = err
			}
			break
		}
		if m == 0 {
			if empty++; empty > 100 {
				p.eof = true
				p.rerr = io.ErrNoProgress
				break
			}
		}
	}
	return p.end-p.pos >= n
}

func (p *printer) setClass(c class) {
	if p.hl != nil && p.hl.canon[c] != p.cur {
		p.out = append(p.out, p.hl.sgr[c]...)
		p.cur = p.hl.canon[c]
	}
}

func (p *printer) errAt(msg string) error {
	off := p.base + int64(p.pos)
	return &SyntaxError{Msg: msg, Offset: off, Line: p.line, Column: int(off-p.lineStart) + 1}
}

// skipWS skips whitespace and returns the next byte without consuming it.
func (p *printer) skipWS() (byte, bool) {
	if p.pos < p.end && p.buf[p.pos] > ' ' {
		return p.buf[p.pos], true
	}
	return p.skipWSSlow()
}

func (p *printer) skipWSSlow() (byte, bool) {
	for {
		for p.pos < p.end {
			c := p.buf[p.pos]
			switch c {
			case ' ', '\t', '\r':
				p.pos++
			case '\n':
				p.pos++
				p.line++
				p.lineStart = p.base + int64(p.pos)
			default:
				return c, true
			}
		}
		if !p.fill(1) {
			return 0, false
		}
	}
}

// newlineIndent is a newline and the widest indentation newline writes
// (maxIndentLevels levels of MaxIndent spaces): a line's start is one
// append of a prefix of it.
var newlineIndent = "\n" + strings.Repeat(" ", maxIndentLevels*MaxIndent)

func (p *printer) newline(depth int) {
	if p.indent == 0 {
		return
	}
	if depth > maxIndentLevels {
		depth = maxIndentLevels
	}
	p.out = append(p.out, newlineIndent[:1+depth*p.indent]...)
}

func (p *printer) punct(c byte) {
	p.setClass(clPunct)
	p.out = append(p.out, c)
	p.pos++
}

func (p *printer) run() error { return p.finish(p.values()) }

// values prints the values from p.pos to the end of the input, each ended
// by a newline, and returns the first syntax error.
func (p *printer) values() error {
	for {
		if _, ok := p.skipWS(); !ok {
			return nil
		}
		if err := p.value(); err != nil {
			return err
		}
		p.endValue()
	}
}

// endValue ends a value printed whole.
func (p *printer) endValue() {
	p.setClass(clNone)
	p.out = append(p.out, '\n')
	p.maybeFlush()
}

// finish ends the output after values has returned err: the rest of the
// input after a syntax error, the last flush, and the error to report.
func (p *printer) finish(err error) error {
	if p.rerr != nil {
		p.setClass(clNone)
		p.flush()
		if p.werr != nil {
			return fmt.Errorf("write JSON: %w", p.werr)
		}
		return fmt.Errorf("read JSON: %w", p.rerr)
	}
	if err != nil {
		p.rest()
	}
	p.setClass(clNone)
	p.flush()
	if p.werr != nil {
		return fmt.Errorf("write JSON: %w", p.werr)
	}
	return err
}

// rest writes the unparsed remainder of the input, sanitized, in the error
// colour, and ends the output with a newline.
func (p *printer) rest() {
	p.setClass(clError)
	for p.werr == nil {
		if !p.fill(utf8.UTFMax) && p.pos == p.end {
			break
		}
		chunk := p.buf[p.pos:min(p.end, p.pos+maxChunk)]
		if !(p.eof && p.pos+len(chunk) == p.end) {
			chunk = chunk[:completeRunes(chunk)]
		}
		p.out = AppendSanitized(p.out, chunk, true)
		p.pos += len(chunk)
		p.maybeFlush()
	}
	last := p.last
	if len(p.out) > 0 {
		last = p.out[len(p.out)-1]
	}
	p.setClass(clNone)
	if last != '\n' {
		p.out = append(p.out, '\n')
	}
}

// completeRunes returns the length of b without a rune cut off at its end.
func completeRunes(b []byte) int {
	for k := 1; k < utf8.UTFMax && k <= len(b); k++ {
		if utf8.RuneStart(b[len(b)-k]) {
			if k < len(b) && !utf8.FullRune(b[len(b)-k:]) {
				return len(b) - k
			}
			return len(b)
		}
	}
	return len(b)
}

// state is where the printer is between two tokens of a value.
type state uint8

const (
	stValue state = iota // a value is next
	stOpen               // after [ or {: its closer, or its first element
	stKey                // a member's name is next
	stColon              // the colon after a member's name
	stAfter              // after a value: a comma, a closer, or the value's end
)

// value prints one JSON value at p.pos (after whitespace). The fast loop
// prints every token that is whole in the buffer and printed as it is;
// step prints the next token whatever it is (filling the buffer, escaping,
// reporting errors), and the fast loop takes over again after it. Both
// move between the same states and write the same bytes.
func (p *printer) value() error {
	p.state = stValue
	return p.valueFrom()
}

// valueFrom goes on printing the value under way, from p.state.
func (p *printer) valueFrom() error {
	for {
		if p.fast() {
			return nil
		}
		done, err := p.step()
		if err != nil || done {
			return err
		}
	}
}

// fast prints tokens from p.pos while they are whole in the buffer and need
// no change (see plainString, plainNumber, plainLiteral), with the state
// in local variables: the 10 MB answer of small values is a few million
// tokens. It stops at a token boundary before the first token it cannot
// print so, and reports whether the value ended.
func (p *printer) fast() bool {
	var (
		b      = p.buf[:p.end]
		i      = p.pos
		out    = p.out
		cur    = p.cur
		st     = p.state
		stack  = p.stack
		hl     = p.hl
		indent = p.indent
		term   = p.terminal
		eof    = p.eof
		done   bool
	)
	// setClass and newline are written out below, on the local state (a
	// closure would keep out and cur in memory).
loop:
	for {
		if st == stAfter {
			if len(out) >= outBufSize {
				p.out = out
				p.flush()
				out = p.out
			}
			if len(stack) == 0 {
				done = true
				break
			}
		}
		for i < len(b) && b[i] <= ' ' {
			switch b[i] {
			case ' ', '\t', '\r':
				i++
			case '\n':
				i++
				p.line++
				p.lineStart = p.base + int64(i)
			default:
				break loop // a control byte: step reports it
			}
		}
		if i >= len(b) {
			break // step fills the buffer or reports the end
		}
		c := b[i]
		switch st {
		case stValue:
			switch {
			case c == '"':
				j := plainString(b, i, term)
				if j < 0 {
					break loop
				}
				if hl != nil && cur != hl.canon[clString] {
					out = append(out, hl.sgr[clString]...)
					cur = hl.canon[clString]
				}
				out = append(out, b[i:j]...)
				i, st = j, stAfter
			case c == '{' || c == '[':
				if len(stack) >= MaxDepth {
					break loop
				}
				if hl != nil && cur != hl.canon[clPunct] {
					out = append(out, hl.sgr[clPunct]...)
					cur = hl.canon[clPunct]
				}
				out = append(out, c)
				stack = append(stack, c)
				i, st = i+1, stOpen
			case c == '-' || (c >= '0' && c <= '9'):
				j := plainNumber(b, i, eof)
				if j < 0 {
					break loop
				}
				if hl != nil && cur != hl.canon[clNumber] {
					out = append(out, hl.sgr[clNumber]...)
					cur = hl.canon[clNumber]
				}
				out = append(out, b[i:j]...)
				i, st = j, stAfter
			case c == 't' && plainLiteral(b, i, "true", eof):
				if hl != nil && cur != hl.canon[clTrue] {
					out = append(out, hl.sgr[clTrue]...)
					cur = hl.canon[clTrue]
				}
				out = append(out, "true"...)
				i, st = i+4, stAfter
			case c == 'f' && plainLiteral(b, i, "false", eof):
				if hl != nil && cur != hl.canon[clFalse] {
					out = append(out, hl.sgr[clFalse]...)
					cur = hl.canon[clFalse]
				}
				out = append(out, "false"...)
				i, st = i+5, stAfter
			case c == 'n' && plainLiteral(b, i, "null", eof):
				if hl != nil && cur != hl.canon[clNull] {
					out = append(out, hl.sgr[clNull]...)
					cur = hl.canon[clNull]
				}
				out = append(out, "null"...)
				i, st = i+4, stAfter
			default:
				break loop
			}
		case stOpen:
			top := stack[len(stack)-1]
			if c == closerOf(top) {
				if hl != nil && cur != hl.canon[clPunct] {
					out = append(out, hl.sgr[clPunct]...)
					cur = hl.canon[clPunct]
				}
				out = append(out, c)
				stack = stack[:len(stack)-1]
				i, st = i+1, stAfter
				continue
			}
			if indent > 0 {
				out = append(out, newlineIndent[:1+min(len(stack), maxIndentLevels)*indent]...)
			}
			st = stValue
			if top == '{' {
				st = stKey
			}
		case stKey:
			if c != '"' {
				break loop
			}
			j := plainString(b, i, term)
			if j < 0 {
				break loop
			}
			if hl != nil && cur != hl.canon[clKey] {
				out = append(out, hl.sgr[clKey]...)
				cur = hl.canon[clKey]
			}
			out = append(out, b[i:j]...)
			i, st = j, stColon
		case stColon:
			if c != ':' {
				break loop
			}
			if hl != nil && cur != hl.canon[clPunct] {
				out = append(out, hl.sgr[clPunct]...)
				cur = hl.canon[clPunct]
			}
			out = append(out, ':')
			if indent > 0 {
				out = append(out, ' ')
			}
			i, st = i+1, stValue
		case stAfter:
			top := stack[len(stack)-1]
			switch c {
			case ',':
				if hl != nil && cur != hl.canon[clPunct] {
					out = append(out, hl.sgr[clPunct]...)
					cur = hl.canon[clPunct]
				}
				out = append(out, ',')
				if indent > 0 {
					out = append(out, newlineIndent[:1+min(len(stack), maxIndentLevels)*indent]...)
				}
				i, st = i+1, stValue
				if top == '{' {
					st = stKey
				}
			case closerOf(top):
				stack = stack[:len(stack)-1]
				if indent > 0 {
					out = append(out, newlineIndent[:1+min(len(stack), maxIndentLevels)*indent]...)
				}
				if hl != nil && cur != hl.canon[clPunct] {
					out = append(out, hl.sgr[clPunct]...)
					cur = hl.canon[clPunct]
				}
				out = append(out, c)
				i = i + 1
			default:
				break loop
			}
		}
	}
	p.pos, p.out, p.cur, p.state, p.stack = i, out, cur, st, stack
	return done
}

// step prints the next token of the value in p.state, whatever it is, and
// reports whether the value ended.
func (p *printer) step() (bool, error) {
	switch p.state {
	case stValue:
		c, ok := p.skipWS()
		if !ok {
			return false, p.errAt("unexpected end of input, expected a value")
		}
		var err error
		switch {
		case c == '{' || c == '[':
			if len(p.stack) >= MaxDepth {
				return false, p.errAt(fmt.Sprintf("nested deeper than %d", MaxDepth))
			}
			p.punct(c)
			p.stack = append(p.stack, c)
			p.state = stOpen
			return false, nil
		case c == '"':
			err = p.str(clString)
		case c == '-' || (c >= '0' && c <= '9'):
			err = p.number()
		case c == 't':
			err = p.literal("true", clTrue)
		case c == 'f':
			err = p.literal("false", clFalse)
		case c == 'n':
			err = p.literal("null", clNull)
		default:
			return false, p.errAt(fmt.Sprintf("unexpected %s, expected a value", quoteByte(c)))
		}
		p.state = stAfter
		return false, err
	case stOpen:
		top := p.stack[len(p.stack)-1]
		c, ok := p.skipWS()
		if !ok {
			return false, p.errAt(errUnexpectedEOF.Error())
		}
		if c == closerOf(top) {
			p.punct(c)
			p.stack = p.stack[:len(p.stack)-1]
			p.state = stAfter
			return false, nil
		}
		p.newline(len(p.stack))
		p.state = stValue
		if top == '{' {
			p.state = stKey
		}
	case stKey:
		c, ok := p.skipWS()
		if !ok {
			return false, p.errAt("unexpected end of input, expected a member name")
		}
		if c != '"' {
			return false, p.errAt(fmt.Sprintf("unexpected %s, expected a member name", quoteByte(c)))
		}
		p.state = stColon
		return false, p.str(clKey)
	case stColon:
		c, ok := p.skipWS()
		if !ok {
			return false, p.errAt("unexpected end of input, expected :")
		}
		if c != ':' {
			return false, p.errAt(fmt.Sprintf("unexpected %s, expected :", quoteByte(c)))
		}
		p.punct(':')
		if p.indent > 0 {
			p.out = append(p.out, ' ')
		}
		p.state = stValue
	case stAfter:
		p.maybeFlush()
		if len(p.stack) == 0 {
			return true, nil
		}
		c, ok := p.skipWS()
		if !ok {
			if p.part && len(p.stack) == 1 {
				return true, nil // the end of a part: its elements are printed
			}
			return false, p.errAt(errUnexpectedEOF.Error())
		}
		top := p.stack[len(p.stack)-1]
		switch {
		case c == ',':
			p.punct(',')
			p.newline(len(p.stack))
			p.state = stValue
			if top == '{' {
				p.state = stKey
			}
		case c == closerOf(top):
			p.stack = p.stack[:len(p.stack)-1]
			p.newline(len(p.stack))
			p.punct(c)
		default:
			return false, p.errAt(fmt.Sprintf("unexpected %s, expected , or %s", quoteByte(c), string(closerOf(top))))
		}
	}
	return false, nil
}

func closerOf(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

func quoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// strByte[b] is true for bytes that are copied as they are inside strings.
var strByte = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// shortEscape is the two-character JSON escape of a control byte, if any.
var shortEscape = [256]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str prints the string at p.pos (which is '"').
func (p *printer) str(cl class) error {
	p.setClass(cl)
	p.out = append(p.out, '"')
	p.pos++
	for {
		if p.pos == p.end && !p.fill(1) {
			return p.errAt("unexpected end of input in string")
		}
		lim := min(p.end, p.pos+maxChunk)
		b := p.buf[:lim]
		i := p.pos
		for i < len(b) && strByte[b[i]] {
			i++
		}
		p.out = append(p.out, b[p.pos:i]...)
		p.pos = i
		if i == lim {
			p.maybeFlush()
			continue
		}
		switch c := p.buf[i]; {
		case c == '"':
			p.out = append(p.out, '"')
			p.pos++
			return nil
		case c == '\\':
			if !p.fill(2) {
				return p.errAt("unexpected end of input in string escape")
			}
			switch e := p.buf[p.pos+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.out = append(p.out, '\\', e)
				p.pos += 2
			case 'u':
				p.fill(6)
				for k := 2; k < 6; k++ {
					if p.pos+k >= p.end {
						return p.errAt("unexpected end of input in \\u escape")
					}
					if !isHex(p.buf[p.pos+k]) {
						return p.errAt("invalid \\u escape")
					}
				}
				p.out = append(p.out, p.buf[p.pos:p.pos+6]...)
				p.pos += 6
			default:
				return p.errAt("invalid escape in string")
			}
		case c < 0x20 || c == 0x7f:
			if e := shortEscape[c]; e != 0 {
				p.out = append(p.out, '\\', e)
			} else {
				p.out = append(p.out, '\\', 'u', '0', '0', textsafe.HexDigits[c>>4], textsafe.HexDigits[c&15])
			}
			p.pos++
			if c == '\n' {
				p.line++
				p.lineStart = p.base + int64(p.pos)
			}
		default: // c >= 0x80
			p.fill(utf8.UTFMax)
			r, size := utf8.DecodeRune(p.buf[p.pos:p.end])
			switch {
			case r == utf8.RuneError && size == 1:
				p.out = append(p.out, "\uFFFD"...)
			case r <= 0x9f:
				p.out = append(p.out, '\\', 'u', '0', '0', textsafe.HexDigits[r>>4], textsafe.HexDigits[r&15])
			case p.terminal && !textsafe.AlwaysSafe(r) && textsafe.Classify(p.lastRune(), r) != textsafe.Safe:
				p.out = appendJSONEscape(p.out, r)
			default:
				p.out = append(p.out, p.buf[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
}

// peek returns the byte at p.pos, filling the buffer if needed.
func (p *printer) peek() (byte, bool) {
	if p.pos < p.end || p.fill(1) {
		return p.buf[p.pos], true
	}
	return 0, false
}

func (p *printer) digits() int {
	n := 0
	for {
		lim := min(p.end, p.pos+maxChunk)
		b := p.buf[:lim]
		i := p.pos
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		p.out = append(p.out, b[p.pos:i]...)
		n += i - p.pos
		p.pos = i
		if i < lim {
			return n
		}
		p.maybeFlush()
		if i == p.end && !p.fill(1) {
			return n
		}
	}
}

// number prints the number at p.pos, as written.
func (p *printer) number() error {
	p.setClass(clNumber)
	c, _ := p.peek()
	if c == '-' {
		p.out = append(p.out, c)
		p.pos++
		if c, _ = p.peek(); c < '0' || c > '9' {
			return p.errAt("invalid number: expected a digit after -")
		}
	}
	if c == '0' {
		p.out = append(p.out, c)
		p.pos++
	} else {
		p.digits()
	}
	if c, ok := p.peek(); ok && c == '.' {
		p.out = append(p.out, c)
		p.pos++
		if p.digits() == 0 {
			return p.errAt("invalid number: expected a digit after .")
		}
	}
	if c, ok := p.peek(); ok && (c == 'e' || c == 'E') {
		p.out = append(p.out, c)
		p.pos++
		if c, ok := p.peek(); ok && (c == '+' || c == '-') {
			p.out = append(p.out, c)
			p.pos++
		}
		if p.digits() == 0 {
			return p.errAt("invalid number: expected a digit in the exponent")
		}
	}
	return p.delimited()
}

// delimited checks that a number or literal is not glued to more of a word.
func (p *printer) delimited() error {
	c, ok := p.peek()
	if !ok {
		return nil
	}
	if glued[c] {
		return p.errAt(fmt.Sprintf("unexpected %s after a value", quoteByte(c)))
	}
	return nil
}

// glued[b] is true for the bytes that may not follow a number or literal
// (they would be more of a word).
var glued = func() (t [256]bool) {
	for b := range 256 {
		c := byte(b)
		t[b] = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			c == '.' || c == '-' || c == '+' || c == '_'
	}
	return t
}()

// plainString returns the index after the string opened at b[i] (a '"')
// if it is whole in b, no longer than maxChunk and printed as it is:
// printable ASCII, valid escapes and, unless for a terminal, UTF-8 runes
// above U+009F. Otherwise it returns -1 (str prints it).
func plainString(b []byte, i int, terminal bool) int {
	b = b[:min(len(b), i+maxChunk)]
	j := i + 1
	for {
		for j < len(b) && strByte[b[j]] {
			j++
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c == '\\':
			if j+1 >= len(b) {
				return -1
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return -1
				}
				j += 6
			default:
				return -1
			}
		case c >= utf8.RuneSelf && !terminal:
			r, size := utf8.DecodeRune(b[j:])
			if r <= 0x9f || (r == utf8.RuneError && size == 1) {
				return -1
			}
			j += size
		default:
			return -1
		}
	}
}

// plainNumber returns the index after the number at b[i] if it is valid,
// no longer than maxChunk and delimited within b (or b ends there and eof
// says the input does). Otherwise it returns -1 (number prints it or
// reports the fault).
func plainNumber(b []byte, i int, eof bool) int {
	w := b[:min(len(b), i+maxChunk)]
	if i < len(w) && w[i] == '-' {
		i++
	}
	switch {
	case i >= len(w):
		return -1
	case w[i] == '0':
		i++
	case w[i] >= '1' && w[i] <= '9':
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(w) && w[i] == '.' {
		i++
		k := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == k {
			return -1
		}
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '+' || w[i] == '-') {
			i++
		}
		k := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		if i == k {
			return -1
		}
	}
	if !delimitedAt(b, i, eof) || i == len(w) && len(w) < len(b) {
		return -1
	}
	return i
}

// plainLiteral reports whether word (true, false, null) is at b[i] and
// delimited.
func plainLiteral(b []byte, i int, word string, eof bool) bool {
	j := i + len(word)
	return j <= len(b) && string(b[i:j]) == word && delimitedAt(b, j, eof)
}

// delimitedAt reports whether a token ending at b[i] is delimited: the
// next byte is in b and may follow a value, or b ends there and eof says
// the input does.
func delimitedAt(b []byte, i int, eof bool) bool {
	if i < len(b) {
		return !glued[b[i]]
	}
	return eof
}

func (p *printer) literal(word string, cl class) error {
	p.fill(len(word))
	avail := p.buf[p.pos:p.end]
	for i := 0; i < len(word); i++ {
		if i >= len(avail) || avail[i] != word[i] {
			if i > 0 {
				// Print the part that matched, so the error points past it.
				p.setClass(cl)
				p.out = append(p.out, word[:i]...)
				p.pos += i
			}
			if i >= len(avail) {
				return p.errAt("unexpected end of input in " + word)
			}
			return p.errAt(fmt.Sprintf("invalid literal, expected %s", word))
		}
	}
	p.setClass(cl)
	p.out = append(p.out, word...)
	p.pos += len(word)
	return p.delimited()
}

// appendJSONEscape appends r as a JSON string escape: \uXXXX, or a
// surrogate pair above U+FFFF.
func appendJSONEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		hi, lo := 0xd800+(r>>10), 0xdc00+(r&0x3ff)
		dst = append(dst, '\\', 'u', textsafe.HexDigits[hi>>12&15], textsafe.HexDigits[hi>>8&15], textsafe.HexDigits[hi>>4&15], textsafe.HexDigits[hi&15])
		r = lo
	}
	return append(dst, '\\', 'u', textsafe.HexDigits[r>>12&15], textsafe.HexDigits[r>>8&15], textsafe.HexDigits[r>>4&15], textsafe.HexDigits[r&15])
}
