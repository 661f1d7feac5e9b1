package history

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsSecretKeyVariants(t *testing.T) {
	secret := []string{
		"pin", "Pin", "PIN", "pin_code", "userPin", "PINCode", "card-pin", "OTP", "otpCode", "totp",
		"jwt", "id_jwt", "JWT_TOKEN", "bearer", "Bearer", "bearerToken", "pass", "db_pass", "passCode",
		"passwd", "passphrase", "session_id", "sessionId", "SESSIONID", "session-id", "session.id",
		"sid", "api_key", "api-key", "apiKey", "APIKEY", "X_API_KEY", "x-api-key", "x.api key",
		"auth", "x-auth", "basicAuth", "authorization", "Authorization", "cookie", "Set-Cookie",
		"credential", "credentials", "client_secret", "clientSecret", "access_token", "refresh_token",
		"refreshToken", "private_key", "privateKey", "oauth",
	}
	plain := []string{
		"ping", "mapping", "spinner", "pinned", "shipping", "passenger", "bypass", "compass",
		"footprint", "session", "option", "topic", "author", "description", "keyboard", "key",
		"sidebar", "inside", "message", "max_tokens",
	}
	checkSecretKeys(t, secret, plain)
}

func TestRedactScan(t *testing.T) {
	cases := []struct {
		name, in string
		vals     []string
		text     bool
		want     string
	}{
		{"keys at any depth", `{"a":[{"Pin":"1234","x":1}],"b":{"apiKey":{"deep":["v"]}}, "ok" : "y"}`, nil, false,
			`{"a":[{"Pin":"[redacted]","x":1}],"b":{"apiKey":"[redacted]"}, "ok" : "y"}`},
		{"spaces kept, numbers and literals redacted", `{ "otp" : 123456 , "jwt":null,"n":2}`, nil, false,
			`{ "otp" : "[redacted]" , "jwt":"[redacted]","n":2}`},
		{"escaped key", `{"pass\u0077ord":"x","a\"b":"y"}`, nil, false, `{"pass\u0077ord":"[redacted]","a\"b":"y"}`},
		{"a string that is not a key", `["password","pin"]`, nil, false, `["password","pin"]`},
		{"cut inside a secret value", `{"ok":1,"token":"abcdef`, nil, false, `{"ok":1,"token":"[redacted]"`},
		{"cut inside a secret object", `{"token":{"a":"b","c":[1,`, nil, false, `{"token":"[redacted]"`},
		{"cut after the colon", `{"token":`, nil, false, `{"token":"[redacted]"`},
		{"cut inside a key", `{"ok":1,"tok`, nil, false, `{"ok":1,"tok`},
		{"value in a string", `{"msg":"your hunter22 is wrong","hunter22":1}`, []string{"hunter22"}, false,
			`{"msg":"your [redacted] is wrong","[redacted]":1}`},
		{"a secret number alone", `{"n":4821,"m":948213,"s":"4821x","t":[4821]}`, []string{"4821"}, false,
			`{"n":"[redacted]","m":948213,"s":"[redacted]x","t":["[redacted]"]}`},
		{"escaped form", `{"m":"say \"qu\\ote\""}`, []string{`"qu\ote"`}, false, `{"m":"say [redacted]"}`},
		{"text echoing params", `invalid params: {"password":"hunter22","n":1} (hunter22)`, []string{"hunter22"}, true,
			`invalid params: {"password":"[redacted]","n":1} ([redacted])`},
		{"text with quotes only", `don't "quote" me: fine`, nil, true, `don't "quote" me: fine`},
		{"unbalanced quote", `bad "token": hunter22 and "more`, []string{"hunter22"}, true, `bad "token": "[redacted]" and "more`},
	}
	for _, c := range cases {
		got := redactScan([]byte(c.in), newScrubber(c.vals).in([]byte(c.in)), c.text, nil)
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
	// Unchanged input comes back as it is, not copied.
	in := []byte(`{"a":[1,2,{"b":"c"}]}`)
	if out := redactScan(in, nil, false, nil); &out[0] != &in[0] {
		t.Error("an unchanged document was copied")
	}
	// The values under secret keys are collected, long enough ones only.
	var vals []string
	redactScan([]byte(`{"password":"hunter22","pin":123,"otp":98765,"credentials":{"user":"bob1","pass":["s3cr3t"]}}`), nil, false, &vals)
	if strings.Join(vals, ",") != "hunter22,98765,bob1,s3cr3t" {
		t.Errorf("collected %q", vals)
	}
}

// secretEntry is a call whose peer echoes the params everywhere.
func secretEntry() Entry {
	e := sample(1)
	e.Params = json.RawMessage(`{"password":"hunter2-SECRET","Pin":"4821","X_API_KEY":"k-SECRET-99","note":"plain"}`)
	e.Result = json.RawMessage(`{"echo":{"pw":"hunter2-SECRET","pin":4821,"count":948213,"key":"k-SECRET-99"},"note":"plain"}`)
	e.Error = &RPCError{Code: -32602,
		Message: `invalid params: {"password":"hunter2-SECRET","Pin":"4821","X_API_KEY":"k-SECRET-99"}`,
		Data:    json.RawMessage(`{"got":"password hunter2-SECRET","pin":"4821","apiKey":"k-SECRET-99"}`)}
	e.Outcome = OutcomeError
	return e
}

var secretsOfEntry = []string{"hunter2", "4821\"", "4821,", ":4821", "k-SECRET"}

func hasSecret(b []byte) string {
	for _, s := range secretsOfEntry {
		if bytes.Contains(b, []byte(s)) {
			return s
		}
	}
	return ""
}

// Every path a secret from the params can take into the store: the result,
// the error message, the error data, the full-text index, the files and
// each export.
func TestNoSecretPersists(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	rec, err := j.Append(secretEntry())
	if err != nil {
		t.Fatal(err)
	}
	recFile, _ := os.ReadFile(filepath.Join(j.Dir(), rec+recordExt))
	if w := hasSecret(recFile); w != "" {
		t.Errorf("journal record holds %q", w)
	}
	ids, err := s.Add(ctx, secretEntry()) // the direct path too
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fold(ctx, FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	folded, err := s.GetRecord(ctx, rec)
	if err != nil {
		t.Fatal(err)
	}
	added, _ := s.Get(ctx, ids[0])
	for name, e := range map[string]Entry{"folded": folded, "added": added} {
		if w := hasSecret(e.Result); w != "" || !json.Valid(e.Result) {
			t.Errorf("%s result %s (holds %q)", name, e.Result, w)
		}
		if !strings.Contains(string(e.Result), "948213") || !strings.Contains(string(e.Result), `"note":"plain"`) {
			t.Errorf("%s result lost plain data: %s", name, e.Result)
		}
		if w := hasSecret([]byte(e.Error.Message)); w != "" {
			t.Errorf("%s error message %q (holds %q)", name, e.Error.Message, w)
		}
		if w := hasSecret(e.Error.Data); w != "" || !json.Valid(e.Error.Data) {
			t.Errorf("%s error data %s (holds %q)", name, e.Error.Data, w)
		}
		if w := hasSecret(e.Params); w != "" || !strings.Contains(string(e.Params), `"note":"plain"`) {
			t.Errorf("%s params %s", name, e.Params)
		}
		j, _ := json.Marshal(e)
		if w := hasSecret(j); w != "" {
			t.Errorf("%s history --json form holds %q", name, w)
		}
		cmdc, err1 := CommandFor(e)
		cmd := cmdc.Line
		soc, err2 := socatLine(e)
		env, err3 := Envelope(e, 1)
		for _, x := range []string{cmd, soc, string(env)} {
			if w := hasSecret([]byte(x)); w != "" {
				t.Errorf("%s export %q holds %q", name, x, w)
			}
		}
		if err1 != nil || err2 != nil || err3 != nil || !strings.Contains(cmd, "[redacted]") {
			t.Errorf("%s exports: %v %v %v %q", name, err1, err2, err3, cmd)
		}
	}
	for _, q := range []string{"hunter2", "hunter2-SECRET", "SECRET", "4821", "k-SECRET-99"} {
		if es, err := s.Search(ctx, Query{Text: q}); err != nil || len(es) != 0 {
			t.Errorf("full-text search for %q found %d calls (%v)", q, len(es), err)
		}
	}
	// The index itself, read back with a query on each stored column.
	if es, _ := s.Search(ctx, Query{Text: "invalid params"}); len(es) != 2 {
		t.Errorf("the redacted message is not indexed: %d", len(es))
	}
	s.Close()
	for _, f := range []string{s.Path(), s.Path() + "-wal"} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("k-SECRET")) {
			t.Errorf("a secret is in %s", filepath.Base(f))
		}
	}
}

