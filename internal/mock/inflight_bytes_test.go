package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// handling counts the goroutines answering a request now (in Mock.Handle).
func handling() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	return bytes.Count(buf[:n], []byte("mock.(*Mock).Handle("))
}

// The mock holds at most its byte bound of requests at once (lowered here
// to 1 MiB: three requests of 300 KiB), over the connections of a socket
// together and on a stdio bus, and answers every one once. On stdio the
// bound was 64 requests of 4 MiB (256 MiB); it fails without it (6 at once).
func TestMockBoundsTheBytesInFlight(t *testing.T) {
	const (
		size  = 300 << 10
		fits  = 3
		conns = 2
		each  = 3
	)
	pad := strings.Repeat("x", size)
	newMock := func(t *testing.T) *Mock {
		m, err := New([]Recording{{Method: "a.big", Params: json.RawMessage(`{}`), Result: json.RawMessage(`"ok"`), Duration: 600 * time.Millisecond}},
			Options{Name: "x", ByMethod: true, Latency: Latency{Recorded: true, Scale: 1}})
		if err != nil {
			t.Fatal(err)
		}
		m.maxBytes = 1 << 20
		return m
	}
	watch := func(t *testing.T) {
		t.Helper()
		waitWithin(t, 5*time.Second, "the mock to fill its byte bound", func() bool { return handling() >= fits })
		time.Sleep(200 * time.Millisecond) // room for one past the bound to start
		if n := handling(); n > fits {
			t.Fatalf("%d requests of %d KiB answered at once; the byte bound (1 MiB) holds %d", n, size>>10, fits)
		}
	}
	req := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"a.big","params":{"p":"%s"}}`+"\n", id, pad)
	}
	t.Run("socket", func(t *testing.T) {
		m := newMock(t)
		path := filepath.Join(t.TempDir(), "m.sock")
		srv, err := m.Serve(Listen{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}, Wire: WireJSONRPC})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		answers := make(chan []string, conns)
		for c := 0; c < conns; c++ {
			conn, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(15 * time.Second))
			go func(c int) {
				w := bufio.NewWriter(conn)
				for i := 0; i < each; i++ {
					io.WriteString(w, req(c*100+i))
				}
				w.Flush()
			}(c)
			go func() {
				r := bufio.NewReader(conn)
				var got []string
				for len(got) < each {
					line, err := r.ReadString('\n')
					if err != nil {
						break
					}
					got = append(got, line)
				}
				answers <- got
			}()
		}
		watch(t)
		seen := map[string]int{}
		for c := 0; c < conns; c++ {
			got := <-answers
			if len(got) != each {
				t.Errorf("a connection got %d answers of %d", len(got), each)
			}
			for _, a := range got {
				seen[idOf(t, []byte(a))]++
			}
		}
		if len(seen) != conns*each {
			t.Errorf("answers to %d requests, want %d: %v", len(seen), conns*each, seen)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		m := newMock(t)
		var in strings.Builder
		for i := 0; i < conns*each; i++ {
			in.WriteString(req(i))
		}
		var out safeBuf
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- m.ServeStdio(ctx, strings.NewReader(in.String()), &out) }()
		watch(t)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		seen := map[string]int{}
		for _, a := range got {
			seen[idOf(t, []byte(a))]++
		}
		if len(got) != conns*each || len(seen) != conns*each {
			t.Errorf("%d answers to %d distinct requests, want %d", len(got), len(seen), conns*each)
		}
	})
}
