package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// ChangeKind says what happened at a path between two JSON documents.
type ChangeKind string

// The kinds of change.
const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
	// Unaligned is not a change but a note: the arrays at Path differ in
	// too many elements to align (see Diff), so their differing middles
	// were compared index by index; the changes that follow it under Path
	// may show shifted elements as changed.
	Unaligned ChangeKind = "unaligned"
)

// Change is one difference between two JSON documents.
type Change struct {
	// Path is jq-style: "." for the root, ".a.b[3]", `.["odd key"]`. An
	// array element's index is its index in the new document, or in the
	// old one when it was removed.
	Path string          `json:"path"`
	Kind ChangeKind      `json:"kind"`
	Old  json.RawMessage `json:"old,omitempty"`  // compact; nil when Added
	New  json.RawMessage `json:"new,omitempty"`  // compact; nil when Removed
	Note string          `json:"note,omitempty"` // why, for Unaligned
}

// maxDiffDepth bounds how deep Diff walks; Go's decoder refuses deeper input.
const maxDiffDepth = 10000

// Aligning two arrays (Myers' algorithm, on their differing middles once
// the common beginning and end are set aside) costs about the length of the
// middles times the number of elements inserted or removed, and memory the
// square of that number. maxAlignEdits bounds the edits of one array (4 MiB
// of trace), maxAlignWork the work of one Diff, over all its arrays (tens
// of milliseconds). An array beyond either is compared index by index
// after an Unaligned note.
const (
	maxAlignEdits = 1024
	maxAlignWork  = 1 << 25
)

// Diff compares two JSON documents structurally: object members by key,
// numbers by value (1 and 1.0 are equal), arrays aligned element by element
// (a longest common subsequence of equal elements), so one inserted
// element is one addition, not a change of everything after it; elements
// left between aligned ones are compared pairwise in order, the surplus
// added or removed. Arrays that differ in too many elements to align
// (maxAlignEdits, maxAlignWork) are compared index by index after an
// Unaligned note. It returns the changes in document order (object
// keys sorted). Either document may be empty, which means absent. Invalid
// JSON is an error.
func Diff(old, new []byte) ([]Change, error) {
	a, aok, err := decodeAny(old)
	if err != nil {
		return nil, fmt.Errorf("diff: old: %w", err)
	}
	b, bok, err := decodeAny(new)
	if err != nil {
		return nil, fmt.Errorf("diff: new: %w", err)
	}
	var out []Change
	switch {
	case !aok && !bok:
	case !aok:
		out = append(out, Change{Path: ".", Kind: Added, New: compact(b)})
	case !bok:
		out = append(out, Change{Path: ".", Kind: Removed, Old: compact(a)})
	default:
		d := &differ{seed: maphash.MakeSeed(), work: maxAlignWork, out: out}
		var ta, tb node
		d.tree(a, &ta)
		d.tree(b, &tb)
		d.node(&step{}, &ta, &tb, 0)
		out = d.out
	}
	return out, nil
}

func decodeAny(b []byte) (any, bool, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, false, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false, errors.New("data after the JSON value")
	}
	return v, true, nil
}

// node is a decoded JSON value with the hash of its content (equal values,
// numbers by value, hash alike), so that equal subtrees are found without
// walking them again at every level.
type node struct {
	v    any
	h    uint64
	kids []node   // the elements of an array, the member values of an object
	keys []string // the member names of an object, in the order of kids
	obj  bool
}

// differ is one Diff under way.
type differ struct {
	seed maphash.Seed // random per Diff: a peer cannot aim at a collision
	work int          // alignment work left (maxAlignWork)
	out  []Change
}

// Tags that keep values of different types from hashing alike.
const (
	tagNull uint64 = iota + 1
	tagTrue
	tagFalse
	tagString
	tagNumber
	tagArray
	tagObject
	tagMember
)

// mix folds x into the hash h (a multiply-xorshift step).
func mix(h, x uint64) uint64 {
	h ^= x
	h *= 0x9e3779b97f4a7c15
	return h ^ h>>29
}

