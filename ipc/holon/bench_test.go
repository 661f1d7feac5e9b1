package holon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
	call := func(c *ipc.Conn) func() error {
		return func() error {
			_, err := c.Call(ctx, "health.liveness", nil)
			return err
		}
	}
	m := ipctest.Interleaved(b,
		ipctest.BenchStep{Name: "ndjson", Run: call(nc)},
		ipctest.BenchStep{Name: "holon", Run: call(hc)},
		ipctest.BenchStep{Name: "ndjson-tcp", Run: call(tc)})
	b.ReportMetric(float64(m[1])/float64(m[0]), "holon/ndjson")
	b.ReportMetric(float64(m[1])/float64(m[2]), "holon/ndjson-tcp")
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
