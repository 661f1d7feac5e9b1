package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzDecodeMessage: any frame decodes to a classified message or an error,
// never a panic, and Raw always holds the frame.
func FuzzDecodeMessage(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","result":{"status":"alive"},"id":1}`))
	f.Add([]byte(`{"id":1,"error":{"code":-32601,"message":"method not found"}}`))
	f.Add([]byte(`{"type":"NewMail","data":{"account_id":"abc"}}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := DecodeMessage(frame)
		if m == nil {
			t.Fatal("nil message")
		}
		if !bytes.Equal(m.Raw, frame) {
			t.Fatal("Raw is not the frame")
		}
		if err == nil && m.Kind == KindInvalid {
			t.Fatal("invalid kind without an error")
		}
		if err != nil && m.Kind != KindInvalid {
			t.Fatalf("kind %v with error %v", m.Kind, err)
		}
		if m.Kind == KindResponse {
			if m.Result == nil && m.Error == nil {
				t.Fatal("response with neither result nor error")
			}
		}
		_, _ = m.NumericID()
		if m.JSONChecked {
			// Consumers take these as valid JSON without checking again.
			for _, v := range []json.RawMessage{m.ID, m.Params, m.Result, m.Data} {
				if v != nil && !json.Valid(v) {
					t.Fatalf("JSONChecked with a member that is not JSON: %q", v)
				}
			}
		}
		if m.Kind != KindInvalid {
			if _, err := json.Marshal(m); err != nil {
				t.Fatalf("message does not re-encode: %v", err)
			}
		}
	})
}

// FuzzLineFramer: any byte stream is cut into frames no longer than the
// limit, without panics, and a stream of valid lines round-trips.
func FuzzLineFramer(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n\n{\"id\":2}\r\n"), int64(64))
	f.Add([]byte("{\"id\":1,\"result\":\"xxxxxxxxxxxxxxxx\"}\n"), int64(8))
	f.Add([]byte("{\"id\":1"), int64(1024))
	f.Fuzz(func(t *testing.T, stream []byte, max int64) {
		if max <= 0 || max > 1<<20 {
			max = 1 << 20
		}
		fr := NewLineFramer(bytes.NewReader(stream), io.Discard, nil, max)
		for i := 0; i < len(stream)+1; i++ {
			frame, err := fr.ReadFrame()
			if err != nil {
				var fe *FrameTooLargeError
				if errors.As(err, &fe) && fe.Limit != max {
					t.Fatalf("limit %d reported as %d", max, fe.Limit)
				}
				return
			}
			if int64(len(frame)) > max {
				t.Fatalf("frame of %d bytes over the %d limit", len(frame), max)
			}
			if bytes.IndexByte(frame, '\n') >= 0 {
				t.Fatal("frame contains a newline")
			}
		}
		t.Fatal("more frames than bytes")
	})
}

// FuzzParseEndpoint: every string parses or fails cleanly, and what parses
// renders to a string that parses back to the same endpoint.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{"/tmp/x.sock", "unix:///a", "tcp://h:1", "h:1", "@a", "ws://h:1", `stdio:"a 'b c'"`, "beardog"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := ParseEndpoint(s)
		if err != nil {
			return
		}
		back, err := ParseEndpoint(ep.String())
		if err != nil {
			t.Fatalf("%q rendered as %q which fails: %v", s, ep.String(), err)
		}
		if back.Transport != ep.Transport {
			t.Fatalf("%q: %s became %s through %q", s, ep.Transport, back.Transport, ep.String())
		}
		again, err := ParseEndpoint(back.String())
		if err != nil || again.String() != back.String() {
			t.Fatalf("%q: rendering is not stable: %q then %q (%v)", s, back.String(), again.String(), err)
		}
	})
}

// FuzzScanMatchesStdlib: the fast scanner accepts exactly the objects
// encoding/json accepts, and extracts the same member values (exact-case
// keys; encoding/json also matches keys case-insensitively, which JSON-RPC
// does not).
func FuzzScanMatchesStdlib(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"result":{"a":[1,2.5e3,"x\u00e9"]}}`))
	f.Add([]byte(`{"id":"7","method":"m","params":[true,false,null],"id":8}`))
	f.Add([]byte(` { } `))
	f.Fuzz(func(t *testing.T, b []byte) {
		var members map[string]json.RawMessage
		stdErr := json.Unmarshal(b, &members)
		isObj := stdErr == nil && members != nil
		got := map[string]json.RawMessage{}
		err := scanTopObject(b, func(name, value []byte, _ []int) error {
			n, uerr := unquote(name)
			if uerr != nil {
				return uerr
			}
			got[n] = value
			return nil
		})
		if (err == nil) != isObj {
			t.Fatalf("scanner says %v, encoding/json says %v (object %v) for %q", err, stdErr, isObj, b)
		}
		if err != nil {
			return
		}
		for k, v := range members {
			if !bytes.Equal(bytes.TrimSpace(got[k]), bytes.TrimSpace(v)) {
				t.Fatalf("member %q: scanner %q, encoding/json %q", k, got[k], v)
			}
		}
	})
}
