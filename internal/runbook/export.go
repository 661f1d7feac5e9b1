package runbook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// maxEqualsBytes bounds a recorded result written into a book as equals;
// a larger one is checked by its type only.
const maxEqualsBytes = 64 << 10

var nonIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_]+`) })

// FromHistory writes a book that makes the recorded calls again, in the
// order given, and checks their answers: a result as equals, an error by
// its code. Fields that differ between repeated recordings of one call
// (same target, method and params) become ignore paths. Params stored as
// "[redacted]" are read from the environment instead
// ({{ .env.LEDGER_PASSWORD }}); notes say which variables to set and
// anything else left out. Nothing secret is written.
func FromHistory(name string, entries []history.Entry) ([]byte, []string) {
	out, _, notes := fromHistory(name, entries, map[string]int{})
	return out, notes
}

// fromHistory is FromHistory with the step names already taken (used), and
// it also returns the names it gave.
func fromHistory(name string, entries []history.Entry, used map[string]int) ([]byte, []string, []string) {
	var notes, names []string
	ignore := volatile(entries)
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by primalscope history export --as runbook; run with primalscope run.\n")
	fmt.Fprintf(&b, "name: %s\n", yamlQuote(name))
	b.WriteString("steps:\n")
	envs := map[string]bool{}
	for _, e := range entries {
		target := e.Target
		if target == "" || strings.ContainsAny(target, " \t\n") {
			target = e.Endpoint
		}
		// Recorded text is the peer's words: it is written so that it
		// renders as itself, never as a template ({{ .env.FAMILY_SEED }}
		// in a method name a peer listed must not fill in the seed).
		tl, ok1 := literalText(target, true)
		ml, ok2 := literalText(e.Method, true)
		pl, ok3 := literalText(e.Pool, false)
		sl, ok4 := literalText(e.Session, false)
		if !ok1 || !ok2 || !ok3 || !ok4 {
			notes = append(notes, fmt.Sprintf("call %d: its target, method, pool or session cannot be written so that it reads back as recorded; left out", e.ID))
			continue
		}
		step := strings.Trim(nonIdent().ReplaceAllString(e.Method, "_"), "_")
		if step == "" || (step[0] >= '0' && step[0] <= '9') {
			step = "call_" + step
		}
		base := step
		for used[step] > 0 {
			used[base]++
			step = fmt.Sprintf("%s_%d", base, used[base])
		}
		used[step]++
		names = append(names, step)
		fmt.Fprintf(&b, "  - name: %s\n", step)
		fmt.Fprintf(&b, "    call: %s\n", yamlQuote(tl+" "+ml))
		if e.Pool != "" {
			fmt.Fprintf(&b, "    pool: %s\n", yamlQuote(pl))
		}
		if e.Session != "" {
			fmt.Fprintf(&b, "    session: %s\n", yamlQuote(sl))
		}
		if len(e.Params) > 0 {
			if e.ParamsTruncated {
				notes = append(notes, fmt.Sprintf("call %d: its params were cut when stored; step %s sends none", e.ID, step))
			} else if p, ok := paramsFromEnv(e.Params, envs); ok {
				fmt.Fprintf(&b, "    params: %s\n", p)
			} else {
				notes = append(notes, fmt.Sprintf("call %d: its params cannot be written so that they read back as recorded; step %s sends none", e.ID, step))
			}
		}
		switch {
		case e.Outcome == history.OutcomeOK && e.Result != nil && !e.Truncated && len(e.Result) <= maxEqualsBytes:
			eq, good := literalJSON(e.Result)
			if !good {
				notes = append(notes, fmt.Sprintf("call %d: its result cannot be written so that it reads back as recorded; step %s checks only that the call succeeds", e.ID, step))
				break
			}
			fmt.Fprintf(&b, "    expect:\n      equals: %s\n", eq)
			ig := append(redactedPaths(e.Result), ignore[callKey(e)]...)
			sort.Strings(ig)
			ig = slices.Compact(ig)
			if len(ig) > 0 {
				q := make([]string, len(ig))
				for i, p := range ig {
					q[i] = yamlQuote(p)
				}
				fmt.Fprintf(&b, "      ignore: [%s]\n", strings.Join(q, ", "))
			}
		case e.Outcome == history.OutcomeOK:
			notes = append(notes, fmt.Sprintf("call %d: its result is too large or was cut when stored; step %s checks only that the call succeeds", e.ID, step))
		case e.Outcome == history.OutcomeError && e.Error != nil:
			fmt.Fprintf(&b, "    expect: {error: %d}\n", e.Error.Code)
		default:
			notes = append(notes, fmt.Sprintf("call %d ended %s; step %s expects it to succeed", e.ID, e.Outcome, step))
		}
	}
	if len(envs) > 0 {
		vars := make([]string, 0, len(envs))
		for n := range envs {
			vars = append(vars, n)
		}
		sort.Strings(vars)
		notes = append(notes, "secret params were stored redacted; the book reads them from the environment: set "+strings.Join(vars, ", "))
	}
	return b.Bytes(), names, notes
}

// redactedPaths lists where a stored result holds "[redacted]" (what was
// there is not known, so it cannot be compared) or a timestamp (volatile by
// nature, even where two recordings happen to agree).
func redactedPaths(raw json.RawMessage) []string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, path+memberPath(k))
			}
		case []any:
			for _, e := range x {
				walk(e, path+"[]")
			}
		case string:
			if x == history.Redacted || timestampRE().MatchString(x) {
				if path == "" {
					path = "."
				}
				out = append(out, path)
			}
		}
	}
	walk(v, "")
	return out
}

// timestampRE matches an RFC 3339 time: a value that is volatile by nature.
var timestampRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$`)
})

var identRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

func memberPath(k string) string {
	if identRE().MatchString(k) {
		return "." + k
	}
	q, _ := marshalPlain(k)
	return "[" + string(q) + "]"
}

// callKey identifies repeated recordings of one call.
func callKey(e history.Entry) string {
	return e.Target + "\x00" + e.Endpoint + "\x00" + e.Method + "\x00" + string(compactJSON(e.Params))
}

// volatile finds, per call, the paths whose values differ between its
// recordings, with array indices widened to [] (an id in every element).
func volatile(entries []history.Entry) map[string][]string {
	groups := map[string][]history.Entry{}
	for _, e := range entries {
		if e.Outcome == history.OutcomeOK && e.Result != nil && !e.Truncated {
			groups[callKey(e)] = append(groups[callKey(e)], e)
		}
	}
	out := map[string][]string{}
	idx := regexp.MustCompile(`\[\d+\]`)
	for k, es := range groups {
		seen := map[string]bool{}
		for i := 1; i < len(es); i++ {
			changes, err := history.Diff(es[0].Result, es[i].Result)
			if err != nil {
				continue
			}
			for _, c := range changes {
				if c.Kind == history.Unaligned {
					continue
				}
				p := idx.ReplaceAllString(c.Path, "[]")
				if !seen[p] {
					seen[p] = true
					out[k] = append(out[k], p)
				}
			}
		}
		sort.Strings(out[k])
	}
	return out
}

// literalJSON writes a recorded result for equals (whose strings are
// templates too), every string holding {{ as a literal (literalText).
func literalJSON(raw json.RawMessage) (string, bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	ok := true
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case string:
			lit, good := literalText(x, false)
			ok = ok && good
			return lit
		}
		return v
	}
	v = walk(v)
	out, err := marshalPlain(v)
	if err != nil || !ok {
		return "", false
	}
	return string(out), true
}

// paramsFromEnv writes params as JSON (valid YAML), with every redacted
// value replaced by a template reading an environment variable named for
// its key.
func paramsFromEnv(raw json.RawMessage, envs map[string]bool) (string, bool) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "", false
	}
	ok := true
	v = unredact(v, "", envs, &ok)
	if !ok {
		return "", false
	}
	out, err := marshalPlain(v)
	if err != nil {
		return "", false
	}
	return string(out), true
}