// tree builds the hashed tree of v into n. Objects hash as the sum of their
// members' hashes, so their key order does not matter.
func (d *differ) tree(v any, n *node) {
	n.v = v
	switch x := v.(type) {
	case nil:
		n.h = mix(tagNull, 0)
	case bool:
		n.h = mix(tagFalse, 0)
		if x {
			n.h = mix(tagTrue, 0)
		}
	case string:
		n.h = mix(tagString, maphash.String(d.seed, x))
	case json.Number:
		n.h = mix(tagNumber, maphash.String(d.seed, numberKey(string(x))))
	case []any:
		n.kids = make([]node, len(x))
		h := tagArray
		for i, e := range x {
			d.tree(e, &n.kids[i])
			h = mix(h, n.kids[i].h)
		}
		n.h = mix(h, uint64(len(x)))
	case map[string]any:
		n.obj = true
		n.kids = make([]node, len(x))
		n.keys = make([]string, 0, len(x))
		var sum uint64
		for k, e := range x {
			i := len(n.keys)
			n.keys = append(n.keys, k)
			d.tree(e, &n.kids[i])
			sum += mix(mix(tagMember, maphash.String(d.seed, k)), n.kids[i].h)
		}
		n.h = mix(tagObject, sum)
	}
}

// numberKey is a JSON number's value as equalJSON sees it (a 64-bit
// mantissa): numbers equalJSON calls equal have the same key. Plain
// integers of up to 18 digits are their own key, without parsing.
func numberKey(s string) string {
	if plainInt(s) {
		return s
	}
	f, ok := new(big.Float).SetString(s)
	if !ok {
		return "?" + s
	}
	if f.IsInt() && f.MantExp(nil) <= 62 {
		i, _ := f.Int64()
		return strconv.FormatInt(i, 10)
	}
	return f.Text('p', 0)
}

