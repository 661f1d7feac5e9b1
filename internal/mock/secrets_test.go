package mock

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// A value changed under a secret-looking key is hidden in the diff, even
// when the key holding it is an ordinary one deeper down.
func TestMockMissHidesValuesUnderSecretPaths(t *testing.T) {
	var log bytes.Buffer
	m, err := New([]Recording{{Method: "vault.open", Params: json.RawMessage(`{"auth":{"user":"ada"},"n":1}`), Result: json.RawMessage(`{}`)}},
		Options{Name: "x", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	m.Handle(context.Background(), "vault.open", json.RawMessage(`{"auth":{"user":"s3cr3t-user-material"},"n":2}`))
	out := log.String()
	if strings.Contains(out, "s3cr3t-user-material") {
		t.Errorf("a value under .auth reached the mock's log:\n%s", out)
	}
	if !strings.Contains(out, ".auth.user") || !strings.Contains(out, "1 → 2") {
		t.Errorf("the miss no longer shows what differs:\n%s", out)
	}
}

// A request that matches nothing is logged with its params and the diff
// from the nearest recording; what the client sent under a secret-looking
// key reaches neither.
func TestMockMissNeverLogsClientSecrets(t *testing.T) {
	var log bytes.Buffer
	m, err := New([]Recording{{Method: "auth.login", Params: json.RawMessage(`{"user":"ada","password":"[redacted]"}`), Result: json.RawMessage(`{"ok":true}`)}},
		Options{Name: "x", Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	a := m.Handle(context.Background(), "auth.login",
		json.RawMessage(`{"user":"bob","password":"hunter2-very-secret","session":{"api_key":"k-0123456789"}}`))
	if a.Err == nil {
		t.Fatalf("a miss was answered: %+v", a)
	}
	out := log.String()
	for _, secret := range []string{"hunter2-very-secret", "k-0123456789"} {
		if strings.Contains(out, secret) {
			t.Errorf("a client's secret %q reached the mock's log:\n%s", secret, out)
		}
	}
	if !strings.Contains(out, "bob") || !strings.Contains(out, ".session") {
		t.Errorf("the miss no longer shows what differs:\n%s", out)
	}
}
