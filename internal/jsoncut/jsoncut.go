// Package jsoncut cuts a large JSON array or object into runs of its
// elements, so that the runs can be checked or printed on several cores at
// once. The cut follows strings (with their escapes) and brackets only:
// whoever takes a run must check it, and a run that does not check whole
// means the cut was wrong there (the JSON is invalid), never that the JSON
// is.
package jsoncut

import "bytes"

// Part is a run of a container's elements: from At to End, where End is
// the comma after them or, in the last part, the container's closer (its
// kind is not checked here).
type Part struct {
	At, End int
	First   bool // right after the opening bracket
	Last    bool // ends at the closer
	// Stop: the cut could not go on from At (the input ends inside the
	// container, or the next part would be longer than the bound): the
	// rest from At is for the caller to take in one piece. It is the last
	// part given.
	Stop bool
}

// Cut scans b from from, just inside a container's opening bracket, and
// gives each part to emit in order, until emit returns false or quit is
// closed. A part ends at the first comma between elements after size
// bytes; a part that would run past most bytes is given as Stop.
func Cut(b []byte, from, size, most int, quit <-chan struct{}, emit func(Part) bool) {
	start, depth := from, 1
	stop := func() { emit(Part{At: start, End: start, First: start == from, Stop: true}) }
	for i := from; i < len(b); i++ {
		switch b[i] {
		case '"':
			j := StringEnd(b, i)
			if j < 0 {
				stop()
				return
			}
			i = j
		case '[', '{':
			depth++
		case ']', '}':
			if depth--; depth == 0 {
				emit(Part{At: start, End: i, First: start == from, Last: true})
				return
			}
		case ',':
			if depth != 1 || i-start < size {
				break
			}
			if !emit(Part{At: start, End: i, First: start == from}) {
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

// StringEnd returns the index of the quote that ends the string opened at
// b[i], or -1 when the input ends first.
func StringEnd(b []byte, i int) int {
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
