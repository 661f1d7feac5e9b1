package capability

import (
	"encoding/json"
	"errors"
	"sort"
	"testing"
)

// The seed corpora live in testdata/fuzz/<Name>/ and are replayed by plain go test.

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"primal":"p","version":"1","methods":["a.b"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrNotCapabilities) {
				t.Fatalf("error %v is not ErrNotCapabilities", err)
			}
			if c != nil {
				t.Fatal("non-nil result with error")
			}
			return
		}
		if len(c.Methods) > MaxMethods {
			t.Fatalf("%d methods", len(c.Methods))
		}
		if !sort.StringsAreSorted(c.Methods) {
			t.Fatal("methods not sorted")
		}
		for i, m := range c.Methods {
			if len(m) > MaxNameLen || m == "" {
				t.Fatalf("bad method name length %d", len(m))
			}
			if i > 0 && c.Methods[i-1] == m {
				t.Fatalf("duplicate %q", m)
			}
		}
		if len(c.Warnings) > MaxWarnings+1 {
			t.Fatalf("%d warnings", len(c.Warnings))
		}
		switch c.Signature.State {
		case Verified, Invalid, Absent:
		default:
			t.Fatalf("verdict state %q", c.Signature.State)
		}
		n := 0
		for _, d := range c.Tree() {
			n += len(d.Methods)
		}
		if n != len(c.Methods) {
			t.Fatalf("tree has %d methods, caps %d", n, len(c.Methods))
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}

func FuzzParseIdentity(f *testing.F) {
	f.Add([]byte(`{"primal":"p","version":"1","domain":"d","license":"AGPL-3.0-or-later"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		id, err := ParseIdentity(data)
		if err != nil {
			if id != nil {
				t.Fatal("non-nil identity with error")
			}
			return
		}
		if len(id.Primal) > MaxNameLen || len(id.Capabilities) > MaxMethods || len(id.Warnings) > MaxWarnings+1 {
			t.Fatalf("bounds: %d %d %d", len(id.Primal), len(id.Capabilities), len(id.Warnings))
		}
		if _, err := json.Marshal(id); err != nil {
			t.Fatalf("marshal: %v", err)
		}
	})
}

func FuzzParseHealth(f *testing.F) {
	f.Add([]byte(`{"status":"alive"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := ParseLiveness(data)
		r := ParseReadiness(data)
		if r.Ready && !r.Alive {
			t.Fatal("ready but not alive")
		}
		for _, h := range []Health{l, r} {
			if len(h.Status) > MaxTextLen || len(h.Warnings) > MaxWarnings+1 {
				t.Fatalf("bounds: %d %d", len(h.Status), len(h.Warnings))
			}
			if _, err := json.Marshal(h); err != nil {
				t.Fatalf("marshal: %v", err)
			}
		}
	})
}
