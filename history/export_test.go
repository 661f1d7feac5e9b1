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

func TestCommandFor(t *testing.T) {
	seedNote := "FAMILY_SEED"
	cases := []struct {
		name  string
		e     Entry
		want  string
		notes []string // substrings, one a note, in order
	}{
		{"plain: the endpoint, not the name",
			Entry{Target: "beardog", Endpoint: "unix:///run/b.sock", Method: "crypto.sign", Params: json.RawMessage(`{"msg":"it's"}`)},
			`primalscope call /run/b.sock crypto.sign '{"msg":"it'\''s"}'`, nil},
		{"BTSP, family-scoped",
			Entry{Target: "beardog-westgate-tower-155f", Endpoint: "/run/b/beardog-westgate-tower-155f.sock", Family: "westgate-tower-155f",
				Transport: "unix+btsp(chacha20-poly1305 negotiated)", Method: "health.liveness"},
			`primalscope call --family westgate-tower-155f /run/b/beardog-westgate-tower-155f.sock health.liveness`, []string{seedNote}},
		{"refused for want of a seed",
			Entry{Target: "beardog-fam1", Endpoint: "/run/b/beardog-fam1.sock", Family: "fam1", Transport: "unix", Outcome: OutcomeRefused, Method: "m"},
			`primalscope call --family fam1 /run/b/beardog-fam1.sock m`, []string{seedNote}},
		{"bus pool: the bus, with its pool",
			Entry{Target: "stdiobus/echo", Endpoint: "/run/b/stdiobus.sock", Session: "S1", Pool: "echo", Method: "x.y", Params: json.RawMessage(`{"a":1}`)},
			`primalscope call --session S1 --pool echo /run/b/stdiobus.sock x.y '{"a":1}'`, nil},
		{"lean wire, prefix learned",
			Entry{Target: "rhizocrypt", Endpoint: "/run/b/rhizocrypt.sock", Wire: "lean", Prefix: true, Transport: "unix+ribocipher", Method: "dag.get"},
			`primalscope call --wire lean --prefix on /run/b/rhizocrypt.sock dag.get`, nil},
		{"cleartext on purpose",
			Entry{Endpoint: "/run/b/x-fam1.sock", Family: "fam1", Transport: "unix (CLEARTEXT to a BTSP endpoint, on purpose)", Method: "m"},
			`primalscope call --family fam1 --btsp-cipher null /run/b/x-fam1.sock m`, []string{"cleartext"}},
		{"an unencrypted session asked for",
			Entry{Endpoint: "/run/b/x.sock", Transport: "unix+btsp(hmac_plain, length-prefixed)", Method: "m"},
			`primalscope call --btsp-cipher hmac_plain /run/b/x.sock m`, []string{"hmac_plain", seedNote}},
		{"no endpoint recorded",
			Entry{Target: "songbird", Method: "ipc.list"},
			`primalscope call songbird ipc.list`, []string{"--socket-dir"}},
		{"relative socket path",
			Entry{Target: "x.sock", Endpoint: "x.sock", Method: "m"},
			`primalscope call x.sock m`, []string{"relative"}},
		{"a method like a flag",
			Entry{Endpoint: "tcp://127.0.0.1:9200", Method: "-v"},
			`primalscope call -- tcp://127.0.0.1:9200 -v`, nil},
	}
	for _, c := range cases {
		got, err := CommandFor(c.e)
		if err != nil || got.Line != c.want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", c.name, got.Line, err, c.want)
			continue
		}
		if len(got.Notes) != len(c.notes) {
			t.Errorf("%s: notes %q, want %d", c.name, got.Notes, len(c.notes))
			continue
		}
		for i, n := range c.notes {
			if !strings.Contains(got.Notes[i], n) {
				t.Errorf("%s: note %q lacks %q", c.name, got.Notes[i], n)
			}
		}
	}
	for _, bad := range []Entry{
		{Target: "x\x1b[2J", Method: "m"},
		{Endpoint: "/run/b/x.sock", Method: "m\n"},
		{Endpoint: "/run/b/x.sock", Method: "m", Params: json.RawMessage(`{"a"`), ParamsTruncated: true},
		{Endpoint: "/run/b/x.sock"},
	} {
		if _, err := CommandFor(bad); err == nil {
			t.Errorf("CommandFor(%+v) exported", bad)
		}
	}
}

// TestCommandForShellQuoting: what a shell makes of the line is the
// endpoint, method and params as they were, whatever they hold.
func TestCommandForShellQuoting(t *testing.T) {
	e := Entry{Endpoint: "/tmp/a b/it's $(x).sock", Method: "m`id`",
		Params: json.RawMessage(`{"s":"$(touch /nonexistent/pwned) ' \" \\ \n ` + "`id`" + ` ;|&"}`)}
	c, err := CommandFor(e)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sh", "-c", "printf '%s\\n' "+strings.TrimPrefix(c.Line, "primalscope call ")).Output()
	if err != nil {
		t.Skip("no sh:", err)
	}
	if want := e.Endpoint + "\n" + e.Method + "\n" + string(e.Params) + "\n"; string(out) != want {
		t.Errorf("shell read %q, want %q", out, want)
	}
}

func socatLine(e Entry) (string, error) {
	c, err := SocatFor(e)
	return c.Line, err
}

func TestSocatLine(t *testing.T) {
	e := Entry{Endpoint: "unix:///run/user/1000/biomeos/beardog.sock", Method: "health.liveness", Transport: "unix"}
	got, err := socatLine(e)
	want := `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"health.liveness"}' | socat - UNIX-CONNECT:/run/user/1000/biomeos/beardog.sock`
	if err != nil || got != want {
		t.Errorf("unix:\n got %s (%v)\nwant %s", got, err, want)
	}
	e.Endpoint, e.Prefix = "tcp://127.0.0.1:9200", true
	got, _ = socatLine(e)
	want = `printf '\354\001%s\n' '{"jsonrpc":"2.0","id":1,"method":"health.liveness"}' | socat - TCP-CONNECT:127.0.0.1:9200`
	if got != want {
		t.Errorf("tcp:\n got %s\nwant %s", got, want)
	}
	if c, _ := SocatFor(e); len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "EC 01") {
		t.Errorf("the prefix is not said: %q", c.Notes)
	}
	e.Prefix, e.Error = false, &RPCError{Code: -32002, Message: "prefix required"}
	if c, _ := SocatFor(e); len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "-32002") {
		t.Errorf("a -32002 answer is not said: %q", c.Notes)
	}
	for _, bad := range []Entry{
		{Endpoint: "ws://127.0.0.1:8080/rpc", Method: "m"},
		{Endpoint: `stdio:"cat"`, Method: "m"},
		{Endpoint: "unix:///x.sock", Method: "m", Transport: "unix+btsp(chacha20_poly1305)"},
		{Endpoint: "/run/b/beardog.sock", Method: "m", Transport: "unix", Outcome: OutcomeRefused},
		{Endpoint: "/run/b/beardog-fam1.sock", Family: "fam1", Method: "m", Transport: "unix", Outcome: OutcomeUnreachable},
	} {
		if _, err := socatLine(bad); !errors.Is(err, ErrNoRawWire) {
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