// An answer cut to the entry limit is redacted after the cut: a secret
// value that the cut falls in is not stored in part.
func TestCutThenRedact(t *testing.T) {
	pad := strings.Repeat("x", 100)
	e := sample(1)
	e.Result = json.RawMessage(`{"pad":"` + pad + `","access_token":"ABCDEFGHIJKLMNOP"}`)
	limit := len(`{"pad":"` + pad + `","access_token":"ABCDEF`)
	r := prepareEntry(e, Options{EntryLimit: limit})
	if !r.e.Truncated || bytes.Contains(r.e.Result, []byte("ABC")) || !bytes.HasSuffix(r.e.Result, []byte(`"access_token":"[redacted]"`)) {
		t.Errorf("cut result %s (truncated %v)", r.e.Result, r.e.Truncated)
	}
	// Params are redacted whole, then cut: a secret past the cut is still
	// scrubbed from the result.
	e = sample(1)
	e.Params = json.RawMessage(`{"pad":"` + pad + `","password":"LATE-SECRET"}`)
	e.Result = json.RawMessage(`{"echo":"LATE-SECRET"}`)
	r = prepareEntry(e, Options{EntryLimit: 50})
	if bytes.Contains(r.e.Result, []byte("LATE")) || bytes.Contains(r.e.Params, []byte("LATE")) || !r.e.ParamsTruncated {
		t.Errorf("params %s result %s", r.e.Params, r.e.Result)
	}
}

