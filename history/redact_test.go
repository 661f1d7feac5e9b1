package history

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestIsSecretKey(t *testing.T) {
	secret := []string{
		"seed", "family_seed", "FAMILY_SEED", "familySeed", "secret", "client_secret",
		"password", "Password", "passwd", "passphrase", "pwd", "token", "access_token",
		"authToken", "auth", "Authorization", "authority_token", "private_key", "privateKey",
		"PRIVKEY", "api_key", "apiKey", "X-Api-Key", "key_material", "keyMaterial",
		"credentials", "credential", "session_key", "signingKey", "btsp_key", "mnemonic",
		"master-keys", "cookie", "psk",
	}
	plain := []string{
		"key", "keys", "message", "method", "name", "author", "authors", "max_tokens",
		"prompt_tokens", "monkey", "hockey", "capability", "data", "", "___",
	}
	checkSecretKeys(t, secret, plain)
}

// checkSecretKeys checks that IsSecretKey holds for each of secret and for
// none of plain.
func checkSecretKeys(t *testing.T, secret, plain []string) {
	t.Helper()
	for _, k := range secret {
		if !IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = false, want true", k)
		}
	}
	for _, k := range plain {
		if IsSecretKey(k) {
			t.Errorf("IsSecretKey(%q) = true, want false", k)
		}
	}
}

func TestRedact(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"family_seed":"S","nested":[{"password":"P","ok":1}]}`,
			`{"family_seed":"[redacted]","nested":[{"password":"[redacted]","ok":1}]}`},
		{`{"a":{"b":{"Token":{"deep":["x"]}}}}`, `{"a":{"b":{"Token":"[redacted]"}}}`},
		{`[{"seed":1},{"seed":null},"seed"]`, `[{"seed":"[redacted]"},{"seed":"[redacted]"},"seed"]`},
		{` { "n" : 1.50e3 , "s":"<&>\u001b" } `, `{"n":1.50e3,"s":"<&>\u001b"}`},
		{`{"seed":"a","seed":"b"}`, `{"seed":"[redacted]","seed":"[redacted]"}`},
		{`"just a string"`, `"just a string"`},
		{`123`, `123`},
	}
	for _, c := range cases {
		got, _, err := Redact([]byte(c.in))
		if err != nil {
			t.Errorf("Redact(%s): %v", c.in, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("Redact(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{`{`, `{"seed":`, `{"a":1}{"b":2}`, `nope`, `{"seed":[1,2}`, `[1,]`} {
		if out, _, err := Redact([]byte(bad)); err == nil {
			t.Errorf("Redact(%s) = %s, want an error", bad, out)
		}
	}
	deep := bytes.Repeat([]byte("["), maxRedactDepth+10)
	if _, _, err := Redact(deep); err == nil {
		t.Error("Redact of a too-deep document succeeded")
	}
}

// The sentinel must never reach the database, its WAL or its shared memory
// file, whether it comes in params, in a result or in error data.
func TestSentinelSecretNeverOnDisk(t *testing.T) {
	const seed = "SENTINEL-FAMILY-SEED-7f3a9c"
	const pass = "SENTINEL-PASSWORD-0b1d2e"
	const tok = "SENTINEL-TOKEN-55aa"
	path := filepath.Join(t.TempDir(), "history.db")
	ctx := testCtx(t)
	s, err := Open(ctx, path, Options{Secrets: []string{seed, "short"}})
	if err != nil {
		t.Fatal(err)
	}
	e := sample(1)
	e.Params = json.RawMessage(`{"family_seed":"` + seed + `","nested":[{"password":"` + pass + `"},{"ok":[{"BTSP_KEY":"` + seed + `"}]}]}`)
	e.Result = json.RawMessage(`{"session":{"access_token":"` + tok + `"}}`)
	bad := sample(2)
	bad.Params = json.RawMessage(`{"seed":"` + seed + `"`) // not JSON: must not be stored raw
	bad.Error = &RPCError{Code: -32602, Message: "bad", Data: json.RawMessage(`{"auth":"` + tok + `"}`)}
	// A known seed is scrubbed wherever it turns up, not only under a key.
	echo := sample(3)
	echo.Params = json.RawMessage(`["` + seed + `"]`)
	echo.Error = &RPCError{Code: -32000, Message: "bad family seed " + seed}
	echo.Target = "short"
	ids, err := s.Add(ctx, e, bad, echo)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(when string) {
		t.Helper()
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			b, err := os.ReadFile(f)
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				t.Fatal(err)
			}
			for _, s := range []string{seed, pass, tok, "SENTINEL"} {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("%s: %q found in %s", when, s, filepath.Base(f))
				}
			}
		}
	}
	scan("while open")
	got, err := s.Get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if !HasRedacted(got.Params) || !HasRedacted(got.Result) {
		t.Errorf("stored params %s result %s: not redacted", got.Params, got.Result)
	}
	got, _ = s.Get(ctx, ids[1])
	if string(got.Params) != unparsedParams {
		t.Errorf("invalid params stored as %s", got.Params)
	}
	got, _ = s.Get(ctx, ids[2])
	if string(got.Params) != `["[redacted]"]` || got.Error.Message != "bad family seed [redacted]" || got.Target != "short" {
		t.Errorf("scrubbed entry: %s %q %q", got.Params, got.Error.Message, got.Target)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	scan("after close")
}
