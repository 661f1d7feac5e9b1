package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
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
)

// Change is one difference between two JSON documents.
type Change struct {
	// Path is jq-style: "." for the root, ".a.b[3]", `.["odd key"]`.
	Path string          `json:"path"`
	Kind ChangeKind      `json:"kind"`
	Old  json.RawMessage `json:"old,omitempty"` // compact; nil when Added
	New  json.RawMessage `json:"new,omitempty"` // compact; nil when Removed
}

// maxDiffDepth bounds how deep Diff walks; Go's decoder refuses deeper input.
const maxDiffDepth = 10000

// Diff compares two JSON documents structurally: object members by key,
// arrays element by element, numbers by value (1 and 1.0 are equal). It
// returns the changes in document order (object keys sorted). Either
// document may be empty, which means absent. Invalid JSON is an error.
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
		diffValue(".", a, b, 0, &out)
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

func diffValue(path string, a, b any, depth int, out *[]Change) {
	if depth > maxDiffDepth {
		if !equalJSON(a, b) {
			*out = append(*out, Change{Path: path, Kind: Changed, Old: compact(a), New: compact(b)})
		}
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, dup := av[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := keyPath(path, k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				*out = append(*out, Change{Path: p, Kind: Removed, Old: compact(x)})
			case !inA:
				*out = append(*out, Change{Path: p, Kind: Added, New: compact(y)})
			default:
				diffValue(p, x, y, depth+1, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := max(len(av), len(bv))
		for i := 0; i < n; i++ {
			p := indexPath(path, i)
			switch {
			case i >= len(bv):
				*out = append(*out, Change{Path: p, Kind: Removed, Old: compact(av[i])})
			case i >= len(av):
				*out = append(*out, Change{Path: p, Kind: Added, New: compact(bv[i])})
			default:
				diffValue(p, av[i], bv[i], depth+1, out)
			}
		}
		return
	}
	if !equalJSON(a, b) {
		*out = append(*out, Change{Path: path, Kind: Changed, Old: compact(a), New: compact(b)})
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

func keyPath(parent, key string) string {
	var seg string
	if identRe().MatchString(key) {
		seg = "." + key
	} else {
		q, _ := json.Marshal(key)
		seg = "[" + string(q) + "]"
		if parent == "." {
			return "." + seg
		}
		return parent + seg
	}
	if parent == "." {
		return seg
	}
	return parent + seg
}

func indexPath(parent string, i int) string {
	seg := "[" + strconv.Itoa(i) + "]"
	if parent == "." {
		return "." + seg
	}
	return parent + seg
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
// "~ path: old → new", or "no changes". Values and paths come from peers, so
// terminal control characters in them are shown escaped, never sent raw.
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