func TestKnownSecretsEverywhere(t *testing.T) {
	const seed = "FAMILY-SEED-abcdef0123"
	e := sample(1)
	e.Target = "t-" + seed
	e.Params = json.RawMessage(`{"x":"` + seed + `"}`)
	e.Result = json.RawMessage(`["` + seed + `"]`)
	e.Error = &RPCError{Message: "bad seed " + seed, Data: json.RawMessage(`{"s":"` + seed + `"}`)}
	e.Session, e.Pool, e.Endpoint, e.Method = seed, seed, "unix:///"+seed, "m."+seed
	r := prepareEntry(e, Options{Secrets: []string{seed}})
	b, _ := json.Marshal(r.e)
	if bytes.Contains(b, []byte(seed)) || strings.Contains(r.errText, seed) {
		t.Errorf("the seed survived: %s", b)
	}
}

// TestCutNeverSplitsASecret: where the entry limit falls inside a known
// secret (the family seed echoed in a result or an error message), none of
// its bytes are kept: the cut moves to where the secret starts.
func TestCutNeverSplitsASecret(t *testing.T) {
	const seed = "FAMILY-SEED-abcdef0123"
	pad := strings.Repeat("x", 100)
	for cut := 1; cut < len(seed); cut++ {
		e := sample(1)
		e.Params = json.RawMessage(`{}`)
		e.Result = json.RawMessage(`{"pad":"` + pad + `","echo":"` + seed + `"}`)
		e.Error = &RPCError{Message: pad + seed}
		limit := len(`{"pad":"`+pad+`","echo":"`) + cut
		r := prepareEntry(e, Options{EntryLimit: limit, Secrets: []string{seed}})
		if bytes.Contains(r.e.Result, []byte("FAM")) || bytes.HasSuffix(r.e.Result, []byte(seed[:1])) {
			t.Fatalf("cut %d: result keeps part of the seed: %s", cut, r.e.Result)
		}
		if !r.e.Truncated {
			t.Fatalf("cut %d: not marked truncated", cut)
		}
		e.Result = nil
		r = prepareEntry(e, Options{EntryLimit: len(pad) + cut, Secrets: []string{seed}})
		if strings.HasSuffix(r.e.Error.Message, seed[:1]) || strings.Contains(r.e.Error.Message, "FAM") {
			t.Fatalf("cut %d: message keeps part of the seed: %q", cut, r.e.Error.Message)
		}
	}
}

