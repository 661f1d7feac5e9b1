package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// bigResult is about size bytes of JSON made of many small objects
// (numbers, booleans, nulls, strings), like the 10 MB answer.
func bigResult(size int) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item-%d","ok":%t,"score":%d.%d,"tag":null,"note":"small object"}`, i, i, i%2 == 0, i%100, i%10)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkCallRecording measures one `primalscope call`, run in-process
// against a local peer, with history on (the default) and off: the
// difference is what recording adds to the call. It reports the median and
// the 90th percentile. Sub-benchmarks: a one-shot call (health.liveness)
// and a 10 MB answer printed to a pipe.
func BenchmarkCallRecording(b *testing.B) {
	big := bigResult(10 << 20)
	dir, err := ipctest.TempDir()
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "peer.sock")
	srv, err := ipctest.Listen(sock, ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return json.RawMessage(`{"status":"alive"}`), nil
		},
		"big": func(context.Context, json.RawMessage) (any, error) { return big, nil },
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, c := range []struct{ name, method string }{{"oneshot", "health.liveness"}, {"10MB", "big"}} {
		for _, hist := range []bool{true, false} {
			name := c.name + "/history"
			if !hist {
				name = c.name + "/no-history"
			}
			b.Run(name, func(b *testing.B) {
				home := b.TempDir()
				env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")}
				args := []string{"call", "--timeout", "60s", sock, c.method, `{"message":"hello"}`}
				if !hist {
					args = append([]string{"--no-history"}, args...)
				}
				times := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					r := benchCLI(env, args...)
					times = append(times, time.Since(t0))
					if r.code != 0 {
						b.Fatalf("%+v", r.stderr)
					}
				}
				b.StopTimer()
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds()), "median-µs")
				b.ReportMetric(float64(times[len(times)*9/10].Microseconds()), "p90-µs")
			})
		}
	}
}

// benchCLI is runCLI without a testing.T.
func benchCLI(env map[string]string, args ...string) result {
	var out, errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, &stdio{in: strings.NewReader(""), out: &out, err: &errb}, getenv, nil)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}
