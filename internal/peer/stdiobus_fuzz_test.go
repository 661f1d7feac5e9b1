package peer

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseRouting: the daemon's routing-field extraction never panics, and
// accepts exactly the JSON objects.
func FuzzParseRouting(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","pool":"alpha","sessionId":"S1"}`,
		`{"jsonrpc":"2.0","id":"w1","result":{"ok":true},"sessionId":"S1"}`,
		`{"id":null,"error":{"code":-32700}}`,
		`{"sessionId":5}`,
		`[1,2]`,
		"\xec\x01{}",
		`{"id":1,`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		r, sid, pool, ok, bad := parseRouting(line)
		t2 := bytes.TrimSpace(line)
		isObj := len(t2) > 0 && t2[0] == '{' && json.Valid(t2)
		if ok != isObj {
			t.Fatalf("ok=%v for %q", ok, line)
		}
		if !ok && (sid != "" || pool != "" || bad) {
			t.Fatalf("fields from a non-object %q", line)
		}
		_ = r.isResponse()
		if len(r.ID) > 0 {
			_ = idKey(r.ID)
		}
	})
}
