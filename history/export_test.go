package history

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

func TestEnvelope(t *testing.T) {
	e := Entry{Method: "storage.get", Params: json.RawMessage("{\"key\": \"a\",\n \"n\":1}"), Wire: "jsonrpc"}
	cases := []struct {
		wire, session, pool string
		params              json.RawMessage
		want                string
	}{
		{"jsonrpc", "", "", e.Params, `{"jsonrpc":"2.0","id":1,"method":"storage.get","params":{"key":"a","n":1}}`},
		{"", "", "", e.Params, `{"jsonrpc":"2.0","id":1,"method":"storage.get","params":{"key":"a","n":1}}`},
		{"lean", "", "", nil, `{"id":1,"method":"storage.get"}`},
		{"holon", "", "", nil, `{"jsonrpc":"2.0","id":"1","method":"storage.get","params":{}}`},
		{"jsonrpc", "s1", "p", json.RawMessage(`["\u007f"]`), `{"jsonrpc":"2.0","id":1,"method":"storage.get","params":["\u007f"],"sessionId":"s1","pool":"p"}`},
	}
	for _, c := range cases {
		x := e
		x.Wire, x.Session, x.Pool, x.Params = c.wire, c.session, c.pool, c.params
		got, err := Envelope(x, 1)
		if err != nil || string(got) != c.want {
			t.Errorf("Envelope(%s) = %s, %v\nwant %s", c.wire, got, err, c.want)
		}
	}
	e.ParamsTruncated = true
	if _, err := Envelope(e, 1); !errors.Is(err, ErrParamsCut) {
		t.Errorf("cut params: %v", err)
	}
}

func TestCommandLine(t *testing.T) {
	e := Entry{Target: "beardog", Endpoint: "unix:///run/b.sock", Method: "crypto.sign", Params: json.RawMessage(`{"msg":"it's"}`)}
	got, err := CommandLine(e)
	if want := `primalscope call beardog crypto.sign '{"msg":"it'\''s"}'`; err != nil || got != want {
		t.Errorf("CommandLine = %s, %v\nwant %s", got, err, want)
	}
	e.Target, e.Wire, e.Pool, e.Params = "", "lean", "agents", nil
	got, _ = CommandLine(e)
	if want := `primalscope call --wire lean --pool agents unix:///run/b.sock crypto.sign`; got != want {
		t.Errorf("CommandLine = %s\nwant %s", got, want)
	}
	e.Target = "x\x1b[2J"
	if _, err := CommandLine(e); err == nil {
		t.Error("a target with control characters was exported")
	}
	// The quoting survives a real shell.
	e = Entry{Target: "a b", Method: "m", Params: json.RawMessage(`{"s":"$(touch /nonexistent) ' \" \\"}`)}
	line, _ := CommandLine(e)
	out, err := exec.Command("sh", "-c", "printf '%s\\n' "+strings.TrimPrefix(line, "primalscope call ")).Output()
	if err != nil {
		t.Skip("no sh:", err)
	}
	if want := "a b\nm\n" + string(e.Params) + "\n"; string(out) != want {
		t.Errorf("shell read %q, want %q", out, want)
	}
}

func TestSocatLine(t *testing.T) {
	e := Entry{Endpoint: "unix:///run/user/1000/biomeos/beardog.sock", Method: "health.liveness", Transport: "unix"}
	got, err := SocatLine(e)
	want := `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"health.liveness"}' | socat - UNIX-CONNECT:/run/user/1000/biomeos/beardog.sock`
	if err != nil || got != want {
		t.Errorf("unix:\n got %s (%v)\nwant %s", got, err, want)
	}
	e.Endpoint, e.Prefix = "tcp://127.0.0.1:9200", true
	got, _ = SocatLine(e)
	want = `printf '\354\001%s\n' '{"jsonrpc":"2.0","id":1,"method":"health.liveness"}' | socat - TCP-CONNECT:127.0.0.1:9200`
	if got != want {
		t.Errorf("tcp:\n got %s\nwant %s", got, want)
	}
	for _, bad := range []Entry{
		{Endpoint: "ws://127.0.0.1:8080/rpc", Method: "m"},
		{Endpoint: `stdio:"cat"`, Method: "m"},
		{Endpoint: "unix:///x.sock", Method: "m", Transport: "unix+btsp(chacha20_poly1305)"},
	} {
		if _, err := SocatLine(bad); !errors.Is(err, ErrNoRawWire) {
			t.Errorf("SocatLine(%s %s) = %v, want ErrNoRawWire", bad.Endpoint, bad.Transport, err)
		}
	}
}

func TestSafeJSON(t *testing.T) {
	in := []byte("[\"a\u009bb\u202e\x7f\xff\"]")
	got := SafeJSON(in)
	if want := `["a\u009bb\u202e\u007f\ufffd"]`; string(got) != want {
		t.Errorf("SafeJSON = %s, want %s", got, want)
	}
	if !json.Valid(got) {
		t.Error("not valid JSON")
	}
	plain := []byte(`{"a":"é"}`)
	if string(SafeJSON(plain)) != string(plain) {
		t.Error("plain JSON changed")
	}
}
