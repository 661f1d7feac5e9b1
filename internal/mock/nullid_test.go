package mock

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A request whose id is null is a request (JSON-RPC 2.0 §4), answered with
// "id":null, on a socket and on stdio alike; a notification is not
// answered.
func TestMockAnswersANullID(t *testing.T) {
	_, path := serveMock(t, Options{})
	c := dialRaw(t, path)
	want := `{"jsonrpc":"2.0","id":null,"result":{"lines":0}}`
	if got := c.ask(t, `{"jsonrpc":"2.0","id":null,"method":"ledger.entry.list"}`); got != want {
		t.Fatalf("socket: got  %s\nwant %s", got, want)
	}

	m, err := New(recs(), Options{Name: "ledger"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	in := strings.NewReader(`{"jsonrpc":"2.0","method":"ledger.entry.list"}` + "\n" +
		`{"jsonrpc":"2.0","id":null,"method":"ledger.entry.list"}` + "\n")
	var out safeBuf
	if err := m.ServeStdio(ctx, in, &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != `{"id":null,"jsonrpc":"2.0","result":{"lines":0}}` {
		t.Fatalf("stdio: got %s", got)
	}
}
