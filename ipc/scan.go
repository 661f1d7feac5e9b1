package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// The fast path of DecodeMessage: a validating scanner over the top-level
// object that records each member's raw value, so the common frame is
// classified without reflection. Its verdicts match encoding/json's
// (FuzzDecodeMessageMatchesStdlib checks it).

const maxScanDepth = 10000

var errDepth = errors.New("JSON nested too deeply")

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

func scanErr(i int, what string) error { return fmt.Errorf("invalid JSON at byte %d: %s", i, what) }

// stringPlain[c] is true for the bytes a string holds as they are (all but
// the quote, the backslash and control characters): skipString passes over
// runs of them in a tight loop.
var stringPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// skipString returns the index after the string starting at b[i] == '"',
// and whether it contains escapes.
func skipString(b []byte, i int) (int, bool, error) {
	i++
	esc := false
	for {
		for i < len(b) && stringPlain[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, false, scanErr(i, "unterminated escape")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, scanErr(i, "short \\u escape")
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false, scanErr(i, "bad \\u escape")
					}
				}
				i += 6
			default:
				return 0, false, scanErr(i, "bad escape")
			}
		default: // c < 0x20
			return 0, false, scanErr(i, "control character in string")
		}
	}
	return 0, false, scanErr(i, "unterminated string")
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return 0, scanErr(start, "bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, scanErr(start, "bad fraction")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, scanErr(start, "bad exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i, nil
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, scanErr(i, "bad literal")
	}
	return i + len(lit), nil
}

// skipValue returns the index after the value starting at b[i] (no leading
// whitespace).
func skipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, scanErr(i, "unexpected end")
	}
	switch c := b[i]; {
	case c == '"':
		end, _, err := skipString(b, i)
		return end, err
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return 0, errDepth
		}
		return skipContainer(b, i, depth+1, nil)
	}
	return skipScalar(b, i)
}

// skipScalar returns the index after the literal or number at b[i].
func skipScalar(b []byte, i int) (int, error) {
	switch c := b[i]; {
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(b, i)
	}
	return 0, scanErr(i, "unexpected character")
}

// skipContainer returns the index after the array or object at b[i],
// nested depth deep. It is one loop over the container and everything in
// it, with a stack of the closers of the containers open (a call a nested
// container, as before, cost as much as the values: a 10 MB answer of
// small objects is mostly containers and short values).
//
// cuts, when not nil, is told of the commas between the container's own
// elements (see cutNotes).
func skipContainer(b []byte, i, depth int, cuts *cutNotes) (int, error) {
	var small [32]byte
	open := append(small[:0], closerOf(b[i])) // the closers of the open containers
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == open[0] {
		return i + 1, nil
	}
	for {
		// At a member (in an object) or a value (in an array): the first
		// of the innermost container, or one after a comma.
		close := open[len(open)-1]
		if close == '}' {
			if i >= len(b) || b[i] != '"' {
				return 0, scanErr(i, "want a member name")
			}
			if j := plainStringEnd(b, i); j > 0 {
				i = j
			} else {
				var err error
				if i, _, err = skipString(b, i); err != nil {
					return 0, err
				}
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, scanErr(i, "want ':'")
			}
			i = skipWS(b, i+1)
		}
		if i >= len(b) {
			return 0, scanErr(i, "unexpected end")
		}
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth+len(open)-1 >= maxScanDepth {
				return 0, errDepth
			}
			open = append(open, closerOf(c))
			i = skipWS(b, i+1)
			if i < len(b) && b[i] == open[len(open)-1] {
				open = open[:len(open)-1]
				i++
				break // an empty container: a value
			}
			continue
		case c == '"':
			if j := plainStringEnd(b, i); j > 0 {
				i = j
				break
			}
			var err error
			if i, _, err = skipString(b, i); err != nil {
				return 0, err
			}
		default:
			var err error
			if i, err = skipScalar(b, i); err != nil {
				return 0, err
			}
		}
		// After a value: a comma, or the end of containers.
		for {
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, scanErr(i, "unexpected end")
			}
			if b[i] == open[len(open)-1] {
				open = open[:len(open)-1]
				i++
				if len(open) == 0 {
					return i, nil
				}
				continue
			}
			if b[i] != ',' {
				return 0, scanErr(i, "want ',' or the end")
			}
			if cuts != nil && len(open) == 1 && i-cuts.last >= cuts.every {
				cuts.at = append(cuts.at, i)
				cuts.last = i
			}
			i = skipWS(b, i+1)
			break
		}
	}
}

