package ipc

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"
	"time"
)

// sameAsUnmarshal fails t when decodeRecordFast accepts b but gives
// anything else than encoding/json does. It reports whether the fast path
// took b.
func sameAsUnmarshal(t *testing.T, b []byte) bool {
	t.Helper()
	key, got, ok := decodeRecordFast(b)
	if !ok {
		return false
	}
	var want record
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("the fast path took %q, which encoding/json refuses: %v", b, err)
	}
	if key != want.Endpoint || !reflect.DeepEqual(got, want.EndpointFacts) {
		t.Fatalf("%q: fast path %q %+v, encoding/json %q %+v", b, key, got, want.Endpoint, want.EndpointFacts)
	}
	return true
}

// TestRecordFastPathTakesWhatFlushWrites: the record Flush writes (every
// field set, a key that needs escaping) is decoded without encoding/json,
// to the same facts: otherwise every call would pay for the reflection.
func TestRecordFastPathTakesWhatFlushWrites(t *testing.T) {
	dir := t.TempDir()
	m, _ := OpenEndpointMemory(dir)
	yes, no := true, false
	eps := []Endpoint{{Transport: Unix, Path: "/run/a&b<c>.sock"}, {Transport: Unix, Path: "/run/é\u202e.sock"}}
	m.Update(eps[0], func(f *EndpointFacts) {
		f.Prefix, f.BTSPRequired, f.Framing, f.BTSPPrefix, f.Socket = &yes, true, "length-prefixed", &no, "12:34.5"
	})
	m.Update(eps[1], func(f *EndpointFacts) { f.Prefix = &no })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		b, err := os.ReadFile(EndpointRecordPath(dir, ep))
		if err != nil {
			t.Fatal(err)
		}
		if !sameAsUnmarshal(t, b) {
			t.Fatalf("the record Flush wrote is left to encoding/json: %s", b)
		}
	}
}

// TestRecordFastPathLeavesTheRestToEncodingJSON: what the writer never
// produces goes to encoding/json; what the fast path takes, it decodes as
// encoding/json does.
func TestRecordFastPathLeavesTheRestToEncodingJSON(t *testing.T) {
	const ts = `"2026-01-02T03:04:05.123456789+01:00"`
	cases := []struct {
		doc  string
		fast bool
	}{
		{`{"endpoint":"unix:///a","prefix":true,"btsp_required":false,"btsp_framing":"json-line","btsp_prefix":null,"socket_id":"1:2","updated":` + ts + `}`, true},
		{`{"endpoint":"a\u0041","socket_id":"x\ty\u00e9","updated":` + ts + `}`, true},
		{`{"endpoint":"a","note":1,"updated":` + ts + `}`, true},
		{`{"Endpoint":"a"}`, false},
		{`{"endpoin\u0074":"a"}`, false},
		{`{"endpoint":null}`, false},
		{`{"endpoint":1}`, false},
		{`{"prefix":true}`, false},
		{`{"endpoint":"a","Prefix":true}`, false},
		{`{"endpoint":"a","prefix":1}`, false},
		{`{"endpoint":"a","updated":"yesterday"}`, false},
		{`{"endpoint":"a","prefix":true`, false},
		{`{"endpoint":"a"} x`, false},
		{"{\"endpoint\":\"\x01\"}", false},
		{`[]`, false},
		{``, false},
	}
	for _, c := range cases {
		took := sameAsUnmarshal(t, []byte(c.doc))
		if c.fast != took {
			t.Errorf("%s: fast path took it: %v, want %v", c.doc, took, c.fast)
		}
	}
	_, f, _ := decodeRecordFast([]byte(`{"endpoint":"a","updated":` + ts + `}`))
	if want := time.Date(2026, 1, 2, 2, 4, 5, 123456789, time.UTC); !f.Updated.Equal(want) {
		t.Fatalf("updated %v, want %v", f.Updated, want)
	}
}

// FuzzRecordFastPath: whatever a record holds, the fast path either leaves
// it to encoding/json or decodes it exactly as encoding/json does.
func FuzzRecordFastPath(f *testing.F) {
	for _, s := range []string{
		`{"endpoint":"unix:///run/x.sock","prefix":true,"btsp_required":true,"btsp_framing":"json-line","btsp_prefix":false,"socket_id":"1:2","updated":"2026-01-01T00:00:00Z"}`,
		`{"endpoint":"a","prefix":null}`,
		`{"endpoint":"a\u0041"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { sameAsUnmarshal(t, b) })
}