// plainInt reports whether s is an integer written as numberKey would
// write it: no sign but "-", no leading zero, no "-0", at most 18 digits.
func plainInt(s string) bool {
	t := strings.TrimPrefix(s, "-")
	if t == "0" {
		return s == "0"
	}
	if t == "" || len(t) > 18 || t[0] == '0' {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

func (d *differ) node(path *step, a, b *node, depth int) {
	if a.h == b.h && equalJSON(a.v, b.v) {
		return
	}
	if depth > maxDiffDepth {
		d.out = append(d.out, Change{Path: path.String(), Kind: Changed, Old: compact(a.v), New: compact(b.v)})
		return
	}
	switch {
	case a.obj && b.obj:
		d.object(path, a, b, depth)
		return
	case !a.obj && !b.obj && a.kids != nil && b.kids != nil:
		d.array(path, a.kids, b.kids, depth)
		return
	}
	if !equalJSON(a.v, b.v) {
		d.out = append(d.out, Change{Path: path.String(), Kind: Changed, Old: compact(a.v), New: compact(b.v)})
	}
}

// object compares two objects member by member, in key order.
func (d *differ) object(path *step, a, b *node, depth int) {
	ia, ib := sortedKeys(a.keys), sortedKeys(b.keys)
	for i, j := 0, 0; i < len(ia) || j < len(ib); {
		switch {
		case j == len(ib) || i < len(ia) && a.keys[ia[i]] < b.keys[ib[j]]:
			k := ia[i]
			d.out = append(d.out, Change{Path: path.member(a.keys[k]).String(), Kind: Removed, Old: compact(a.kids[k].v)})
			i++
		case i == len(ia) || b.keys[ib[j]] < a.keys[ia[i]]:
			k := ib[j]
			d.out = append(d.out, Change{Path: path.member(b.keys[k]).String(), Kind: Added, New: compact(b.kids[k].v)})
			j++
		default:
			d.node(path.member(a.keys[ia[i]]), &a.kids[ia[i]], &b.kids[ib[j]], depth+1)
			i, j = i+1, j+1
		}
	}
}

// sortedKeys returns the indices of keys in the order of the keys.
func sortedKeys(keys []string) []int {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(x, y int) bool { return keys[idx[x]] < keys[idx[y]] })
	return idx
}

// array aligns two arrays: their common beginning and end by hash, the
// middle by a shortest edit script (within the bounds), then reports the
// elements left between aligned ones.
func (d *differ) array(path *step, a, b []node, depth int) {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre].h == b[pre].h {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf].h == b[len(b)-1-suf].h {
		suf++
	}
	for i := 0; i < pre; i++ {
		d.node(path.index(i), &a[i], &b[i], depth+1)
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(am) == 0 || len(bm) == 0 {
		d.gap(path, a, b, pre, pre, len(am), len(bm), depth)
	} else if matches, ok := d.align(am, bm); ok {
		gi, gj := 0, 0 // where the current gap starts, in am and bm
		for _, mt := range matches {
			i, j := int(mt[0]), int(mt[1])
			d.gap(path, a, b, pre+gi, pre+gj, i-gi, j-gj, depth)
			d.node(path.index(pre+j), &am[i], &bm[j], depth+1)
			gi, gj = i+1, j+1
		}
		d.gap(path, a, b, pre+gi, pre+gj, len(am)-gi, len(bm)-gj, depth)
	} else {
		d.out = append(d.out, Change{Path: path.String(), Kind: Unaligned,
			Note: fmt.Sprintf("%d and %d elements differ: too large to align; compared index by index", len(am), len(bm))})
		d.gap(path, a, b, pre, pre, len(am), len(bm), depth)
	}
	for k := suf; k > 0; k-- {
		d.node(path.index(len(b)-k), &a[len(a)-k], &b[len(b)-k], depth+1)
	}
}

// align finds the elements of a and b (by hash) that a shortest edit
// script keeps, as pairs of indices in order, by Myers' O((N+M)D)
// algorithm. It gives up (false) past maxAlignEdits edits or when the
// differ's work is spent.
func (d *differ) align(a, b []node) ([][2]int32, bool) {
	n, m := len(a), len(b)
	if n+m > 1<<30 {
		return nil, false
	}
	most := min(maxAlignEdits, n+m) // a script never needs more than n+m edits
	off := most + 1
	v := make([]int, 2*off+1) // v[off+k]: the furthest x on diagonal k
	// trace[e] is v[off-e .. off+e] as it was before step e.
	var trace [][]int32
	for e := 0; e <= most; e++ {
		row := make([]int32, 2*e+1)
		for k := -e; k <= e; k++ {
			row[k+e] = int32(v[off+k])
		}
		trace = append(trace, row)
		for k := -e; k <= e; k += 2 {
			var x int
			if k == -e || k != e && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // down: an element of b inserted
			} else {
				x = v[off+k-1] + 1 // right: an element of a removed
			}
			y := x - k
			d.work--
			for x < n && y < m && a[x].h == b[y].h {
				x, y = x+1, y+1
				d.work--
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, n, m), true
			}
		}
		if d.work < 0 {
			return nil, false
		}
	}
	return nil, false
}

// backtrack walks a Myers trace back from (n, m) and returns the kept
// pairs in order.
func backtrack(trace [][]int32, n, m int) [][2]int32 {
	var kept [][2]int32
	x, y := n, m
	for e := len(trace) - 1; e >= 0; e-- {
		row := trace[e]
		at := func(k int) int { return int(row[k+e]) }
		k := x - y
		var pk int
		if e == 0 {
			pk = 0
		} else if k == -e || k != e && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := 0
		if e > 0 {
			px = at(pk)
		}
		py := px - pk
		// The snake after the edit: from the end of the edit to (x, y).
		sx, sy := px, py
		if e > 0 {
			if pk == k+1 {
				sy++ // the edit inserted b[py]
			} else {
				sx++ // the edit removed a[px]
			}
		}
		for x > sx && y > sy {
			x, y = x-1, y-1
			kept = append(kept, [2]int32{int32(x), int32(y)})
		}
		x, y = px, py
	}
	slices.Reverse(kept)
	return kept
}

// gap reports the na elements of a from ai and the nb of b from bi that
// were not aligned: pairwise in order (compared as values), then the
// surplus removed or added.
func (d *differ) gap(path *step, a, b []node, ai, bi, na, nb int, depth int) {
	k := 0
	for ; k < na && k < nb; k++ {
		d.node(path.index(bi+k), &a[ai+k], &b[bi+k], depth+1)
	}
	for ; k < na; k++ {
		d.out = append(d.out, Change{Path: path.index(ai + k).String(), Kind: Removed, Old: compact(a[ai+k].v)})
	}
	for ; k < nb; k++ {
		d.out = append(d.out, Change{Path: path.index(bi + k).String(), Kind: Added, New: compact(b[bi+k].v)})
	}
}

