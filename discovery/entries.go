package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxRegistryEntries is the most entries kept from one registry answer
// (ipc.list, ipc.discover, lifecycle.composition, discovery.peers, the
// Neural API's list, ipc.watch's events). The entries past it are not even
// decoded, and the cut is reported (a source error: stderr, the TUI), so a
// registry answering 100,000 entries costs a small multiple of its answer's
// bytes, not a parsed tree of all of them. It is the 10,000 targets the
// TUI and discovery are built and load-tested for (BENCHMARKS.md).
const MaxRegistryEntries = 10_000

// CutError says a registry answer had more entries than were kept.
type CutError struct {
	Kept int
}

func (e *CutError) Error() string {
	return fmt.Sprintf("more than %d entries: only the first %d were read", e.Kept, e.Kept)
}

// eachEntry decodes the entries of the list in b, one at a time, and
// hands each to fn: b itself when it is a list, else the list under the
// first of keys it holds. At most max are decoded; past them it stops
// reading and returns a *CutError (joined with any decoding error).
func eachEntry(b []byte, keys []string, max int, fn func(v any)) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	switch tok {
	case json.Delim('['):
		return eachElement(d, max, fn)
	case json.Delim('{'):
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return fmt.Errorf("not JSON: %w", err)
			}
			key, _ := kt.(string)
			if !contains(keys, key) {
				if err := skipValue(d); err != nil {
					return err
				}
				continue
			}
			vt, err := d.Token()
			if err != nil {
				return fmt.Errorf("not JSON: %w", err)
			}
			if vt == json.Delim('[') {
				return eachElement(d, max, fn)
			}
			if err := skipRest(d, vt); err != nil {
				return err
			}
		}
		return fmt.Errorf("no %s list in the answer", strings.Join(keys, "/"))
	}
	return errors.New("answer is neither an object nor a list")
}

// eachElement decodes the elements of the list whose '[' was just read.
func eachElement(d *json.Decoder, max int, fn func(v any)) error {
	n := 0
	for d.More() {
		if n >= max {
			return &CutError{Kept: max}
		}
		var v any
		if err := d.Decode(&v); err != nil {
			return fmt.Errorf("entry %d: not JSON: %w", n+1, err)
		}
		fn(v)
		n++
	}
	return nil
}

// skipValue reads past the next value without keeping it.
func skipValue(d *json.Decoder) error {
	t, err := d.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return skipRest(d, t)
}

// skipRest reads past the value that begins with t (already read).
func skipRest(d *json.Decoder, t json.Token) error {
	if t != json.Delim('{') && t != json.Delim('[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := d.Token()
		if err == io.EOF {
			return errors.New("not JSON: unexpected end")
		}
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}
