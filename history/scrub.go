package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// MinValueLen is the shortest value, redacted from the params under a secret
// key, that is also scrubbed wherever else it turns up in the entry (result,
// error message and data, target...). Shorter ones ("a", "1") would blank
// out ordinary text.
const MinValueLen = 4

// redactedJSON replaces a secret value in JSON; Redacted alone replaces a
// secret inside a string or in free text.
const redactedJSON = `"` + Redacted + `"`

// patcher builds a changed copy of src lazily: nothing is copied until the
// first change, and an unchanged src is returned as it is.
type patcher struct {
	src  []byte
	out  []byte
	last int // src[:last] is in out
}

func (p *patcher) replace(from, to int, with string) {
	if p.out == nil {
		p.out = make([]byte, 0, len(p.src)+len(with))
	}
	p.out = append(p.out, p.src[p.last:from]...)
	p.out = append(p.out, with...)
	p.last = to
}

func (p *patcher) result() []byte {
	if p.out == nil {
		return p.src
	}
	return append(p.out, p.src[p.last:]...)
}

// scrubber finds known secret values in text: each value as it is and as it
// looks inside a JSON string.
type scrubber struct {
	forms [][]byte // longest first, no duplicates
}

// newScrubber returns a scrubber for vals, or nil when there is none.
func newScrubber(vals []string) *scrubber {
	var forms [][]byte
	for _, v := range vals {
		if v == "" {
			continue // would match everywhere
		}
		forms = append(forms, escapedForms(v)...)
	}
	if len(forms) == 0 {
		return nil
	}
	slices.SortFunc(forms, func(a, b []byte) int { return len(b) - len(a) })
	forms = slices.CompactFunc(forms, bytes.Equal)
	return &scrubber{forms: forms}
}

// escapedForms lists v as it is and as JSON encoders of the ecosystem's
// peers spell it inside a string: plain escapes (this package's), Go's
// json.Marshal (<, > and & as \u003c, \u003e, \u0026), Python's
// ensure_ascii (every non-ASCII rune as \u escapes, lower-case hex; some
// encoders write upper-case), PHP's json_encode (/ as \/, with ASCII
// escapes) and their combinations. A report or history reader that decodes
// the text would otherwise get the secret back.
func escapedForms(v string) [][]byte {
	forms := [][]byte{[]byte(v)}
	add := func(f []byte) {
		for _, have := range forms {
			if bytes.Equal(have, f) {
				return
			}
		}
		forms = append(forms, f)
	}
	var b bytes.Buffer
	writeString(&b, v)
	plain := b.Bytes()[1 : b.Len()-1]
	for _, html := range []bool{false, true} {
		for _, ascii := range []int{0, 1, 2} { // as is, \u lower, \u upper
			for _, slash := range []bool{false, true} {
				var f []byte
				for _, r := range string(plain) {
					switch {
					case html && (r == '<' || r == '>' || r == '&'):
						f = fmt.Appendf(f, `\u%04x`, r)
					case slash && r == '/':
						f = append(f, `\/`...)
					case ascii > 0 && r >= utf8.RuneSelf:
						hex := "%04x"
						if ascii == 2 {
							hex = "%04X"
						}
						if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
							f = fmt.Appendf(f, `\u`+hex+`\u`+hex, r1, r2)
						} else {
							f = fmt.Appendf(f, `\u`+hex, r)
						}
					default:
						f = utf8.AppendRune(f, r)
					}
				}
				add(f)
			}
		}
	}
	return forms
}

// cutBefore moves a cut of v at n back to the start of any secret that
// would straddle it, so what is kept holds no part of one.
func (s *scrubber) cutBefore(v []byte, n int) int {
	if s == nil {
		return n
	}
	for moved := true; moved; {
		moved = false
		for _, f := range s.forms {
			lo, hi := max(0, n-len(f)+1), min(len(v), n+len(f)-1)
			if lo >= hi {
				continue
			}
			// The first occurrence from lo: one that starts before n
			// ends after it (it starts past n-len(f)).
			if i := bytes.Index(v[lo:hi], f); i >= 0 && lo+i < n {
				n, moved = lo+i, true
			}
		}
	}
	return n
}