// plainStringEnd returns the index after the string opened at b[i] if it
// holds no escape and no control character (most do), else 0: skipString
// then checks it. Small enough to be inlined in the container loop.
func plainStringEnd(b []byte, i int) int {
	j := i + 1
	for j < len(b) && stringPlain[b[j]] {
		j++
	}
	if j < len(b) && b[j] == '"' {
		return j + 1
	}
	return 0
}

func closerOf(c byte) byte {
	if c == '{' {
		return '}'
	}
	return ']'
}

// scanTopObject calls member for every member of the object b holds
// (whitespace around it allowed) with its raw name (quotes included) and raw
// value. It fails if b is not exactly one valid JSON object.
func scanTopObject(b []byte, member func(name, value []byte, cuts []int) error) error {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return scanErr(i, "not an object")
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return scanErr(i, "want a member name")
			}
			nameEnd, _, err := skipString(b, i)
			if err != nil {
				return err
			}
			name := b[i:nameEnd]
			i = skipWS(b, nameEnd)
			if i >= len(b) || b[i] != ':' {
				return scanErr(i, "want ':'")
			}
			i = skipWS(b, i+1)
			vEnd, cuts, err := skipMemberValue(b, i)
			if err != nil {
				return err
			}
			if err := member(name, b[i:vEnd], cuts); err != nil {
				return err
			}
			i = skipWS(b, vEnd)
			if i >= len(b) {
				return scanErr(i, "unexpected end")
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return scanErr(i, "want ',' or '}'")
			}
			i = skipWS(b, i+1)
		}
	}
	if skipWS(b, i) != len(b) {
		return scanErr(i, "text after the object")
	}
	return nil
}

// unquote decodes a raw JSON string token (quotes included).
func unquote(raw []byte) (string, error) { return (*nameCache)(nil).unquote(raw) }

// nameCache holds the last few short strings a connection decoded, so
// that the next message naming the same method (or "2.0") shares the
// string instead of allocating its own. Only the reading goroutine uses
// it; nil caches nothing.
type nameCache struct {
	s    [8]string
	next int
}

// maxCachedName bounds the strings a nameCache holds.
const maxCachedName = 64

// unquote decodes a raw JSON string token (quotes included), taking a
// simple one (no escape, ASCII) from the cache when it is there.
func (nc *nameCache) unquote(raw []byte) (string, error) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", errors.New("not a string")
	}
	inner := raw[1 : len(raw)-1]
	simple := true
	for _, c := range inner {
		if c == '\\' || c >= 0x80 {
			simple = false
			break
		}
	}
	if simple {
		if nc == nil || len(inner) > maxCachedName {
			return string(inner), nil
		}
		for _, s := range nc.s {
			if s == string(inner) { // compared without a copy
				return s, nil
			}
		}
		s := string(inner)
		nc.s[nc.next] = s
		nc.next = (nc.next + 1) % len(nc.s)
		return s, nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// A large member value (a 10 MB result) is printed in parts on several
// cores (render.Options.Cuts); where it can be cut is noted while it is
// checked here, at no cost beyond a comparison a comma, rather than found
// again by a second scan.
const (
	cutMin   = 2 << 20  // smaller values are not cut
	cutEvery = 64 << 10 // a cut at the first comma after this many bytes (128 KiB held 4 MB more at peak, coloured)
)

// cutNotes collects the offsets of commas between a container's own
// elements, one at least every bytes after the last.
type cutNotes struct {
	at    []int
	last  int
	every int
}

// skipMemberValue is skipValue(b, i, 1) for a top-level member's value;
// for an array or object of cutMin bytes or more it also returns where it
// can be cut (the offsets, from b[i], of commas between its elements).
func skipMemberValue(b []byte, i int) (int, []int, error) {
	if len(b)-i < cutMin || (b[i] != '[' && b[i] != '{') {
		end, err := skipValue(b, i, 1)
		return end, nil, err
	}
	n := cutNotes{last: i, every: cutEvery}
	end, err := skipContainer(b, i, 2, &n) // what skipValue(b, i, 1) does
	if err != nil {
		return 0, nil, err
	}
	for k := range n.at {
		n.at[k] -= i
	}
	return end, n.at, nil
}
