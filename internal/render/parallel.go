package render

import (
	"bytes"
	"sync"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// Printing one large array or object on several cores.
//
// A document of parallelMin bytes or more that begins with an array or an
// object is cut into parts after the commas between its elements; the parts
// are printed at once by a few goroutines into memory and written in order
// by the caller's goroutine, between the container's brackets and commas.
// The cuts are found by cutParts, a scan of strings and brackets only,
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

// part is a run of a container's elements, from at to end: end is the
// comma after them, or the container's closer in the last part.
type part struct {
	at, end int
	first   bool // right after the opening bracket
	last    bool // ends at the closer (which is not checked here)
	stop    bool // not printed: the one printer takes over at at
	done    chan struct{}
	out     []byte // the part's output, when ok
	cur     class  // the colour class at the end of out
	ok      bool
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
		cutParts(b, o+1, size, most, quit, func(pt *part) bool {
			select {
			case order <- pt:
			case <-quit:
				return false
			}
			if pt.stop {
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
		for range order { // lets the cutter end
		}
		wg.Wait()
	}()

	for pt := range order {
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
		if pt.last {
			p.stack = p.stack[:0]
			p.newline(0)
			p.punct(b[pt.end]) // sets p.pos past it
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
	// The cutter ended without a last part: it cannot (see cutParts).
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
		buf:      p.buf[pt.at:pt.end],
		end:      pt.end - pt.at,
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

// cutParts scans b from from, just inside a container's opening bracket,
// and hands each part to emit in order, until emit returns false or quit
// is closed. It follows strings (with their escapes) and brackets only:
// the parts' printers check the rest. Its last part is the one ending at
// the container's closer, or one marked stop: where the scan cannot go on
// (the input ends inside the container) or a part would run past most
// bytes. A part ends at the first comma between elements after size bytes.
func cutParts(b []byte, from, size, most int, quit <-chan struct{}, emit func(*part) bool) {
	start, depth := from, 1
	mk := func(end int) *part {
		return &part{at: start, end: end, first: start == from, done: make(chan struct{})}
	}
	stop := func() {
		pt := mk(start)
		pt.stop = true
		close(pt.done)
		emit(pt)
	}
	for i := from; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := stringEnd(b, i)
			if j < 0 {
				stop()
				return
			}
			i = j
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				pt := mk(i)
				pt.last = true
				emit(pt)
				return
			}
		case ',':
			if depth != 1 {
				break
			}
			if i-start < size {
				break
			}
			if !emit(mk(i)) {
				return
			}
			start = i + 1
			select {
			case <-quit:
				return
			default:
			}
		}
		if i-start > most {
			stop()
			return
		}
	}
	stop()
}

// stringEnd returns the index of the quote that ends the string opened at
// b[i], or -1 when the input ends first.
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		bs := 0
		for m := j - 1; m > i && b[m] == '\\'; m-- {
			bs++
		}
		if bs%2 == 0 {
			return j
		}
		j++
	}
}