// in returns a scrubber of the forms present in doc (one fast search each),
// or nil when none is: most documents hold no secret and are then scanned
// for secret keys only.
func (s *scrubber) in(doc []byte) *scrubber {
	if s == nil {
		return nil
	}
	var present [][]byte
	for _, f := range s.forms {
		if bytes.Contains(doc, f) {
			present = append(present, f)
		}
	}
	if len(present) == 0 {
		return nil
	}
	return &scrubber{forms: present}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// scrub replaces every secret in doc[from:to] by with. A secret of digits
// only is replaced only where it stands alone (not inside a longer number);
// with whole, every secret must be a whole token (JSON outside strings: a
// secret number or literal, never part of one).
func (s *scrubber) scrub(p *patcher, doc []byte, from, to int, with string, whole bool) {
	if s == nil || from >= to {
		return
	}
	pos := from
	for pos < to {
		hit, hlen := -1, 0
		for _, f := range s.forms {
			if whole && !isScalar(f) {
				continue // outside strings JSON holds only numbers and literals
			}
			for at := pos; at < to; {
				i := bytes.Index(doc[at:to], f)
				if i < 0 {
					break
				}
				i += at
				if standsAlone(doc, i, i+len(f), isDigits(f), whole) {
					if hit < 0 || i < hit {
						hit, hlen = i, len(f)
					}
					break
				}
				at = i + 1
			}
		}
		if hit < 0 {
			return
		}
		p.replace(hit, hit+hlen, with)
		pos = hit + hlen
	}
}

// isScalar reports whether b could be a JSON number or literal.
func isScalar(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '.' || c == '+' || c == '-') {
			return false
		}
	}
	return len(b) > 0
}

// standsAlone reports whether doc[i:j] is not inside a longer token: with
// digits, not inside a longer number; with token, not inside any JSON
// scalar.
func standsAlone(doc []byte, i, j int, digits, token bool) bool {
	in := func(c byte) bool {
		if token {
			return isScalar([]byte{c})
		}
		return digits && c >= '0' && c <= '9'
	}
	return (i == 0 || !in(doc[i-1])) && (j >= len(doc) || !in(doc[j]))
}

// scrubText replaces every secret in s by Redacted.
func (sc *scrubber) scrubText(s string) string {
	if sc == nil || s == "" {
		return s
	}
	b := []byte(s)
	p := patcher{src: b}
	sc.in(b).scrub(&p, b, 0, len(b), Redacted, false)
	return string(p.result())
}

// stringEnd returns the index of the quote that closes the JSON string
// opened at doc[open], or len(doc) when doc ends first (a cut document).
// A short string is walked once, passing over each escape as a pair (the
// quote that ends it is the first one not escaped), where a call to
// bytes.IndexByte a quote costs more; a long one goes from quote to quote.
func stringEnd(doc []byte, open int) int {
	j := open + 1
	for lim := min(len(doc), j+32); j < lim; j++ {
		switch doc[j] {
		case '"':
			return j
		case '\\':
			j++
		}
	}
	for j < len(doc) {
		k := bytes.IndexByte(doc[j:], '"')
		if k < 0 {
			return len(doc)
		}
		q := j + k
		bs := 0
		for b := q - 1; b > open && doc[b] == '\\'; b-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		j = q + 1
	}
	return len(doc)
}

