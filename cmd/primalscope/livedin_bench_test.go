package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/livedin"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// BenchmarkCallLivedIn measures one `primalscope call` (history on, the
// default path), run in-process against a local peer, on a fresh state and
// on the lived-in state of issue 23 (16,000 remembered endpoints, 100,000
// calls in history with 100 saved, a config file of 200 targets, a journal
// backlog of 1,000), the two interleaved call by call so that the
// machine's load weighs on both alike. It reports both medians and the
// median of the per-pair ratios (lived-in/fresh): 1.00 when nothing on the
// call path grows with use.
//
// Sub-benchmarks: "steady" is the lived-in state once its calls have worked
// off the backlog (what every call after the first few sees); "backlog" keeps
// the journal at 1,000 records or more before every call (topped up outside
// the timing), so every call folds its bounded share: its cost must not
// depend on the backlog's size, which "backlog10k" shows at 10,000.
func BenchmarkCallLivedIn(b *testing.B) {
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
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	fresh, lived := b.TempDir(), b.TempDir()
	envOf := func(home string) map[string]string {
		return map[string]string{"HOME": home, "XDG_STATE_HOME": filepath.Join(home, "state"), "XDG_CONFIG_HOME": filepath.Join(home, "config")}
	}
	t0 := time.Now()
	if err := livedin.Build(context.Background(), livedin.Issue23(envOf(lived)["XDG_STATE_HOME"], envOf(lived)["XDG_CONFIG_HOME"])); err != nil {
		b.Fatal(err)
	}
	b.Logf("lived-in state built in %s", time.Since(t0).Round(time.Millisecond))
	dbPath := filepath.Join(envOf(lived)["XDG_STATE_HOME"], "primalscope", "history.db")
	j, err := history.OpenJournal(dbPath, history.Options{})
	if err != nil {
		b.Fatal(err)
	}
	args := []string{"call", "--timeout", "60s", sock, "health.liveness"}
	call := func(b *testing.B, env map[string]string) time.Duration {
		t0 := time.Now()
		code, stderr := benchCLIDiscard(env, args...)
		d := time.Since(t0)
		if code != 0 {
			b.Fatalf("exit %d: %s", code, stderr)
		}
		return d
	}
	// The first calls work off the backlog of 1,000 (a bounded share each).
	for i := 0; i < 40; i++ {
		call(b, envOf(lived))
		call(b, envOf(fresh))
	}
	for _, c := range []struct {
		name    string
		backlog int
	}{{"steady", 0}, {"backlog", 1000}, {"backlog10k", 10000}} {
		b.Run(c.name, func(b *testing.B) {
			var f, l []time.Duration
			var ratios []float64
			for i := 0; b.Loop(); i++ {
				if c.backlog > 0 {
					b.StopTimer()
					n, _ := j.Pending()
					if err := livedin.AddBacklog(dbPath, 200000+i*c.backlog, c.backlog-n); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				var pair [2]time.Duration
				if i%2 == 0 {
					pair[0], pair[1] = call(b, envOf(fresh)), call(b, envOf(lived))
				} else {
					pair[1], pair[0] = call(b, envOf(lived)), call(b, envOf(fresh))
				}
				f, l = append(f, pair[0]), append(l, pair[1])
				ratios = append(ratios, float64(pair[1])/float64(pair[0]))
			}
			slices.Sort(f)
			slices.Sort(l)
			slices.Sort(ratios)
			b.ReportMetric(float64(f[len(f)/2].Microseconds()), "fresh-median-µs")
			b.ReportMetric(float64(l[len(l)/2].Microseconds()), "lived-median-µs")
			b.ReportMetric(ratios[len(ratios)/2], "lived/fresh")
		})
	}
}
