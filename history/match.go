package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Match compares what was expected with what came, structurally (as Diff
// does: key order, whitespace and 1 vs 1.0 never matter), and returns the
// changes that remain once those under an ignored path are set aside. No
// changes means they match. It is the one structural matcher: runbooks'
// equals, replay's diff and the mock's request matching all use it.
//
// An ignore path is jq-style: ".a.b", `.["odd key"]`, ".items[3]", and
// "[]" (or "[*]") for any index: ".items[].id". A change at or under an
// ignored path is ignored.
func Match(expected, actual []byte, ignore []string) ([]Change, error) {
	pats := make([][]pathSeg, 0, len(ignore))
	for _, p := range ignore {
		segs, err := parsePath(p, true)
		if err != nil {
			return nil, fmt.Errorf("match: ignore %q: %w", p, err)
		}
		pats = append(pats, segs)
	}
	changes, err := Diff(expected, actual)
	if err != nil {
		return nil, err
	}
	if len(pats) == 0 {
		return changes, nil
	}
	kept := changes[:0]
	for _, c := range changes {
		if c.Kind == Unaligned {
			kept = append(kept, c)
			continue
		}
		segs, err := parsePath(c.Path, false)
		if err == nil && ignored(segs, pats) {
			continue
		}
		kept = append(kept, c)
	}
	// An Unaligned note with nothing left under it says nothing.
	out := kept[:0]
	for i, c := range kept {
		if c.Kind == Unaligned && (i+1 >= len(kept) || !strings.HasPrefix(kept[i+1].Path, c.Path)) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// MatchParams compares a call's params with the params of a recorded call
// as Match does, with one rule more: params left out (nil or empty), null,
// {} and [] all say the call has no parameters, and match one another.
// JSON-RPC 2.0 lets a call omit params; Holon-RPC reads an omitted params as
// {}, and primalscope's own client sends {} for none on that wire; a call
// recorded over one wire is the same call made over another. It is the one
// rule for params: the mock matches requests with it.
func MatchParams(expected, actual []byte, ignore []string) ([]Change, error) {
	return Match(paramsOrNull(expected), paramsOrNull(actual), ignore)
}

// paramsOrNull is params, or null for every form of none.
func paramsOrNull(p []byte) []byte {
	if NoParams(p) {
		return []byte("null")
	}
	return p
}

// NoParams reports whether params say a call has none (MatchParams's rule):
// left out (nil or empty), null, {} or [].
func NoParams(p []byte) bool {
	t := bytes.TrimSpace(p)
	n := len(t)
	return n == 0 || string(t) == "null" ||
		n >= 2 && (t[0] == '{' && t[n-1] == '}' || t[0] == '[' && t[n-1] == ']') && len(bytes.TrimSpace(t[1:n-1])) == 0
}

// ValidPath reports whether p is a path Match can ignore.
func ValidPath(p string) bool {
	_, err := parsePath(p, true)
	return err == nil
}

// pathSeg is one step of a path: an object key, an array index, or any index.
type pathSeg struct {
	key string
	idx int
	arr bool
	any bool
}

func parsePath(p string, wild bool) ([]pathSeg, error) {
	if !strings.HasPrefix(p, ".") && !strings.HasPrefix(p, "[") {
		return nil, fmt.Errorf("a path starts with . (as .a.b or .items[].id)")
	}
	if p == "." {
		return nil, nil
	}
	var segs []pathSeg
	i := 0
	for i < len(p) {
		switch {
		case p[i] == '.' && i+1 < len(p) && p[i+1] == '[':
			i++ // ".[": the bracket follows
		case p[i] == '.':
			j := i + 1
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			if j == i+1 {
				return nil, fmt.Errorf("an empty key at %d", i)
			}
			segs = append(segs, pathSeg{key: p[i+1 : j]})
			i = j
		case p[i] == '[':
			rest := p[i+1:]
			switch {
			case strings.HasPrefix(rest, "]") || strings.HasPrefix(rest, "*]"):
				if !wild {
					return nil, fmt.Errorf("a wildcard in a change's path")
				}
				segs = append(segs, pathSeg{arr: true, any: true})
				i += 2 + strings.Index(rest, "]")
			case strings.HasPrefix(rest, `"`):
				var key string
				dec := json.NewDecoder(strings.NewReader(rest))
				if err := dec.Decode(&key); err != nil {
					return nil, fmt.Errorf("a quoted key at %d: %w", i, err)
				}
				end := i + 1 + int(dec.InputOffset())
				if end >= len(p) || p[end] != ']' {
					return nil, fmt.Errorf("no ] after the quoted key at %d", i)
				}
				segs = append(segs, pathSeg{key: key})
				i = end + 1
			default:
				j := strings.IndexByte(rest, ']')
				if j < 0 {
					return nil, fmt.Errorf("no ] after [ at %d", i)
				}
				n, err := strconv.Atoi(rest[:j])
				if err != nil || n < 0 {
					return nil, fmt.Errorf("%q is not an index", rest[:j])
				}
				segs = append(segs, pathSeg{arr: true, idx: n})
				i += j + 2
			}
		default:
			return nil, fmt.Errorf("unexpected %q at %d", p[i], i)
		}
	}
	return segs, nil
}

func ignored(path []pathSeg, pats [][]pathSeg) bool {
	for _, pat := range pats {
		if len(pat) > len(path) {
			continue
		}
		ok := true
		for i, ps := range pat {
			s := path[i]
			switch {
			case ps.any:
				ok = s.arr
			case ps.arr:
				ok = s.arr && s.idx == ps.idx
			default:
				ok = !s.arr && s.key == ps.key
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
