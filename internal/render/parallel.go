package render

import (
	"bytes"
	"sync"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// Printing one large array or object on several cores.
//
// When the caller knows where a document that is one array or object can
// be cut (Options.Cuts: commas between its elements, as ipc's scan notes
// them for a large result while checking it), its runs of elements between
// the cuts are printed at once by a few goroutines into memory, and written
// in order by the caller's goroutine between the container's brackets and
// commas. Finding the cuts here would cost a second scan, as much CPU as
// the checking scan: two cores would finish no sooner.
//
// A part prints exactly the bytes the one printer would have printed there
// (its elements at depth 1, after the '[' or ','), so the output is the same
// byte for byte; the tests check it against the one printer. A part that
// does not print whole (a cut that was not between elements, or invalid
// JSON there) is never written: the one printer takes over from that
// part's start, in the state it would have had there, to the end of the
// input, and so reports the error as it always does. It takes over too at a
// part longer than maxPart (an element too large to cut around), so what is
// held in memory stays bounded: at most window parts' output.
const (
	maxPart         = 1 << 20 // a longer part is printed by the one printer
	maxPartPrinters = 4       // goroutines printing parts, at most
)

// part is a run of the container's elements, from at to end: end is the
// comma after them, or the container's closer in the last part.
type part struct {
	at, end int
	first   bool          // right after the opening bracket
	last    bool          // ends at the closer (whose kind is checked when written)
	done    chan struct{} // closed when printed
	out     []byte        // the part's output, when ok
	cur     class         // the colour class at the end of out
	ok      bool
}

// parallel prints the value at the start of the input, and the values
// after it, as values does; a first value that is an array or object cut
// at cuts (offsets of commas between its elements, ascending) is printed in
// parts on n goroutines, parts longer than most by the one printer. It
// returns the first syntax error, as values does.
func (p *printer) parallel(n int, cuts []int, most int) error {
	b := p.buf[:p.end]
	o := 0
	for o < len(b) && isSpace(b[o]) {
		o++
	}
	e := len(b) - 1 // the container's closer, if the input is one container
	for e > o && isSpace(b[e]) {
		e--
	}
	if o >= e || (b[o] != '[' && b[o] != '{') || !cutsFit(b, cuts, o, e) {
		return p.values()
	}
	open := b[o]
	parts := make([]*part, 0, len(cuts)+1)
	at := o + 1
	for k := 0; k <= len(cuts); k++ {
		end := e
		if k < len(cuts) {
			end = cuts[k]
		}
		parts = append(parts, &part{at: at, end: end, first: k == 0, done: make(chan struct{})})
		at = end + 1
	}
	parts[len(parts)-1].last = true

	p.pos = o
	p.punct(open) // as step prints it
	p.stack = append(p.stack[:0], open)
	p.state = stOpen

	// At most window parts are printed and not yet written: n at work and
	// one done, waiting its turn (2n held 2-4 MB more at peak for the 10 MB
	// answer coloured, and was no faster).
	window := n + 1
	jobs := make(chan *part, window)
	free := make(chan []byte, window)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(n)
	for range n {
		go func() {
			defer wg.Done()
			var stack []byte
			for pt := range jobs {
				select {
				case <-quit:
				default:
					var buf []byte
					select {
					case buf = <-free:
					default:
						buf = make([]byte, 0, 2*(pt.end-pt.at)+1024)
					}
					stack = p.printPart(pt, open, buf, stack)
				}
				close(pt.done)
			}
		}()
	}
	defer func() {
		close(quit)
		close(jobs)
		wg.Wait()
	}()

	next := 0 // the next part to give a printer
	for k, pt := range parts {
		for next < len(parts) && next-k < window && parts[next].end-parts[next].at <= most {
			jobs <- parts[next]
			next++
		}
		if k == next { // not given: longer than most
			return p.takeOver(pt.at, pt.first, open)
		}
		<-pt.done
		if pt.ok && pt.last && b[pt.end] != closerOf(open) {
			pt.ok = false // the one printer reports the wrong closer
		}
		if !pt.ok {
			return p.takeOver(pt.at, pt.first, open)
		}
		p.flush()
		if p.werr == nil {
			_, p.werr = p.w.Write(pt.out)
		}
		if p.werr != nil {
			return nil // finish reports it
		}
		p.last = pt.out[len(pt.out)-1]
		p.lastR = textsafe.LastRune(pt.out)
		p.cur = pt.cur
		select {
		case free <- pt.out[:0]:
		default:
		}
		pt.out = nil
		if pt.last {
			p.stack = p.stack[:0]
			p.newline(0)
			p.punct(b[pt.end])
			p.pos = pt.end + 1
			p.state = stAfter
			if len(bytes.TrimLeft(b[p.pos:], " \t\r\n")) > 0 {
				p.line, p.lineStart = lineAt(b, p.pos)
			}
			p.endValue()
			return p.values()
		}
		p.setClass(clPunct)
		p.out = append(p.out, ',')
	}
	return nil // not reached: the last part returns
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// cutsFit reports whether cuts are ascending commas strictly between o and e.
func cutsFit(b []byte, cuts []int, o, e int) bool {
	last := o
	for _, c := range cuts {
		if c <= last || c >= e || b[c] != ',' {
			return false
		}
		last = c
	}
	return len(cuts) > 0
}

// takeOver goes on with the one printer from at, the start of a part, in
// the state it would have had there: after the opening bracket (first) or
// after a comma, which the caller has printed.
func (p *printer) takeOver(at int, first bool, open byte) error {
	p.pos = at
	p.line, p.lineStart = lineAt(p.buf[:p.end], at)
	p.stack = append(p.stack[:0], open)
	if first {
		p.state = stOpen
	} else {
		p.newline(1)
		p.state = stValue
		if open == '{' {
			p.state = stKey
		}
	}
	if err := p.valueFrom(); err != nil {
		return err
	}
	p.endValue()
	return p.values()
}

// lineAt returns the 1-based line of b[at] and the offset its line starts at.
func lineAt(b []byte, at int) (line int, start int64) {
	head := b[:at]
	return 1 + bytes.Count(head, []byte{'\n'}), int64(bytes.LastIndexByte(head, '\n') + 1)
}

// printPart prints pt's elements into buf, as the one printer would after
// the bracket or comma before them, and sets pt.ok when they printed whole.
// stack is the goroutine's own, returned for the next part.
func (p *printer) printPart(pt *part, open byte, buf, stack []byte) []byte {
	cur := clPunct
	if p.hl != nil {
		cur = p.hl.canon[clPunct]
	}
	q := printer{
		buf:      p.buf[pt.at:pt.end],
		end:      pt.end - pt.at,
		eof:      true,
		line:     1,
		out:      buf,
		indent:   p.indent,
		hl:       p.hl,
		cur:      cur, // after the bracket or the comma
		stack:    append(stack[:0], open),
		state:    stOpen, // its newline is the one after a comma, too
		terminal: p.terminal,
		part:     true,
	}
	err := q.valueFrom()
	if _, more := q.skipWS(); err == nil && !more && len(q.stack) == 1 && q.state == stAfter && len(q.out) > 0 {
		pt.out, pt.cur, pt.ok = q.out, q.cur, true
	}
	return q.stack
}
