package sse_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// BenchmarkParse measures parsing a stream of biomeOS-like events (about
// 200 bytes each, some with multi-line data and comments).
func BenchmarkParse(b *testing.B) {
	var stream bytes.Buffer
	n := 0
	for i := 0; stream.Len() < 4<<20; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&stream, "event: heartbeat\nid: %d\ndata: {\"type\":\"heartbeat\",\"timestamp\":\"2026-11-22T01:58:42.97617389Z\",\"primals_count\":10,\"healthy_count\":9,\"families\":[\"westgate-tower-155f\"]}\n\n", i)
		case 1:
			fmt.Fprintf(&stream, "event: node_completed\nid: %d\ndata: {\"type\":\"node_completed\",\ndata: \"graph_id\":\"g-%04d\",\"node\":\"sign\",\"duration_ms\":12}\n\n", i, i)
		case 2:
			fmt.Fprintf(&stream, ": keep-alive %d\n\n", i)
			n--
		case 3:
			fmt.Fprintf(&stream, "event: primal_discovered\r\nid: %d\r\ndata: {\"type\":\"primal_discovered\",\"primal\":\"sweetgrass\",\"socket\":\"/run/user/1000/biomeos/sweetgrass.sock\"}\r\n\r\n", i)
		}
		n++
	}
	data := stream.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := sse.NewReader(bytes.NewReader(data), 0, 0)
		got := 0
		for {
			_, err := p.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != n {
			b.Fatalf("parsed %d events, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