func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\n' || doc[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at doc[i] (after
// leading space), or len(doc) when doc ends first.
func valueEnd(doc []byte, i int) int {
	if i >= len(doc) {
		return len(doc)
	}
	switch doc[i] {
	case '"':
		e := stringEnd(doc, i)
		if e < len(doc) {
			return e + 1
		}
		return e
	case '{', '[':
		depth := 0
		for j := i; j < len(doc); j++ {
			switch doc[j] {
			case '"':
				j = stringEnd(doc, j)
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(doc)
	}
	for j := i; j < len(doc); j++ {
		switch doc[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r', '"':
			return j
		}
	}
	return len(doc)
}

// stringText returns the text of the JSON string doc[open:end] (end is the
// closing quote or len(doc) for a cut string), unescaped when it can be.
func stringText(doc []byte, open, end int) string {
	raw := doc[open+1 : end]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if end < len(doc) && json.Unmarshal(doc[open:end+1], &s) == nil {
		return s
	}
	return string(raw)
}

// collectValues appends the strings (not member keys) and other scalars
// inside the JSON value v (possibly cut) to vals, those at least
// MinValueLen bytes long.
func collectValues(v []byte, vals *[]string) {
	add := func(s string) {
		if SentSecret(s) {
			*vals = append(*vals, s)
		}
	}
	for i := 0; i < len(v); {
		c := v[i]
		switch {
		case c == '"':
			e := stringEnd(v, i)
			if j := skipSpace(v, e+1); e >= len(v) || j >= len(v) || v[j] != ':' { // not a member's key
				add(stringText(v, i, e))
			}
			i = e + 1
		case c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := valueEnd(v, i)
			if j == i {
				j++
			}
			if tok := string(v[i:j]); tok != "true" && tok != "false" && tok != "null" {
				add(tok)
			}
			i = j
		default:
			i++
		}
	}
}

// keyJudge remembers IsSecretKey's verdicts for the keys of one document,
// which repeat in documents of many small objects: a small cache of
// keyJudgeSets sets of two ways, indexed by a hash of the whole key, so
// that a repeated key costs a hash and a comparison, not IsSecretKey. Two
// ways and a hash of every byte keep the usual few keys of an object from
// evicting one another (with one way and a hash of three bytes, "delta"
// and "state" took the same slot and each of them was judged anew on every
// object of a 10 MB answer: 40 % of recording it).
type keyJudge struct {
	sets [keyJudgeSets]struct {
		way  [2]keyVerdict
		next uint8 // the way the next miss replaces
	}
	misses int // keys judged by IsSecretKey (for tests)
}

const keyJudgeSets = 64

type keyVerdict struct {
	key    string
	secret bool
	used   bool
}

func (k *keyJudge) secret(doc []byte, open, end int) bool {
	raw := doc[open+1 : end]
	if len(raw) > 64 {
		k.misses++
		return IsSecretKey(stringText(doc, open, end))
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range raw {
		h = (h ^ uint32(c)) * 16777619
	}
	set := &k.sets[h%keyJudgeSets]
	for w := range set.way {
		if v := &set.way[w]; v.used && v.key == string(raw) {
			return v.secret
		}
	}
	k.misses++
	secret := IsSecretKey(stringText(doc, open, end))
	set.way[set.next] = keyVerdict{key: string(raw), secret: secret, used: true}
	set.next ^= 1
	return secret
}

// redactScan redacts doc in one pass without parsing it: doc is a JSON
// document, a prefix of one (a document cut to the entry limit) or free text
// holding JSON fragments (an error message that echoes the params). Every
// value that follows a member key that looks secret ("password": ...)
// becomes "[redacted]" (to the end of doc when the value was cut), and every
// value sc knows is replaced wherever it appears: inside strings by
// [redacted]; outside strings by "[redacted]" in JSON (a secret number) or
// [redacted] in text. When vals is not nil the scalars found under secret
// keys are appended to it. doc itself is returned when nothing changed; it
// is never modified.
func redactScan(doc []byte, sc *scrubber, text bool, vals *[]string) []byte {
	p := patcher{src: doc}
	keys := &keyJudge{}
	gapWith := redactedJSON
	if text {
		gapWith = Redacted
	}
	n := len(doc)
	for i := 0; i < n; {
		// The next quote and the end of its string are a few bytes away in
		// a document of small values: loops find them, in this function
		// (calls to bytes.IndexByte or stringEnd a string cost more); a far
		// quote, a long string or an escape is left to those.
		open := i
		for open < n && open < i+16 && doc[open] != '"' {
			open++
		}
		if open < n && doc[open] != '"' {
			if k := bytes.IndexByte(doc[open:], '"'); k >= 0 {
				open += k
			} else {
				open = n
			}
		}
		if sc != nil {
			sc.scrub(&p, doc, i, open, gapWith, !text)
		}
		if open >= n {
			break
		}
		end := open + 1
		for end < n && end < open+32 && doc[end] != '"' && doc[end] != '\\' {
			end++
		}
		if end >= n || doc[end] != '"' {
			end = stringEnd(doc, open)
		}
		if end < n {
			if j := skipSpace(doc, end+1); j < n && doc[j] == ':' && keys.secret(doc, open, end) {
				vs := skipSpace(doc, j+1)
				ve := valueEnd(doc, vs)
				if vals != nil {
					collectValues(doc[vs:ve], vals)
				}
				p.replace(vs, ve, redactedJSON)
				i = ve
				continue
			}
		}
		if sc != nil {
			sc.scrub(&p, doc, open+1, end, Redacted, false)
		}
		i = end + 1
	}
	return p.result()
}

// SentSecret reports whether v, a value sent under a secret-looking key
// (the user's own), is hidden wherever else it turns up: MinValueLen bytes
// or longer, and no JSON literal, even sent as text ({"auth":"true"}):
// hiding it would turn every true of the result into a string.
func SentSecret(v string) bool {
	return len(v) >= MinValueLen && utf8.ValidString(v) && v != "true" && v != "false" && v != "null"
}

// ScrubJSON returns doc (JSON, a cut prefix of it, or text holding JSON)
// with the value of every member under a secret-looking key redacted and
// every one of secrets replaced wherever it turns up: inside a string by
// [redacted], outside strings by "[redacted]" (a secret number), so JSON
// stays JSON; a secret is found as it is and as it looks escaped inside a
// JSON string. doc itself is returned when nothing changed.
func ScrubJSON(doc []byte, secrets []string) []byte {
	return redactScan(doc, newScrubber(secrets).in(doc), false, nil)
}

// ScrubText returns s with every one of secrets, as it is or as it looks
// escaped inside a JSON string, replaced by [redacted].
func ScrubText(s string, secrets []string) string {
	return newScrubber(secrets).scrubText(s)
}
