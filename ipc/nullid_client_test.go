package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestPeerNullIDMethodIsANotification: a peer that pushes a method with
// "id":null (JSON-RPC 1.0's notification) is shown as a notification and
// never answered: an answer with "id":null would name no call the peer
// made. The handler is not asked and nothing is written back.
func TestPeerNullIDMethodIsANotification(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wrote := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			wrote <- "accept: " + err.Error()
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte(`{"jsonrpc":"2.0","method":"event.tick","params":{"n":1},"id":null}` + "\n"))
		_ = c.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
		line, _ := bufio.NewReader(c).ReadString('\n')
		wrote <- line
	}()
	asked := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{
		Handler: func(_ context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
			asked <- m.Method
			return json.RawMessage(`{}`), nil, true
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case m := <-c.Incoming():
		if m.Kind != ipc.KindNotification || m.Method != "event.tick" || !strings.Contains(m.Warning, "null_id_request") {
			t.Fatalf("got %+v; want a notification event.tick with a null_id_request warning", m)
		}
	case method := <-asked:
		t.Fatalf("the handler was asked to answer %s", method)
	case <-ctx.Done():
		t.Fatal("nothing delivered")
	}
	if line := <-wrote; line != "" {
		t.Fatalf("the client wrote %q back to a null-id method", line)
	}
}