// A JSON literal sent as text under a secret key ({"auth":"true"}) is no
// secret to hide elsewhere: the result's booleans were recorded as
// "[redacted]" (strings: a replay or a diff saw another type), and every
// "true" of its text hidden. A real value sent so is still hidden.
func TestLiteralSentUnderASecretKeyIsNoSecret(t *testing.T) {
	e := Entry{Method: "m", Params: []byte(`{"auth":"true","token":"tok-1234567"}`),
		Result: []byte(`{"ok":true,"s":"true story","echo":"tok-1234567"}`)}
	r := prepareEntry(e, Options{})
	if got := string(r.e.Result); got != `{"ok":true,"s":"true story","echo":"[redacted]"}` {
		t.Fatalf("result recorded as %s", got)
	}
}

// TestKeyJudgeKeepsAnObjectsKeys: the keys of the objects of a large
// answer are judged once each, however many objects repeat them (the keys
// of bench/ndjsonpeer's bench.sample, of which "delta" and "state" took
// the same slot of the cache before, and were judged on every object).
func TestKeyJudgeKeepsAnObjectsKeys(t *testing.T) {
	keys := []string{"id", "name", "ok", "load", "delta", "parent", "state", "tags", "note", "password"}
	var doc []byte
	var spans [][2]int
	for range 1000 {
		for _, k := range keys {
			open := len(doc)
			doc = append(doc, '"')
			doc = append(doc, k...)
			spans = append(spans, [2]int{open, len(doc)})
			doc = append(doc, `":1,`...)
		}
	}
	var kj keyJudge
	for n, sp := range spans {
		want := keys[n%len(keys)] == "password"
		if got := kj.secret(doc, sp[0], sp[1]); got != want {
			t.Fatalf("key %q: secret %v, want %v", keys[n%len(keys)], got, want)
		}
	}
	if kj.misses > len(keys) {
		t.Fatalf("%d keys judged for %d objects of %d keys: the cache does not keep them", kj.misses, 1000, len(keys))
	}
}

// TestStringEnd: the closing quote is the first one not escaped, for short
// strings (walked) and long ones (quote to quote), escapes at every place
// of the walk's end, and strings cut by the end of the document.
func TestStringEnd(t *testing.T) {
	// want: the first quote after open preceded by an even run of
	// backslashes, as the quote-to-quote search has always found it.
	want := func(doc []byte, open int) int {
		for q := open + 1; q < len(doc); q++ {
			if doc[q] != '"' {
				continue
			}
			bs := 0
			for b := q - 1; b > open && doc[b] == '\\'; b-- {
				bs++
			}
			if bs%2 == 0 {
				return q
			}
		}
		return len(doc)
	}
	pieces := []string{`a`, `\\`, `\"`, `"`, `\`, `é`, `\u0022`}
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		b.WriteString(`x"`)
		for k, x := 0, uint(n); k < 12+n%40; k++ {
			b.WriteString(pieces[(x+uint(k*k))%uint(len(pieces))])
			x = x*7 + 3
		}
		doc := []byte(b.String())
		for cut := 2; cut <= len(doc); cut += 1 + n%5 {
			if got, w := stringEnd(doc[:cut], 1), want(doc[:cut], 1); got != w {
				t.Fatalf("stringEnd(%q, 1) = %d, want %d", doc[:cut], got, w)
			}
		}
	}
	for _, tc := range []struct {
		doc  string
		want int
	}{
		{`"abc"`, 4}, {`"a\"b"`, 5}, {`"a\\"b"`, 4}, {`"` + strings.Repeat("a", 31) + `\"` + strings.Repeat("b", 40) + `"`, 74}, {`"ab`, 3}, {`"a\`, 3},
	} {
		if got := stringEnd([]byte(tc.doc), 0); got != tc.want {
			t.Errorf("stringEnd(%q) = %d, want %d", tc.doc, got, tc.want)
		}
	}
}
