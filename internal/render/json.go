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
	terminal bool
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
	if len(p.out) == 0 {
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
	if p.hl != nil && c != p.cur {
		p.out = append(p.out, p.hl.sgr[c]...)
		p.cur = c
	}
}

func (p *printer) errAt(msg string) error {
	off := p.base + int64(p.pos)
	return &SyntaxError{Msg: msg, Offset: off, Line: p.line, Column: int(off-p.lineStart) + 1}
}

// skipWS skips whitespace and returns the next byte without consuming it.
func (p *printer) skipWS() (byte, bool) {
	if c := p.next(); c > ' ' {
		return c, true
	}
	return p.skipWSSlow()
}

// next returns the next byte, or 0 when none is buffered. Callers check it
// before calling skipWS (which the compiler does not inline): the usual
// case, no whitespace (compact input), then costs no call.
func (p *printer) next() byte {
	if p.pos < p.end {
		return p.buf[p.pos]
	}
	return 0
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

func (p *printer) run() error {
	var err error
	for err == nil {
		if _, ok := p.skipWS(); !ok {
			break
		}
		if err = p.value(); err == nil {
			p.setClass(clNone)
			p.out = append(p.out, '\n')
			p.maybeFlush()
		}
	}
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

// value prints one JSON value at p.pos (after whitespace).
func (p *printer) value() error {
	wantValue := true
	for {
		if wantValue {
			c, ok := p.next(), true
			if c <= ' ' {
				c, ok = p.skipWS()
			}
			if !ok {
				return p.errAt("unexpected end of input, expected a value")
			}
			switch {
			case c == '{' || c == '[':
				if len(p.stack) >= MaxDepth {
					return p.errAt(fmt.Sprintf("nested deeper than %d", MaxDepth))
				}
				p.punct(c)
				p.stack = append(p.stack, c)
				closer := byte('}')
				if c == '[' {
					closer = ']'
				}
				c2, ok := p.next(), true
				if c2 <= ' ' {
					c2, ok = p.skipWS()
				}
				if !ok {
					return p.errAt(errUnexpectedEOF.Error())
				}
				if c2 == closer {
					p.punct(c2)
					p.stack = p.stack[:len(p.stack)-1]
					break
				}
				p.newline(len(p.stack))
				if c == '{' {
					if err := p.member(); err != nil {
						return err
					}
				}
				continue
			case c == '"':
				if !p.strFast(clString) {
					if err := p.str(clString); err != nil {
						return err
					}
				}
			case c == '-' || (c >= '0' && c <= '9'):
				if !p.numberFast() {
					if err := p.number(); err != nil {
						return err
					}
				}
			case c == 't':
				if !p.literalFast("true", clTrue) {
					if err := p.literal("true", clTrue); err != nil {
						return err
					}
				}
			case c == 'f':
				if !p.literalFast("false", clFalse) {
					if err := p.literal("false", clFalse); err != nil {
						return err
					}
				}
			case c == 'n':
				if !p.literalFast("null", clNull) {
					if err := p.literal("null", clNull); err != nil {
						return err
					}
				}
			default:
				return p.errAt(fmt.Sprintf("unexpected %s, expected a value", quoteByte(c)))
			}
		}
		// After a value.
		p.maybeFlush()
		if len(p.stack) == 0 {
			return nil
		}
		c, ok := p.next(), true
		if c <= ' ' {
			c, ok = p.skipWS()
		}
		if !ok {
			return p.errAt(errUnexpectedEOF.Error())
		}
		top := p.stack[len(p.stack)-1]
		switch {
		case c == ',':
			p.punct(',')
			p.newline(len(p.stack))
			if top == '{' {
				if err := p.member(); err != nil {
					return err
				}
			}
			wantValue = true
		case (top == '{' && c == '}') || (top == '[' && c == ']'):
			p.stack = p.stack[:len(p.stack)-1]
			p.newline(len(p.stack))
			p.punct(c)
			wantValue = false
		default:
			closer := "]"
			if top == '{' {
				closer = "}"
			}
			return p.errAt(fmt.Sprintf("unexpected %s, expected , or %s", quoteByte(c), closer))
		}
	}
}

// member prints an object member's name and colon.
func (p *printer) member() error {
	c, ok := p.next(), true
	if c <= ' ' {
		c, ok = p.skipWS()
	}
	if !ok {
		return p.errAt("unexpected end of input, expected a member name")
	}
	if c != '"' {
		return p.errAt(fmt.Sprintf("unexpected %s, expected a member name", quoteByte(c)))
	}
	if !p.strFast(clKey) {
		if err := p.str(clKey); err != nil {
			return err
		}
	}
	c, ok = p.next(), true
	if c <= ' ' {
		c, ok = p.skipWS()
	}
	if !ok {
		return p.errAt("unexpected end of input, expected :")
	}
	if c != ':' {
		return p.errAt(fmt.Sprintf("unexpected %s, expected :", quoteByte(c)))
	}
	p.punct(':')
	if p.indent > 0 {
		p.out = append(p.out, ' ')
	}
	return nil
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

// The fast paths below print a token that is whole in the buffer and
// valid, in one scan and one copy; they report whether they did. When
// they do not (the token runs past what is buffered, needs escaping, or is
// invalid), nothing is consumed or written and the general method prints
// it, fills the buffer, escapes and reports errors. Both write the same
// bytes (TestJSONMatchesReference, FuzzJSONMatchesReference).

// ended reports whether a token ending at i (exclusive) is delimited: the
// next byte is buffered and may follow a value, or the input ends there.
func (p *printer) ended(i int) bool {
	if i < p.end {
		return !glued[p.buf[i]]
	}
	return p.eof
}

// strFast prints the string at p.pos if it is whole in the buffer, no
// longer than maxChunk and needs no change: printable ASCII, valid
// escapes and, unless for a terminal, UTF-8 runes above U+009F.
func (p *printer) strFast(cl class) bool {
	b := p.buf[:min(p.end, p.pos+maxChunk)]
	j := p.pos + 1
	for {
		for j < len(b) && strByte[b[j]] {
			j++
		}
		if j >= len(b) {
			return false
		}
		switch c := b[j]; {
		case c == '"':
			p.setClass(cl)
			p.out = append(p.out, b[p.pos:j+1]...)
			p.pos = j + 1
			return true
		case c == '\\':
			if j+1 >= len(b) {
				return false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return false
				}
				j += 6
			default:
				return false
			}
		case c >= utf8.RuneSelf && !p.terminal:
			r, size := utf8.DecodeRune(b[j:])
			if r <= 0x9f || (r == utf8.RuneError && size == 1) {
				return false
			}
			j += size
		default:
			return false
		}
	}
}

// numberFast prints the number at p.pos if it is whole in the buffer and
// valid.
func (p *printer) numberFast() bool {
	b := p.buf[:min(p.end, p.pos+maxChunk)]
	i := p.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == k {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		k := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == k {
			return false
		}
	}
	if i == len(b) && len(b) < p.end || !p.ended(i) {
		return false
	}
	p.setClass(clNumber)
	p.out = append(p.out, b[p.pos:i]...)
	p.pos = i
	return true
}

// literalFast prints word (true, false, null) if it is at p.pos, whole in
// the buffer and delimited.
func (p *printer) literalFast(word string, cl class) bool {
	i := p.pos + len(word)
	if i > p.end || string(p.buf[p.pos:i]) != word || !p.ended(i) {
		return false
	}
	p.setClass(cl)
	p.out = append(p.out, word...)
	p.pos = i
	return true
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
