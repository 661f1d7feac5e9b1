package render

import (
	"bytes"
	"sync"

	"github.com/ecoPrimals/primalscope/internal/jsoncut"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// Printing one large array or object on several cores.
//
// A document of parallelMin bytes or more that begins with an array or an
// object is cut into parts after the commas between its elements; the parts
// are printed at once by a few goroutines into memory and written in order
// by the caller's goroutine, between the container's brackets and commas.
// The cuts are found by jsoncut, a scan of strings and brackets only,
// running ahead on its own goroutine.
//
// A part prints exactly the bytes the one printer would have printed there
// (its elements at depth 1, after the '[' or ','), so the output is the same
// byte for byte; the tests check it against the one printer. A part that
// does not print whole (a cut the scan got wrong, or invalid JSON there) is
// never written: the one printer takes over from that part's start, in the
// state it would have had there, to the end of the input, and so reports
// the error as it always does. It takes over too where an element is too
// large to cut around (maxPart), so what is held in memory stays bounded:
// at most window parts' output.
const (
	parallelMin     = 2 << 20   // smaller documents print on one goroutine
	partSize        = 128 << 10 // a part ends at the first comma after this many bytes
	maxPart         = 1 << 20   // a part that would be longer is printed by the one printer
	maxPartPrinters = 4         // goroutines printing parts, at most
)

// part is a run of the container's elements (see jsoncut) being printed.
type part struct {
	jsoncut.Part
	done chan struct{} // closed when printed, or when not to be
	out  []byte        // the part's output, when ok
	cur  class         // the colour class at the end of out
	ok   bool
}

// parallel prints the value at the start of the input, and the values
// after it, as values does, printing a large first container's parts on n
// goroutines, in parts of about size bytes, at most most. It returns the
// first syntax error, as values does.
func (p *printer) parallel(n, size, most int) error {
	b := p.buf[:p.end]
	o := 0
	for o < len(b) && (b[o] == ' ' || b[o] == '\t' || b[o] == '\r' || b[o] == '\n') {
		o++
	}
	if o == len(b) || (b[o] != '[' && b[o] != '{') {
		return p.values()
	}
	open := b[o]
	p.pos = o
	p.punct(open) // as step prints it
	p.stack = append(p.stack[:0], open)
	p.state = stOpen

	window := 2 * n
	quit := make(chan struct{})
	order := make(chan *part, window)
	jobs := make(chan *part, window)
	free := make(chan []byte, window+n)
	var wg sync.WaitGroup
	wg.Add(1 + n)
	go func() {
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		jsoncut.Cut(b, o+1, size, most, quit, func(cp jsoncut.Part) bool {
			pt := &part{Part: cp, done: make(chan struct{})}
			if pt.Stop {
				close(pt.done) // not printed: the one printer takes over
			}
			select {
			case order <- pt:
			case <-quit:
				return false
			}
			if pt.Stop {
				return false
			}
			select {
			case jobs <- pt:
				return true
			case <-quit:
				return false
			}
		})
	}()
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
						buf = make([]byte, 0, 2*(pt.End-pt.At)+1024)
					}
					stack = p.printPart(pt, open, buf, stack)
				}
				close(pt.done)
			}
		}()
	}
	defer func() {
		close(quit)
		for range order { // lets the cutter end
		}
		wg.Wait()
	}()

	for pt := range order {
		<-pt.done
		if pt.ok && pt.Last && b[pt.End] != closerOf(open) {
			pt.ok = false // the one printer reports the wrong closer
		}
		if !pt.ok {
			return p.takeOver(pt.At, pt.First, open)
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
		if pt.Last {
			p.stack = p.stack[:0]
			p.newline(0)
			p.punct(b[pt.End])
			p.pos = pt.End + 1
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
	// The cutter ended without a last part: it cannot (see jsoncut.Cut).
	return p.takeOver(len(b), false, open)
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
	q := printer{
		buf:      p.buf[pt.At:pt.End],
		end:      pt.End - pt.At,
		eof:      true,
		line:     1,
		out:      buf,
		indent:   p.indent,
		hl:       p.hl,
		cur:      clPunct, // after the bracket or the comma
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
