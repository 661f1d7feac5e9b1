package history

import "testing"

func TestMatchIgnorePaths(t *testing.T) {
	for _, c := range []struct {
		name        string
		want, got   string
		ignore      []string
		wantChanges int
	}{
		{"equal, other key order and spacing", `{"a":1,"b":[1,2]}`, `{ "b":[1, 2], "a":1.0 }`, nil, 0},
		{"a changed member", `{"a":1}`, `{"a":2}`, nil, 1},
		{"ignored member", `{"a":1,"t":"x"}`, `{"a":1,"t":"y"}`, []string{".t"}, 0},
		{"ignored under a prefix", `{"m":{"x":1,"y":2}}`, `{"m":{"x":3,"y":4}}`, []string{".m"}, 0},
		{"any index", `{"items":[{"id":1,"v":1},{"id":2,"v":2}]}`, `{"items":[{"id":7,"v":1},{"id":8,"v":2}]}`, []string{".items[].id"}, 0},
		{"any index keeps other fields", `{"items":[{"id":1,"v":1}]}`, `{"items":[{"id":7,"v":9}]}`, []string{".items[*].id"}, 1},
		{"one index only", `[{"id":1},{"id":2}]`, `[{"id":5},{"id":6}]`, []string{"[0].id"}, 1},
		{"quoted key", `{"odd key":1}`, `{"odd key":2}`, []string{`.["odd key"]`}, 0},
		{"an ignore that names nothing here", `{"a":1}`, `{"a":2}`, []string{".b"}, 1},
		{"added member ignored", `{"a":1}`, `{"a":1,"ts":5}`, []string{".ts"}, 0},
	} {
		changes, err := Match([]byte(c.want), []byte(c.got), c.ignore)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(changes) != c.wantChanges {
			t.Errorf("%s: %d changes, want %d: %+v", c.name, len(changes), c.wantChanges, changes)
		}
	}
	for _, bad := range []string{"a", ".a[", ".a[x]", ".[\"a", ".."} {
		if ValidPath(bad) {
			t.Errorf("%q should not be a valid path", bad)
		}
		if _, err := Match([]byte(`1`), []byte(`1`), []string{bad}); err == nil {
			t.Errorf("Match with ignore %q: want an error", bad)
		}
	}
}

// Params left out, null, {} and [] are one: no parameters; anything else
// is compared as Match compares.
func TestMatchParamsNoneIsOne(t *testing.T) {
	none := []string{"", " ", "null", "{}", "[]", "{ }", " [\n] "}
	for _, a := range none {
		for _, b := range none {
			if c, err := MatchParams([]byte(a), []byte(b), nil); err != nil || len(c) != 0 {
				t.Errorf("MatchParams(%q, %q) = %v, %v: both are no parameters", a, b, c, err)
			}
		}
		for _, other := range []string{`{"a":1}`, `[0]`, `0`, `""`, `[null]`} {
			if c, err := MatchParams([]byte(a), []byte(other), nil); err != nil || len(c) == 0 {
				t.Errorf("MatchParams(%q, %q) = %v, %v: want a change", a, other, c, err)
			}
		}
	}
	if c, err := MatchParams([]byte(`{"a":1,"b":2}`), []byte(`{"b":2,"a":1}`), nil); err != nil || len(c) != 0 {
		t.Errorf("key order: %v, %v", c, err)
	}
}
