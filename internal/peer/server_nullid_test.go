package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// JSON-RPC 2.0 §4: only a request without an "id" member is a
// notification; one whose id is null is a request like any other and is
// answered with "id":null. Every way a simulated peer serves answers it.
func TestServerAnswersARequestWithANullID(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"sequential", Config{}, `{"jsonrpc":"2.0","id":null,"result":{"ok":true}}`},
		{"concurrent", Config{Concurrent: true, MaxInflight: 4}, `{"jsonrpc":"2.0","id":null,"result":{"ok":true}}`},
		{"lean", Config{Lean: true}, `{"id":null,"result":{"ok":true}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Methods = map[string]HandlerFunc{"a.b": func(context.Context, json.RawMessage) (any, error) {
				return json.RawMessage(`{"ok":true}`), nil
			}}
			srv, err := Listen(filepath.Join(t.TempDir(), "p.sock"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c, err := net.Dial("unix", srv.Path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			req := `{"jsonrpc":"2.0","id":null,"method":"a.b","params":{}}`
			if tc.cfg.Lean {
				req = `{"id":null,"method":"a.b","params":{}}`
			}
			// A notification after it must still get no answer: the next
			// line read is the null id's answer, then the numbered one's.
			if _, err := c.Write([]byte(req + "\n" + `{"jsonrpc":"2.0","method":"a.b"}` + "\n" + `{"jsonrpc":"2.0","id":5,"method":"a.b"}` + "\n")); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(c)
			var got []string
			for i := 0; i < 2; i++ {
				line, err := r.ReadString('\n')
				if err != nil {
					t.Fatalf("after %q: %v", got, err)
				}
				got = append(got, strings.TrimSpace(line))
			}
			_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if extra, err := r.ReadString('\n'); err == nil {
				t.Errorf("a third answer %q: the notification was answered", extra)
			}
			if !contains(got, tc.want) {
				t.Errorf("answers %q; want one %s", got, tc.want)
			}
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
