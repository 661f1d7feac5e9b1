package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"sort"
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
	rawTimes := make([]time.Duration, 0, b.N)
	connTimes := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := raw.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := rr.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		rawTimes = append(rawTimes, t1.Sub(t0))
		connTimes = append(connTimes, t2.Sub(t1))
	}
	b.StopTimer()
	mr, mc := median(rawTimes), median(connTimes)
	b.ReportMetric(float64(mr.Nanoseconds()), "raw-ns/op")
	b.ReportMetric(float64(mc.Nanoseconds()), "conn-ns/op")
	b.ReportMetric(float64(mc)/float64(mr), "conn/raw")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
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
