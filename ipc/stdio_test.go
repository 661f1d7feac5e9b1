package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestMain lets the test binary act as a stdio peer when asked to, so stdio
// tests need no external program.
func TestMain(m *testing.M) {
	switch os.Getenv("IPC_TEST_PEER") {
	case "echo":
		fmt.Fprintln(os.Stderr, "echo peer ready")
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				continue
			}
			if req.Method == "quit" {
				fmt.Fprintln(os.Stderr, "asked to quit")
				os.Exit(3)
			}
			out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"method": req.Method, "params": req.Params}})
			fmt.Printf("%s\n", out)
		}
		os.Exit(0)
	case "memory":
		os.Exit(memoryChild(os.Getenv("IPC_TEST_MEMORY")))
	case "deaf":
		time.Sleep(time.Minute) // ignores stdin: must be killed
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func stdioEndpoint(t *testing.T, mode string) ipc.Endpoint {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := ipc.ParseEndpoint(fmt.Sprintf(`stdio:"env IPC_TEST_PEER=%s %s"`, mode, exe))
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func TestStdioCallAndStderrTrace(t *testing.T) {
	checkNoLeak(t)
	var mu sync.Mutex
	var stderr []string
	c, err := ipc.Dial(context.Background(), stdioEndpoint(t, "echo"), ipc.Options{Trace: func(e ipc.TraceEvent) {
		if e.Dir == ipc.Stderr {
			mu.Lock()
			stderr = append(stderr, string(e.Data))
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Call(ctxT(t, 5*time.Second), "demo.echo", map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Result) != `{"method":"demo.echo","params":{"x":1}}` {
		t.Fatalf("result %s", resp.Result)
	}
	_, err = c.Call(ctxT(t, 5*time.Second), "quit", nil)
	var ce *ipc.ClosedError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "asked to quit") {
		t.Fatalf("want the exit status and stderr in the error, got %v", err)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(stderr) == 0 || stderr[0] != "echo peer ready" {
		t.Fatalf("stderr trace: %q", stderr)
	}
}

func TestStdioCloseKillsDeafPeer(t *testing.T) {
	checkNoLeak(t)
	c, err := ipc.Dial(context.Background(), stdioEndpoint(t, "deaf"), ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Close()
	if time.Since(start) > 4*time.Second {
		t.Fatal("Close did not end a peer that ignores stdin")
	}
}

func TestStdioMissingCommand(t *testing.T) {
	_, err := ipc.Dial(context.Background(), ipc.Endpoint{Transport: ipc.Stdio, Argv: []string{"/nonexistent/primal"}}, ipc.Options{})
	var de *ipc.DialError
	if !errors.As(err, &de) {
		t.Fatalf("want a dial error, got %v", err)
	}
}
