package holon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func alive(context.Context, json.RawMessage) (any, error) {
	return json.RawMessage(`{"status":"alive"}`), nil
}

// BenchmarkHolonVsNDJSON measures a sequential call through ipc.Conn over
// Holon-RPC (WebSocket on loopback TCP), over plain NDJSON on a Unix socket
// and over plain NDJSON on loopback TCP, alternating in the same run so all
// see the same load. It reports the median of each and the ratios
// holon/ndjson (Unix) and holon/ndjson-tcp.
func BenchmarkHolonVsNDJSON(b *testing.B) {
	methods := map[string]ipctest.HandlerFunc{"health.liveness": alive}
	hs := startHolon(b, holon.Options{}, ipctest.HolonConfig{Methods: methods})
	dir, err := os.MkdirTemp("", "ps")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ns, err := ipctest.Listen(filepath.Join(dir, "p.sock"), ipctest.Config{Methods: methods})
	if err != nil {
		b.Fatal(err)
	}
	defer ns.Close()
	ctx := context.Background()
	hc, err := ipc.Dial(ctx, hs.Endpoint(), ipc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer hc.Close()
	nc, err := ipc.Dial(ctx, ns.Endpoint(), ipc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	ts, err := ipctest.ListenTCP("127.0.0.1:0", ipctest.Config{Methods: methods})
	if err != nil {
		b.Fatal(err)
	}
	defer ts.Close()
	tc, err := ipc.Dial(ctx, ts.Endpoint(), ipc.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer tc.Close()
	ht := make([]time.Duration, 0, b.N)
	nt := make([]time.Duration, 0, b.N)
	tt := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := nc.Call(ctx, "health.liveness", nil); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := hc.Call(ctx, "health.liveness", nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := tc.Call(ctx, "health.liveness", nil); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		nt = append(nt, t1.Sub(t0))
		ht = append(ht, t2.Sub(t1))
		tt = append(tt, t3.Sub(t2))
	}
	b.StopTimer()
	mn, mh := median(nt), median(ht)
	b.ReportMetric(float64(mn.Nanoseconds()), "ndjson-ns/op")
	b.ReportMetric(float64(mh.Nanoseconds()), "holon-ns/op")
	b.ReportMetric(float64(mh)/float64(mn), "holon/ndjson")
	mt := median(tt)
	b.ReportMetric(float64(mt.Nanoseconds()), "ndjson-tcp-ns/op")
	b.ReportMetric(float64(mh)/float64(mt), "holon/ndjson-tcp")
}

// BenchmarkInspect measures the envelope check every incoming frame gets.
func BenchmarkInspect(b *testing.B) {
	frame := []byte(`{"jsonrpc":"2.0","id":"17","result":{"status":"alive","primal":"beardog","uptime_s":12345}}`)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if e := holon.Inspect(frame); len(e.Warnings) != 0 {
			b.Fatal(e.Warnings)
		}
	}
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
