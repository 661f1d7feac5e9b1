package capability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds applied to hostile input.
const (
	// MaxMethods is the most method names kept from one answer; the rest are
	// dropped with a warning.
	MaxMethods = 100_000
	// MaxNameLen is the longest method, domain or capability name kept, in
	// bytes; longer names are truncated (at a UTF-8 boundary) with a warning.
	MaxNameLen = 1024
	// MaxTextLen is the longest free text (descriptions, notes, status) kept.
	MaxTextLen = 4096
	// MaxWarnings is the most warnings kept; further ones are counted.
	MaxWarnings = 64
	// MaxExtraKeys is the most unknown keys kept raw per object.
	MaxExtraKeys = 64
	// MaxExtraBytes is the largest raw value kept for an unknown key.
	MaxExtraBytes = 64 << 10
)

// warner collects non-fatal findings with a bound.
type warner struct {
	warns   []string
	dropped int
	// counters folded into one warning each at the end
	longNames  int
	longTexts  int
	emptyNames int
}

func (w *warner) warnf(format string, args ...any) {
	if len(w.warns) >= MaxWarnings {
		w.dropped++
		return
	}
	w.warns = append(w.warns, fmt.Sprintf(format, args...))
}

// finish folds the counters into warnings and returns them (nil if none).
func (w *warner) finish() []string {
	if w.longNames > 0 {
		w.warnf("%d names longer than %d bytes truncated", w.longNames, MaxNameLen)
	}
	if w.longTexts > 0 {
		w.warnf("%d texts longer than %d bytes truncated", w.longTexts, MaxTextLen)
	}
	if w.emptyNames > 0 {
		w.warnf("%d empty names ignored", w.emptyNames)
	}
	if w.dropped > 0 {
		w.warns = append(w.warns, fmt.Sprintf("%d more warnings omitted", w.dropped))
	}
	return w.warns
}

// name bounds a name's length.
func (w *warner) name(s string) string {
	if len(s) > MaxNameLen {
		w.longNames++
		return truncUTF8(s, MaxNameLen)
	}
	return s
}

// text bounds a free text's length.
func (w *warner) text(s string) string {
	if len(s) > MaxTextLen {
		w.longTexts++
		return truncUTF8(s, MaxTextLen)
	}
	return s
}

// truncUTF8 cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	if !utf8.RuneStart(s[i]) {
		i = n
	}
	return s[:i]
}

// quote renders peer text for a warning: short and escaped.
func quote(s string) string {
	return strconv.Quote(truncUTF8(s, 64))
}

// kind reports the JSON kind of a raw value: 'o' object, 'a' array, 's' string,
// 'n' number, 'b' bool, 'z' null, 0 empty or invalid.
func kind(raw json.RawMessage) byte {
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 {
		return 0
	}
	switch t[0] {
	case '{':
		return 'o'
	case '[':
		return 'a'
	case '"':
		return 's'
	case 't', 'f':
		return 'b'
	case 'n':
		return 'z'
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return 'n'
	}
	return 0
}

func kindName(raw json.RawMessage) string {
	switch kind(raw) {
	case 'o':
		return "object"
	case 'a':
		return "array"
	case 's':
		return "string"
	case 'n':
		return "number"
	case 'b':
		return "bool"
	case 'z':
		return "null"
	}
	return "invalid"
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	k := kind(raw)
	return k == 0 || k == 'z'
}

// object decodes raw as a JSON object; ok is false if it is not one.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if kind(raw) != 'o' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false
	}
	return m, true
}

// array decodes raw as a JSON array; ok is false if it is not one.
func array(raw json.RawMessage) ([]json.RawMessage, bool) {
	if kind(raw) != 'a' {
		return nil, false
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, false
	}
	return a, true
}

// str decodes a JSON string.
func str(raw json.RawMessage) (string, bool) {
	if kind(raw) != 's' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// scalarText decodes a string, or renders a number or bool as its JSON text.
func scalarText(raw json.RawMessage) (string, bool) {
	switch kind(raw) {
	case 's':
		return str(raw)
	case 'n', 'b':
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return "", false
		}
		return fmt.Sprint(v), true
	}
	return "", false
}

// boolean decodes a JSON bool, tolerating "true"/"false" strings.
func boolean(raw json.RawMessage) (bool, bool) {
	switch kind(raw) {
	case 'b':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return false, false
		}
		return b, true
	case 's':
		s, _ := str(raw)
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes":
			return true, true
		case "false", "no":
			return false, true
		}
	}
	return false, false
}

// number decodes a JSON number (or a numeric string).
func number(raw json.RawMessage) (float64, bool) {
	switch kind(raw) {
	case 'n':
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return 0, false
		}
		return f, true
	case 's':
		s, _ := str(raw)
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, false
		}
		return f, true
	}
	return 0, false
}

// nameOf extracts a name from a string or from an object's name-like field.
func nameOf(raw json.RawMessage) (string, bool) {
	if s, ok := str(raw); ok {
		return s, true
	}
	m, ok := object(raw)
	if !ok {
		return "", false
	}
	for _, k := range []string{"name", "method", "id", "capability"} {
		if s, ok := str(m[k]); ok {
			return s, true
		}
	}
	return "", false
}

// sortUnique sorts s and removes duplicates in place.
func sortUnique(s []string) []string {
	if len(s) == 0 {
		return s
	}
	sort.Strings(s)
	out := s[:1]
	for _, v := range s[1:] {
		if v != out[len(out)-1] {
			out = append(out, v)
		}
	}
	return out
}

// keepExtra stores unknown keys raw, bounded.
func keepExtra(w *warner, where string, m map[string]json.RawMessage, known map[string]bool) map[string]json.RawMessage {
	var extra map[string]json.RawMessage
	skipped := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if known[k] {
			continue
		}
		v := m[k]
		if len(extra) >= MaxExtraKeys || len(v) > MaxExtraBytes || len(k) > MaxNameLen {
			skipped++
			continue
		}
		if extra == nil {
			extra = make(map[string]json.RawMessage)
		}
		extra[k] = compact(v)
	}
	if skipped > 0 {
		w.warnf("%s: %d unknown keys not kept (too many or too large)", where, skipped)
	}
	return extra
}

// compact returns raw without insignificant whitespace (raw is valid JSON).
func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return json.RawMessage(b.Bytes())
}

// aKind is kindName with an article, for warnings.
func aKind(raw json.RawMessage) string {
	switch k := kindName(raw); k {
	case "object", "array", "invalid":
		return "an " + k
	case "null":
		return k
	default:
		return "a " + k
	}
}

// objectField reads an optional object-valued field: ok is false when it is
// absent, null, or not an object (which is warned of).
func objectField(w *warner, field string, raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if isNull(raw) {
		return nil, false
	}
	m, ok := object(raw)
	if !ok {
		w.warnf("%s is %s, not an object", field, aKind(raw))
	}
	return m, ok
}

// arrayField reads an optional array-valued field: ok is false when it is
// absent, null, or not an array (which is warned of).
func arrayField(w *warner, field string, raw json.RawMessage) ([]json.RawMessage, bool) {
	if isNull(raw) {
		return nil, false
	}
	items, ok := array(raw)
	if !ok {
		w.warnf("%s is %s, not an array", field, aKind(raw))
	}
	return items, ok
}
