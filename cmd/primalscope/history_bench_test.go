package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// BenchmarkCallRecordingPaired is BenchmarkCallRecording with the two
// paths interleaved (one call with history, one without, in turn), so that
// a machine whose load changes during the run weighs on both alike. It
// reports both medians and the median of the per-pair ratios
// (history/no-history): what recording adds to the call.
func BenchmarkCallRecordingPaired(b *testing.B) {
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
		b.Run(c.name, func(b *testing.B) {
			home := b.TempDir()
			env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")}
			args := []string{"call", "--timeout", "60s", sock, c.method, `{"message":"hello"}`}
			off := append([]string{"--no-history"}, args...)
			var on, no []time.Duration
			var ratios []float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var pair [2]time.Duration
				for k, a := range [][]string{args, off} {
					if i%2 == 1 {
						k = 1 - k
						a = [][]string{args, off}[k]
					}
					t0 := time.Now()
					code, stderr := benchCLIDiscard(env, a...)
					pair[k] = time.Since(t0)
					if code != 0 {
						b.Fatalf("exit %d: %s", code, stderr)
					}
				}
				on, no = append(on, pair[0]), append(no, pair[1])
				ratios = append(ratios, float64(pair[0])/float64(pair[1]))
			}
			b.StopTimer()
			slices.Sort(on)
			slices.Sort(no)
			slices.Sort(ratios)
			b.ReportMetric(float64(on[len(on)/2].Microseconds()), "history-median-µs")
			b.ReportMetric(float64(no[len(no)/2].Microseconds()), "no-history-median-µs")
			b.ReportMetric(ratios[len(ratios)/2], "median-ratio")
		})
	}
}

// benchCLIDiscard is benchCLI writing stdout to nowhere: a 10 MB answer
// then costs no buffer growth that the process would not have.
func benchCLIDiscard(env map[string]string, args ...string) (int, string) {
	var errb bytes.Buffer
	getenv := func(k string) string { return env[k] }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, &stdio{in: strings.NewReader(""), out: io.Discard, err: &errb}, getenv, nil)
	return code, errb.String()
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