// unredact also writes every recorded string that holds {{ as a literal
// (literalText); ok turns false when one cannot be.
func unredact(v any, key string, envs map[string]bool, ok *bool) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, "{{") {
				*ok = false // keys are not templates, but a reader would think so
			}
			x[k] = unredact(e, k, envs, ok)
		}
	case []any:
		for i, e := range x {
			x[i] = unredact(e, key, envs, ok)
		}
	case string:
		if x != history.Redacted {
			lit, good := literalText(x, false)
			if !good {
				*ok = false
			}
			return lit
		}
		if x == history.Redacted {
			name := strings.ToUpper(strings.Trim(nonIdent().ReplaceAllString(key, "_"), "_"))
			if name == "" {
				name = "SECRET"
			}
			envs[name] = true
			return "{{ .env." + name + " }}"
		}
	}
	return v
}

// literalText writes recorded text s so that a book renders it as exactly
// s: s itself when it holds no {{ (and, for a call word, no space), else one
// whole template of a jq string literal with every brace, dot and space
// escaped ({{"evil\u002e\u007b\u007b..."}}), so that neither the template
// scanner nor the reference check sees anything in it. ok is false when the
// literal does not read back as s byte for byte (invalid UTF-8, say).
func literalText(s string, word bool) (string, bool) {
	if !strings.Contains(s, "{{") && !(word && strings.IndexFunc(s, unicode.IsSpace) >= 0) {
		return s, true
	}
	q, err := marshalPlain(s)
	if err != nil {
		return "", false
	}
	var b strings.Builder
	b.WriteString("{{")
	for _, r := range string(q) {
		switch {
		case r == '{' || r == '}' || r == '.' || unicode.IsSpace(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteString("}}")
	lit := b.String()
	t, err := compileTemplate(Pos{}, lit)
	if err != nil || t == nil || t.whole == nil || len(refsIn(lit)) > 0 {
		return "", false
	}
	v, err := t.render(context.Background(), map[string]any{})
	if got, isText := v.(string); err != nil || !isText || got != s {
		return "", false
	}
	return lit, true
}

func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

func compactJSON(raw json.RawMessage) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// yamlQuote writes s as a double-quoted scalar (JSON's escapes are YAML's).
func yamlQuote(s string) string {
	b, _ := marshalPlain(s)
	return string(b)
}

// maxAppendBook bounds a book AddTo reads and rewrites.
const maxAppendBook = 4 << 20

// AddTo appends a recorded call as a step of the book at path (a new book
// when there is none), as FromHistory writes it, under a step name the
// book does not use yet. The book must parse before and after; it is
// replaced whole (a temporary file renamed), never left half written.
func AddTo(path string, e history.Entry) (step string, notes []string, err error) {
	var existing []byte
	used := map[string]int{}
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return "", nil, fmt.Errorf("%s is not a regular file", path)
		}
		existing, err = readfile.Regular(path, maxAppendBook)
		if err != nil {
			return "", nil, err
		}
		b, err := Parse(path, existing)
		if err != nil {
			return "", nil, fmt.Errorf("%s is not a book primalscope can add to: %w", path, err)
		}
		for _, s := range b.Steps {
			if s.Name != "" {
				used[s.Name] = 1
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", nil, err
	}
	out, names, notes := fromHistory("calls kept from the TUI", []history.Entry{e}, used)
	if len(names) == 0 {
		return "", notes, fmt.Errorf("call %d cannot be written into a book: %s", e.ID, strings.Join(notes, "; "))
	}
	if len(existing) > 0 {
		_, steps, _ := strings.Cut(string(out), "\nsteps:\n")
		body := existing
		if !bytes.HasSuffix(body, []byte("\n")) {
			body = append(body, '\n')
		}
		out = append(body, steps...)
	}
	if _, err := Parse(path, out); err != nil {
		return "", nil, fmt.Errorf("adding to %s would break it (%v): write the step by hand", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".book-*")
	if err != nil {
		return "", nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(out); err != nil {
		tmp.Close()
		return "", nil, err
	}
	if err := tmp.Close(); err != nil {
		return "", nil, err
	}
	_ = os.Chmod(tmp.Name(), 0o644)
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", nil, err
	}
	return names[0], notes, nil
}
