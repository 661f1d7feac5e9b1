package ipctest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestHostileNeural serves each hostile Neural API and reads its answers
// over the wire: each is valid JSON of the promised kind of wrong; and
// discovery's Neural API source, pointed at each, neither panics nor keeps
// more than it may, nor passes control sequences on as names.
func TestHostileNeural(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	check := map[ipctest.NeuralHostility]func(t *testing.T, get map[string]any){
		ipctest.NeuralGarbage: func(t *testing.T, get map[string]any) {
			if _, ok := get["metrics"].(string); !ok {
				t.Errorf("garbage lifecycle.get: %v", get)
			}
		},
		ipctest.NeuralFlood: func(t *testing.T, get map[string]any) {
			if d, _ := get["depends_on"].([]any); len(d) != ipctest.FloodEntries {
				t.Errorf("flood depends_on: %d", len(d))
			}
		},
		ipctest.NeuralEscapes: func(t *testing.T, get map[string]any) {
			if get["name"] != ipctest.EscapeText {
				t.Errorf("escapes name: %q", get["name"])
			}
		},
		ipctest.NeuralNumbers: func(t *testing.T, get map[string]any) {
			out := get["metrics"].(map[string]any)["outbound"].([]any)[0].(map[string]any)
			if out["error_rate"] != float64(7) || out["calls"] != float64(-5) {
				t.Errorf("numbers: %v", out)
			}
		},
		ipctest.NeuralLies: func(t *testing.T, get map[string]any) {
			if !strings.Contains(jsonOf(get["depends_on"]), `"ghost"`) {
				t.Errorf("lies depends_on: %v", get["depends_on"])
			}
		},
	}
	for h, ok := range check {
		t.Run(string(h), func(t *testing.T) {
			if h == ipctest.NeuralFlood && testing.Short() {
				t.Skip("some megabytes a call: not in -short")
			}
			path := filepath.Join(dir, string(h)+".sock")
			s, err := ipctest.Listen(path, ipctest.HostileNeural(h))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, err := ipc.Dial(ctx, s.Endpoint(), ipc.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, m := range []string{"lifecycle.status", "topology.primals", "topology.get", "graph.list", "capability.discover", "capability.call"} {
				resp, err := c.Call(ctx, m, map[string]string{"capability": "crypto"})
				if err != nil || !json.Valid(resp.Result) {
					t.Fatalf("%s: %v", m, err)
				}
			}
			resp, err := c.Call(ctx, "lifecycle.get", map[string]string{"name": "beardog"})
			if err != nil {
				t.Fatal(err)
			}
			var get map[string]any
			if err := json.Unmarshal(resp.Result, &get); err != nil {
				t.Fatal(err)
			}
			ok(t, get)

			t0 := time.Now()
			src := &discovery.NeuralSource{Endpoint: s.Endpoint(), Timeout: 10 * time.Second, MaxGet: 4}
			found, derr := src.Discover(ctx)
			t.Logf("discover: %d found in %v: %v", len(found), time.Since(t0), derr)
			if len(found) > discovery.MaxEntries {
				t.Errorf("discovery kept %d primals of one answer", len(found))
			}
			for _, f := range found {
				if strings.ContainsAny(f.Name, "\x1b\x00\n\u202e") {
					t.Errorf("discovery passed on a name with control sequences: %q", f.Name)
				}
			}
		})
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
