package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// unmarshalMemory is what readMemoryFile does without the fast path.
func unmarshalMemory(b []byte) (map[string]EndpointFacts, error) {
	var doc struct {
		Endpoints map[string]EndpointFacts `json:"endpoints"`
	}
	err := json.Unmarshal(b, &doc)
	return doc.Endpoints, err
}

// sameAsUnmarshal fails t when decodeMemoryFast accepts b but gives
// anything else than encoding/json does. It reports whether the fast path
// took b.
func sameAsUnmarshal(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := decodeMemoryFast(b)
	if !ok {
		return false
	}
	want, err := unmarshalMemory(b)
	if err != nil {
		t.Fatalf("the fast path took %q, which encoding/json refuses: %v", b, err)
	}
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: fast path %+v, encoding/json %+v", b, got, want)
	}
	return true
}

// TestMemoryFileFastPathTakesWhatFlushWrites: the file Flush writes (every
// field set, a name that needs escaping, several entries) is decoded
// without encoding/json, to the same facts: otherwise every call would pay
// for the reflection again.
func TestMemoryFileFastPathTakesWhatFlushWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.json")
	m, err := OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	yes, no := true, false
	m.Update(Endpoint{Transport: Unix, Path: "/run/a&b<c>.sock"}, func(f *EndpointFacts) {
		f.Prefix, f.BTSPRequired, f.Framing, f.BTSPPrefix, f.Socket = &yes, true, "length-prefixed", &no, "12:34.5"
	})
	m.Update(Endpoint{Transport: Unix, Path: "/run/é\u202e.sock"}, func(f *EndpointFacts) { f.Prefix = &no })
	for i := range 20 {
		m.Update(Endpoint{Transport: TCP, Address: fmt.Sprintf("127.0.0.1:%d", 9000+i)}, func(f *EndpointFacts) { f.Socket = fmt.Sprint(i) })
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !sameAsUnmarshal(t, b) {
		t.Fatalf("the fast path refused what Flush wrote:\n%s", b)
	}
	got, _ := decodeMemoryFast(b)
	if len(got) != 22 {
		t.Fatalf("%d entries, want 22", len(got))
	}
	m2, err := OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m2.Get(Endpoint{Transport: Unix, Path: "/run/a&b<c>.sock"})
	if !ok || f.Prefix == nil || !*f.Prefix || !f.BTSPRequired || f.Framing != "length-prefixed" || f.BTSPPrefix == nil || *f.BTSPPrefix || f.Socket != "12:34.5" || f.Updated.IsZero() {
		t.Fatalf("read back %+v, %v", f, ok)
	}
}

// TestMemoryFileFastPathLeavesTheRestToEncodingJSON: what the writer never
// produces is either decoded as encoding/json would, or left to it.
func TestMemoryFileFastPathLeavesTheRestToEncodingJSON(t *testing.T) {
	const ts = `"2026-01-02T03:04:05.123456789+01:00"`
	cases := []struct {
		doc  string
		fast bool // the fast path must take it
	}{
		{`{"endpoints":{"a":{"prefix":true,"updated":` + ts + `}}}`, true},
		{`{"note":[1,{"x":null}],"endpoints":{},"other":3}`, true},
		{` {"endpoints":{"a":{"prefix":null,"btsp_prefix":false,"extra":{"y":[]}}}} ` + "\n", true},
		{`{"endpoints":{"a":{"prefix":true}},"endpoints":{"b":{"prefix":false}}}`, true}, // merged
		{`{"endpoints":{"a":{"prefix":true},"a":{"socket_id":"s"}}}`, true},              // the last wins whole
		{`{"endpoints":{"a\u0041":{"socket_id":"x\ty\u00e9"}}}`, true},
		{`{"endpoints":{"a":{"socket_id":"x","socket_id":"y"}}}`, true},
		{`{}`, true},
		{`{"Endpoints":{"a":{"prefix":true}}}`, false},
		{`{"endpoint\u0073":{"a":{"prefix":true}}}`, false},
		{`{"endpoints":null}`, false},
		{`{"endpoints":[]}`, false},
		{`{"endpoints":{"a":null}}`, false},
		{`{"endpoints":{"a":{"Prefix":true}}}`, false},
		{`{"endpoints":{"a":{"PREFIX":true}}}`, false},
		{`{"endpoints":{"a":{"pre\u0066ix":true}}}`, false},
		{`{"endpoints":{"a":{"prefix":1}}}`, false},
		{`{"endpoints":{"a":{"btsp_required":null}}}`, false},
		{`{"endpoints":{"a":{"btsp_framing":null}}}`, false},
		{`{"endpoints":{"a":{"btsp_framing":true}}}`, false},
		{`{"endpoints":{"a":{"updated":"yesterday"}}}`, false},
		{`{"endpoints":{"a":{"updated":12}}}`, false},
		{`{"endpoints":{"a":{"prefix":true}}`, false},
		{`{"endpoints":{"a":{"prefix":true}}} x`, false},
		{`{"endpoints":{"a":{"prefix":tru}}}`, false},
		{"{\"endpoints\":{\"a\":{\"socket_id\":\"\x01\"}}}", false},
		{`[]`, false},
		{``, false},
	}
	for _, c := range cases {
		took := sameAsUnmarshal(t, []byte(c.doc))
		if c.fast && !took {
			t.Errorf("%s: left to encoding/json, want the fast path", c.doc)
		}
		if !c.fast && took {
			t.Errorf("%s: taken by the fast path, want encoding/json", c.doc)
		}
	}
	// An "updated" the fast path took is the same instant.
	got, _ := decodeMemoryFast([]byte(`{"endpoints":{"a":{"updated":` + ts + `}}}`))
	want := time.Date(2026, 1, 2, 2, 4, 5, 123456789, time.UTC)
	if !got["a"].Updated.Equal(want) {
		t.Fatalf("updated %v, want %v", got["a"].Updated, want)
	}
}

// FuzzMemoryFileFastPath: whatever the file holds, the fast path either
// leaves it to encoding/json or decodes it exactly as encoding/json does.
func FuzzMemoryFileFastPath(f *testing.F) {
	for _, s := range []string{
		`{"note":"n","endpoints":{"unix:///run/x.sock":{"prefix":true,"btsp_required":true,"btsp_framing":"json-line","btsp_prefix":false,"socket_id":"1:2","updated":"2026-01-01T00:00:00Z"}}}`,
		`{"endpoints":{"":{"prefix":null}}}`,
		`{"endpoints":{"a":{"updated":"2026-01-01T00:00:00.5-07:00","x":[1,2,{"z":"\ud800"}]}}}`,
		`{"endpoints":{"\u00e9\"":{"socket_id":"\\\/"}}}`,
		`{"endpoints":{},"endpoints":{"b":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsUnmarshal(t, data)
	})
}
