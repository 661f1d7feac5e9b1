package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func pingServer(b *testing.B) *ipctest.Server {
	return start(b, ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return json.RawMessage(`{"status":"alive"}`), nil
		},
	}})
}

// BenchmarkRoundTrip measures a sequential call through the Conn against a
// raw write-line/read-line ping-pong on the same socket and server, in the
// same run, alternating so both see the same machine load. It reports the
// median of each and their ratio (conn/raw).
func BenchmarkRoundTrip(b *testing.B) {
	s := pingServer(b)
	raw, err := net.Dial("unix", s.Path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	rr := bufio.NewReader(raw)
	c := dial(b, s, ipc.Options{})
	ctx := context.Background()
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"health.liveness"}` + "\n")
	m := ipctest.Interleaved(b,
		ipctest.BenchStep{Name: "raw", Run: func() error {
			if _, err := raw.Write(req); err != nil {
				return err
			}
			_, err := rr.ReadSlice('\n')
			return err
		}},
		ipctest.BenchStep{Name: "conn", Run: func() error {
			_, err := c.Call(ctx, "health.liveness", nil)
			return err
		}})
	b.ReportMetric(float64(m[1])/float64(m[0]), "conn/raw")
}

// BenchmarkPipelined measures calls per second on one connection with many
// calls in flight at once.
func BenchmarkPipelined(b *testing.B) {
	s := pingServer(b)
	c := dial(b, s, ipc.Options{})
	ctx := context.Background()
	b.SetParallelism(32)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}