// equalJSON compares two decoded values, numbers by value.
func equalJSON(a, b any) bool {
	switch av := a.(type) {
	case json.Number:
		bv, ok := b.(json.Number)
		if !ok {
			return false
		}
		if av == bv {
			return true
		}
		x, ok1 := new(big.Float).SetString(string(av))
		y, ok2 := new(big.Float).SetString(string(bv))
		return ok1 && ok2 && x.Cmp(y) == 0
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !equalJSON(x, y) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return false
		}
		for i := range av {
			if !equalJSON(av[i], bv[i]) {
				return false
			}
		}
		return true
	default:
		return a == b // string, bool, nil
	}
}

// identRe is compiled on first use: only diffs need it, and every
// process pays what package init does.
var identRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// step is a path in a document, built as Diff walks down and written out
// only for a change (String): a path is not copied at every level.
type step struct {
	up  *step // nil for the root
	key string
	idx int
	arr bool // an array index (idx), else an object key
}

func (p *step) member(k string) *step { return &step{up: p, key: k} }
func (p *step) index(i int) *step     { return &step{up: p, idx: i, arr: true} }

// String renders the path jq-style: ".", ".a.b[3]", `.["odd key"]`.
func (p *step) String() string {
	var steps []*step
	for s := p; s != nil && s.up != nil; s = s.up {
		steps = append(steps, s)
	}
	var b strings.Builder
	for i := len(steps) - 1; i >= 0; i-- {
		s := steps[i]
		switch {
		case s.arr:
			b.WriteString("[" + strconv.Itoa(s.idx) + "]")
		case identRe().MatchString(s.key):
			b.WriteString("." + s.key)
		default:
			q, _ := json.Marshal(s.key)
			b.WriteString("[" + string(q) + "]")
		}
	}
	if out := b.String(); strings.HasPrefix(out, ".") {
		return out
	}
	return "." + b.String()
}

func compact(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return json.RawMessage(`null`)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
}

// DiffFormat tunes FormatDiff.
type DiffFormat struct {
	Color      bool // ANSI colours (green added, red removed, yellow changed)
	MaxChanges int  // most changes printed, then a count of the rest (default 200)
	MaxValue   int  // longest value printed, in runes, then "…" (default 200)
}

// FormatDiff writes one line per change: "+ path: new", "- path: old",
// "~ path: old → new", "! path: note" (Unaligned), or "no changes". Values
// and paths come from peers, so terminal control characters in them are
// shown escaped, never sent raw.
func FormatDiff(w io.Writer, changes []Change, f DiffFormat) error {
	if f.MaxChanges <= 0 {
		f.MaxChanges = 200
	}
	if f.MaxValue <= 0 {
		f.MaxValue = 200
	}
	if len(changes) == 0 {
		_, err := fmt.Fprintln(w, "no changes")
		return err
	}
	paint := func(code, s string) string {
		if !f.Color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	var sb strings.Builder
	for i, c := range changes {
		if i == f.MaxChanges {
			fmt.Fprintf(&sb, "… and %d more changes\n", len(changes)-i)
			break
		}
		p := render.Sanitize(c.Path)
		switch c.Kind {
		case Added:
			sb.WriteString(paint("32", "+ "+p+": "+clip(c.New, f.MaxValue)))
		case Removed:
			sb.WriteString(paint("31", "- "+p+": "+clip(c.Old, f.MaxValue)))
		case Unaligned:
			sb.WriteString(paint("36", "! "+p+": "+render.Sanitize(c.Note)))
		default:
			sb.WriteString(paint("33", "~ "+p+": ") + paint("31", clip(c.Old, f.MaxValue)) +
				paint("33", " → ") + paint("32", clip(c.New, f.MaxValue)))
		}
		sb.WriteByte('\n')
	}
	_, err := io.WriteString(w, sb.String())
	return err
}

// clip is a peer's value for one line of the diff: escaped, at most n
// cells wide.
func clip(v json.RawMessage, n int) string { return human.Truncate(render.Sanitize(string(v)), n) }
