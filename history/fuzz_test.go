package history

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzRedact: on any input the redactor never panics; when it accepts the
// input its output is valid JSON, equal to the input except that no member
// with a secret-looking key keeps its value, and redacting again changes
// nothing.
func FuzzRedact(f *testing.F) {
	f.Add([]byte(`{"family_seed":"SENTINEL","nested":[{"password":"p"}]}`))
	f.Add([]byte(`[{"a":{"Token":[1,2,{"x":null}]}},"seed",1e400]`))
	f.Add([]byte(`{"k\u0065y":"v","api-key":{"deep":true}}`))
	f.Add([]byte(`"\ud800"`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, _, err := Redact(in)
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(in)) == 0 {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Redact(%q) = %q: not valid JSON", in, out)
		}
		if !json.Valid(in) {
			t.Fatalf("Redact accepted invalid JSON %q", in)
		}
		checkRedactedDoc(t, out)
		again, changed, err := Redact(out)
		if err != nil || changed && !bytes.Equal(again, out) || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
	})
}

// checkRedactedDoc decodes doc and checks it as checkRedacted does.
func checkRedactedDoc(t *testing.T, doc []byte) {
	t.Helper()
	v, err := decodeNumbers(doc)
	if err != nil {
		t.Fatal(err)
	}
	checkRedacted(t, v)
}

// checkRedacted fails t where a member of v with a secret-looking key kept
// a value other than Redacted.
func checkRedacted(t *testing.T, v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, y := range x {
			if IsSecretKey(k) {
				if y != Redacted {
					t.Fatalf("secret key %q kept %v", k, y)
				}
				continue
			}
			checkRedacted(t, y)
		}
	case []any:
		for _, y := range x {
			checkRedacted(t, y)
		}
	}
}

// FuzzDiff: Diff never panics; a document never differs from itself; two
// documents differ exactly when they are not equal; formatting a diff never
// emits a raw control character.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2,{"c":true}]}}`), []byte(`{"a":{"b":[1,2,{"c":false}],"d":"x"}}`))
	f.Add([]byte(`[1,2,3]`), []byte(`[1]`))
	f.Add([]byte(`{"n":1}`), []byte(`{"n":1.0e0}`))
	f.Add([]byte(`{"\u001b[2J":"\u009b"}`), []byte(`null`))
	f.Add([]byte(``), []byte(`"x"`))
	f.Add([]byte(`[{"id":1},{"id":2},[3,4]]`), []byte(`[0,{"id":1},{"id":2.0},[4,3],5]`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ch, err := Diff(a, b)
		if err != nil {
			return
		}
		self, err := Diff(a, a)
		if err != nil || len(self) != 0 {
			t.Fatalf("Diff(a, a) = %v, %v", self, err)
		}
		va, aok, _ := decodeAny(a)
		vb, bok, _ := decodeAny(b)
		same := aok == bok && (!aok || equalJSON(va, vb))
		if same != (len(ch) == 0) {
			t.Fatalf("equal=%v but %d changes", same, len(ch))
		}
		var sb strings.Builder
		if err := FormatDiff(&sb, ch, DiffFormat{}); err != nil {
			t.Fatal(err)
		}
		for _, r := range sb.String() {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("raw control character %U in %q", r, sb.String())
			}
		}
	})
}

// FuzzSafeJSON: for valid JSON, SafeJSON keeps it valid and meaning the same
// and leaves no character a terminal acts on.
func FuzzSafeJSON(f *testing.F) {
	f.Add([]byte("[\"a\u009bb\u202e\x7f\xff\"]"))
	f.Add([]byte(`{"k\u2028":"\u0085"}`))
	f.Add([]byte(`{"plain":"é ok"}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		out := SafeJSON(in)
		if !json.Valid(in) {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("SafeJSON(%q) = %q: not valid JSON", in, out)
		}
		// Numbers as written: valid JSON may hold numbers no float64
		// holds (1E700, found by the fuzzer).
		a, errA := decodeNumbers(in)
		b, errB := decodeNumbers(out)
		if errA != nil || errB != nil {
			t.Fatalf("decode failed: %v, %v", errA, errB)
		}
		if !equalJSON(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
		for _, r := range string(out) {
			if r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 ||
				(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f {
				t.Fatalf("control character %U left in %q", r, out)
			}
		}
	})
}

// decodeNumbers decodes one JSON value, keeping numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// FuzzRedactScan: the one-pass redactor of stored values never panics on
// any input, cut anywhere, as JSON or as text. On valid JSON it returns
// valid JSON in which no secret key keeps its value and a plain secret
// value (letters, digits, '-', '_') no longer appears.
func FuzzRedactScan(f *testing.F) {
	f.Add([]byte(`{"family_seed":"SENTINEL","nested":[{"password":"p"}],"echo":"SENTINEL-x"}`), "SENTINEL", 40)
	f.Add([]byte(`[{"a":{"Token":[1,2,{"x":null}]}},"seed",1e400,4821]`), "4821", 0)
	f.Add([]byte(`{"k\u0065y":"v","api-key":{"deep":true},"s":"a\"b"}`), "deep", 12)
	f.Add([]byte(`invalid params: {"pin":"1234"} got 1234`), "1234", 0)
	f.Fuzz(func(t *testing.T, in []byte, secret string, cutAt int) {
		sc := newScrubber([]string{secret})
		for _, text := range []bool{false, true} {
			doc := in
			if cutAt > 0 && cutAt < len(doc) {
				doc = doc[:cutAt]
			}
			orig := bytes.Clone(doc)
			out := redactScan(doc, sc.in(doc), text, nil)
			if !bytes.Equal(doc, orig) {
				t.Fatal("the input was modified")
			}
			if text || !bytes.Equal(doc, in) || !json.Valid(in) {
				continue
			}
			if !json.Valid(out) {
				t.Fatalf("redactScan(%q, %q) = %q: not valid JSON", in, secret, out)
			}
			checkRedactedDoc(t, out)
			plain := len(secret) >= MinValueLen && !isDigits([]byte(secret)) &&
				!strings.Contains(redactedJSON, secret) &&
				strings.Trim(secret, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == "" &&
				!bytes.Contains(in, []byte(`\`))
			if plain && bytes.Contains(out, []byte(secret)) {
				t.Fatalf("redactScan(%q, %q) = %q: the secret is still there", in, secret, out)
			}
		}
	})
}
