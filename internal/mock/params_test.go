package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// noParamsForms are the ways a request says it has no parameters: params
// left out, null, {} and [] (JSON-RPC 2.0: params MAY be omitted;
// Holon-RPC: {} if omitted).
var noParamsForms = []string{``, `,"params":null`, `,"params":{}`, `,"params":[]`}

// noParamsMock was recorded once with each form of no params, each under
// its own method (as history keeps a call with none: nil; recorded over
// Holon-RPC: {}).
func noParamsMock(t *testing.T) *Mock {
	t.Helper()
	var recs []Recording
	for i, p := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`{}`), json.RawMessage(`[]`)} {
		recs = append(recs, Recording{Method: fmt.Sprintf("a.m%d", i), Params: p, Result: json.RawMessage(fmt.Sprintf(`"r%d"`, i))})
	}
	m, err := New(recs, Options{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A call recorded with no params in one form is answered as recorded when
// it is made with any other, on every wire the mock serves: NDJSON (Unix
// socket), lean NDJSON, Holon-RPC over WebSocket and a stdio bus. Before,
// a call recorded without params (history's nil) and made with {} (what
// primalscope's own client sends over Holon-RPC) got -32602.
func TestMockNoParamsMatchOnEveryWire(t *testing.T) {
	type ask func(t *testing.T, id int, method, params string) string
	check := func(t *testing.T, a ask) {
		id := 0
		for i := range noParamsForms {
			for _, form := range noParamsForms {
				id++
				got := a(t, id, fmt.Sprintf("a.m%d", i), form)
				if want := fmt.Sprintf(`"result":"r%d"`, i); !strings.Contains(got, want) {
					t.Errorf("a.m%d (recorded with no params in form %d) called with %q: got %s, want %s", i, i, form, got, want)
				}
			}
		}
		if got := a(t, 999, "a.m0", `,"params":{"k":1}`); !strings.Contains(got, "-32602") {
			t.Errorf("params that are not none must still miss: %s", got)
		}
	}
	for _, wire := range []Wire{WireJSONRPC, WireLean} {
		t.Run(string(wire), func(t *testing.T) {
			m := noParamsMock(t)
			path := filepath.Join(t.TempDir(), "m.sock")
			srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}, Wire: wire})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := dialRaw(t, path)
			check(t, func(t *testing.T, id int, method, params string) string {
				env := `"jsonrpc":"2.0",`
				if wire == WireLean {
					env = ""
				}
				return c.ask(t, fmt.Sprintf(`{%s"id":%d,"method":%q%s}`, env, id, method, params))
			})
		})
	}
	t.Run("holon", func(t *testing.T) {
		m := noParamsMock(t)
		srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.WS, URL: "ws://127.0.0.1:0/rpc"}, Wire: WireHolon})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, srv.Endpoint.URL, &websocket.DialOptions{Subprotocols: []string{holon.Subprotocol}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		check(t, func(t *testing.T, id int, method, params string) string {
			if err := c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"%d","method":%q%s}`, id, method, params)); err != nil {
				t.Fatal(err)
			}
			_, got, err := c.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return string(got)
		})
	})
	t.Run("stdio", func(t *testing.T) {
		m := noParamsMock(t)
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- m.ServeStdio(ctx, inR, outW); outW.Close() }()
		defer func() {
			inW.Close()
			if err := <-done; err != nil {
				t.Errorf("ServeStdio: %v", err)
			}
		}()
		r := bufio.NewReader(outR)
		check(t, func(t *testing.T, id int, method, params string) string {
			if _, err := fmt.Fprintf(inW, `{"jsonrpc":"2.0","id":%d,"method":%q%s}`+"\n", id, method, params); err != nil {
				t.Fatal(err)
			}
			line, err := r.ReadBytes('\n')
			if err != nil {
				t.Fatal(err)
			}
			return string(bytes.TrimSpace(line))
		})
	})
}
