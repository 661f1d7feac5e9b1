// The printer as it was before the single-pass rewrite (issue 23), kept
// as the oracle the new one is checked against: the output must stay byte
// for byte what it was (FuzzJSONMatchesReference).

package render

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

const (
	refInBufSize  = 64 << 10
	refOutBufSize = 64 << 10
	refMaxChunk   = 32 << 10
)

// JSON reads JSON values from r (one document, or several separated by
// whitespace, as in NDJSON) and writes them to w pretty-printed and, if
// opts has colours, highlighted. Control bytes and invalid UTF-8 inside
// strings are written as JSON escapes (\u001b, \ufffd becomes U+FFFD), so
// the output is safe for a terminal. On invalid JSON the values read so far
// are printed, then the rest of the input, sanitized and in the error
// colour, and a *SyntaxError is returned. Errors reading r or writing w are
// returned as they are, wrapped.
func refJSON(w io.Writer, r io.Reader, opts Options) error {
	p := refNewPrinter(w, opts)
	p.r = r
	p.buf = make([]byte, refInBufSize)
	return p.run()
}

// refJSONBytes is JSON for input already in memory; it does not copy data.
func refJSONBytes(w io.Writer, data []byte, opts Options) error {
	p := refNewPrinter(w, opts)
	p.buf = data
	p.end = len(data)
	p.eof = true
	return p.run()
}

// refFormat returns data pretty-printed (and highlighted if opts has colours).
// On invalid JSON it returns what JSON would have written and the error.
func refFormat(data []byte, opts Options) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(data) + len(data)/2 + 64)
	err := refJSONBytes(&b, data, opts)
	return b.Bytes(), err
}

