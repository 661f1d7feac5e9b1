package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// A client pipelines far more requests than a connection may have in
// flight, at handlers that answer only when their context ends, then hangs
// up: no more than the bound ever run, and every one of them ends with the
// connection (not with the server).
func TestServerBoundsInflightAndEndsHandlersWithConnection(t *testing.T) {
	const bound = 8
	var started, running, ended atomic.Int64
	cfg := Config{Concurrent: true, MaxInflight: bound,
		Dispatch: func(ctx context.Context, _ string, _ json.RawMessage) (any, error, Fault) {
			started.Add(1)
			running.Add(1)
			<-ctx.Done()
			running.Add(-1)
			ended.Add(1)
			return nil, nil, FaultNone
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
	wrote := make(chan struct{})
	go func() { // blocks once the server stops reading; ends when c closes
		defer close(wrote)
		w := bufio.NewWriter(c)
		for i := 0; i < 20000; i++ {
			if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"a.b","params":{}}`+"\n", i); err != nil {
				return
			}
		}
		w.Flush()
	}()
	waitFor(t, "the first requests to start", func() bool { return started.Load() >= bound })
	c.Close()
	<-wrote
	waitFor(t, "every handler to end after the client hung up", func() bool { return running.Load() == 0 && ended.Load() == started.Load() })
	if n := started.Load(); n > bound {
		t.Errorf("%d requests of one connection were handled at once; the bound is %d", n, bound)
	}
}

// A connection past MaxConns is closed at once; those within are served.
func TestServerBoundsConnections(t *testing.T) {
	cfg := Config{MaxConns: 2, Dispatch: func(context.Context, string, json.RawMessage) (any, error, Fault) {
		return "ok", nil, FaultNone
	}}
	srv, err := Listen(filepath.Join(t.TempDir(), "p.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ask := func(c net.Conn) (string, error) {
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(c, `{"jsonrpc":"2.0","id":1,"method":"a.b"}`+"\n"); err != nil {
			return "", err
		}
		return bufio.NewReader(c).ReadString('\n')
	}
	for i := 0; i < 2; i++ {
		c, err := net.Dial("unix", srv.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := ask(c); err != nil {
			t.Fatalf("connection %d within the bound: %v", i+1, err)
		}
	}
	c, err := net.Dial("unix", srv.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if line, err := ask(c); err == nil {
		t.Errorf("a third connection past MaxConns 2 was served: %s", line)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