type refPrinter struct {
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

func refNewPrinter(w io.Writer, opts Options) *refPrinter {
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
	return &refPrinter{
		w:        w,
		out:      make([]byte, 0, refOutBufSize+refMaxChunk+64),
		indent:   ind,
		hl:       hl,
		line:     1,
		stack:    make([]byte, 0, 64),
		terminal: opts.Terminal,
	}
}

var refErrUnexpectedEOF = errors.New("unexpected end of input")

func (p *refPrinter) flush() {
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
func (p *refPrinter) lastRune() rune {
	if len(p.out) == 0 {
		return p.lastR
	}
	return textsafe.LastRune(p.out)
}

func (p *refPrinter) maybeFlush() {
	if len(p.out) >= refOutBufSize {
		p.flush()
	}
}

// fill tries to make n bytes available at p.pos. It reports whether it did.
func (p *refPrinter) fill(n int) bool {
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

// setClass never repeats the sequence in effect: classes drawn alike are
// one (Highlighter.canon), the printer's rule since the 10 MB coloured
// answer carried a redundant sequence a member.
func (p *refPrinter) setClass(c class) {
	if p.hl != nil && p.hl.canon[c] != p.cur {
		p.out = append(p.out, p.hl.sgr[c]...)
		p.cur = p.hl.canon[c]
	}
}

func (p *refPrinter) errAt(msg string) error {
	off := p.base + int64(p.pos)
	return &SyntaxError{Msg: msg, Offset: off, Line: p.line, Column: int(off-p.lineStart) + 1}
}

// skipWS skips whitespace and returns the next byte without consuming it.
func (p *refPrinter) skipWS() (byte, bool) {
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

const refSpaces = "                                                                                                                                "

func (p *refPrinter) newline(depth int) {
	if p.indent == 0 {
		return
	}
	p.out = append(p.out, '\n')
	if depth > maxIndentLevels {
		depth = maxIndentLevels
	}
	for n := depth * p.indent; n > 0; {
		k := min(n, len(refSpaces))
		p.out = append(p.out, refSpaces[:k]...)
		n -= k
	}
}

func (p *refPrinter) punct(c byte) {
	p.setClass(clPunct)
	p.out = append(p.out, c)
	p.pos++
}

func (p *refPrinter) run() error {
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
func (p *refPrinter) rest() {
	p.setClass(clError)
	for p.werr == nil {
		if !p.fill(utf8.UTFMax) && p.pos == p.end {
			break
		}
		chunk := p.buf[p.pos:min(p.end, p.pos+refMaxChunk)]
		if !(p.eof && p.pos+len(chunk) == p.end) {
			chunk = chunk[:refCompleteRunes(chunk)]
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

// refCompleteRunes returns the length of b without a rune cut off at its end.
func refCompleteRunes(b []byte) int {
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
func (p *refPrinter) value() error {
	wantValue := true
	for {
		if wantValue {
			c, ok := p.skipWS()
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
				c2, ok := p.skipWS()
				if !ok {
					return p.errAt(refErrUnexpectedEOF.Error())
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
				if err := p.str(clString); err != nil {
					return err
				}
			case c == '-' || (c >= '0' && c <= '9'):
				if err := p.number(); err != nil {
					return err
				}
			case c == 't':
				if err := p.literal("true", clTrue); err != nil {
					return err
				}
			case c == 'f':
				if err := p.literal("false", clFalse); err != nil {
					return err
				}
			case c == 'n':
				if err := p.literal("null", clNull); err != nil {
					return err
				}
			default:
				return p.errAt(fmt.Sprintf("unexpected %s, expected a value", refQuoteByte(c)))
			}
		}
		// After a value.
		p.maybeFlush()
		if len(p.stack) == 0 {
			return nil
		}
		c, ok := p.skipWS()
		if !ok {
			return p.errAt(refErrUnexpectedEOF.Error())
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
			return p.errAt(fmt.Sprintf("unexpected %s, expected , or %s", refQuoteByte(c), closer))
		}
	}
}

// member prints an object member's name and colon.
func (p *refPrinter) member() error {
	c, ok := p.skipWS()
	if !ok {
		return p.errAt("unexpected end of input, expected a member name")
	}
	if c != '"' {
		return p.errAt(fmt.Sprintf("unexpected %s, expected a member name", refQuoteByte(c)))
	}
	if err := p.str(clKey); err != nil {
		return err
	}
	c, ok = p.skipWS()
	if !ok {
		return p.errAt("unexpected end of input, expected :")
	}
	if c != ':' {
		return p.errAt(fmt.Sprintf("unexpected %s, expected :", refQuoteByte(c)))
	}
	p.punct(':')
	if p.indent > 0 {
		p.out = append(p.out, ' ')
	}
	return nil
}

func refQuoteByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// refStrByte[b] is true for bytes that are copied as they are inside strings.
var refStrByte = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// refShortEscape is the two-character JSON escape of a control byte, if any.
var refShortEscape = [256]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}

func refIsHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// str prints the string at p.pos (which is '"').
func (p *refPrinter) str(cl class) error {
	p.setClass(cl)
	p.out = append(p.out, '"')
	p.pos++
	for {
		if p.pos == p.end && !p.fill(1) {
			return p.errAt("unexpected end of input in string")
		}
		lim := min(p.end, p.pos+refMaxChunk)
		i := p.pos
		for i < lim && refStrByte[p.buf[i]] {
			i++
		}
		p.out = append(p.out, p.buf[p.pos:i]...)
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
					if !refIsHex(p.buf[p.pos+k]) {
						return p.errAt("invalid \\u escape")
					}
				}
				p.out = append(p.out, p.buf[p.pos:p.pos+6]...)
				p.pos += 6
			default:
				return p.errAt("invalid escape in string")
			}
		case c < 0x20 || c == 0x7f:
			if e := refShortEscape[c]; e != 0 {
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
				p.out = refAppendJSONEscape(p.out, r)
			default:
				p.out = append(p.out, p.buf[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
}

// peek returns the byte at p.pos, filling the buffer if needed.
func (p *refPrinter) peek() (byte, bool) {
	if p.pos < p.end || p.fill(1) {
		return p.buf[p.pos], true
	}
	return 0, false
}

func (p *refPrinter) digits() int {
	n := 0
	for {
		c, ok := p.peek()
		if !ok || c < '0' || c > '9' {
			return n
		}
		p.out = append(p.out, c)
		p.pos++
		n++
		if n&(refMaxChunk-1) == 0 {
			p.maybeFlush()
		}
	}
}

// number prints the number at p.pos, as written.
func (p *refPrinter) number() error {
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
func (p *refPrinter) delimited() error {
	c, ok := p.peek()
	if !ok {
		return nil
	}
	if (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		c == '.' || c == '-' || c == '+' || c == '_' {
		return p.errAt(fmt.Sprintf("unexpected %s after a value", refQuoteByte(c)))
	}
	return nil
}

func (p *refPrinter) literal(word string, cl class) error {
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

// refAppendJSONEscape appends r as a JSON string escape: \uXXXX, or a
// surrogate pair above U+FFFF.
func refAppendJSONEscape(dst []byte, r rune) []byte {
	if r > 0xffff {
		r -= 0x10000
		hi, lo := 0xd800+(r>>10), 0xdc00+(r&0x3ff)
		dst = append(dst, '\\', 'u', textsafe.HexDigits[hi>>12&15], textsafe.HexDigits[hi>>8&15], textsafe.HexDigits[hi>>4&15], textsafe.HexDigits[hi&15])
		r = lo
	}
	return append(dst, '\\', 'u', textsafe.HexDigits[r>>12&15], textsafe.HexDigits[r>>8&15], textsafe.HexDigits[r>>4&15], textsafe.HexDigits[r&15])
}
