package peer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestNeuralMetricsSlidingWindow: lifecycle.get's rates and latencies are
// over the sliding window (and over the part of it a route has existed
// in), the totals are cumulative, and a gap's calls have no latency.
func TestNeuralMetricsSlidingWindow(t *testing.T) {
	dir := t.TempDir()
	prov := &peer.Primal{Name: "beardog", Version: "1.0.0", Groups: []peer.Group{{Type: "crypto", Methods: []string{"hash"}}},
		Handlers: map[string]peer.HandlerFunc{"crypto.fail": peer.Error(-32602, "Invalid params: no")}}
	ps, err := peer.StartPrimal(filepath.Join(dir, "beardog.sock"), prov)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	clock := &fakeClock{t: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	n := peer.NewNeural(peer.NeuralEntry{Name: "beardog", State: peer.StateRunning, Socket: ps.Path, Capabilities: []string{"crypto"}},
		peer.NeuralEntry{Name: "nestgate", State: peer.StateRunning})
	n.Now, n.Window = clock.Now, 10*time.Second
	ns, err := peer.Listen(filepath.Join(dir, "neural.sock"), n.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ns.Endpoint(), ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type rm struct {
		Callee    *string  `json:"callee"`
		Calls     int64    `json:"calls"`
		Errors    int64    `json:"errors"`
		CallsPerS float64  `json:"calls_per_s"`
		ErrorRate float64  `json:"error_rate"`
		Latency   *latency `json:"latency_ms"`
		LastError string   `json:"last_error"`
	}
	get := func() map[string]rm {
		t.Helper()
		resp, err := c.Call(ctx, "lifecycle.get", map[string]string{"name": "nestgate"})
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			Metrics struct {
				WindowS  int `json:"window_s"`
				Outbound []struct {
					Capability string `json:"capability"`
					rm
				} `json:"outbound"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal(resp.Result, &l); err != nil || l.Metrics.WindowS != 10 {
			t.Fatalf("%v %s", err, resp.Result)
		}
		out := map[string]rm{}
		for _, r := range l.Metrics.Outbound {
			out[r.Capability] = r.rm
		}
		return out
	}
	callIt := func(capability, op string) {
		_, _ = c.Call(ctx, "capability.call", map[string]any{"capability": capability, "operation": op, "args": map[string]any{}, "caller": "nestgate"})
	}
	// 4 calls over 4 s (one failing), 2 to a gap.
	for i := range 4 {
		if i == 3 {
			callIt("crypto", "fail")
		} else {
			callIt("crypto", "hash")
		}
		callIt("ledger", "append")
		clock.Add(time.Second)
	}
	callIt("ledger", "append") // at 4 s: 5 gap calls in all
	m := get()
	hash, fail, gap := m["crypto.hash"], m["crypto.fail"], m["ledger.append"]
	if hash.Calls != 3 || hash.Errors != 0 || hash.CallsPerS != 0.75 || hash.Latency == nil || hash.Latency.Max <= 0 {
		t.Errorf("crypto.hash over 4 s of a 10 s window: %+v", hash)
	}
	if fail.Calls != 1 || fail.Errors != 1 || fail.ErrorRate != 1 || fail.LastError != "-32602 Invalid params: no" || *fail.Callee != "beardog" {
		t.Errorf("crypto.fail: %+v", fail)
	}
	if gap.Calls != 5 || gap.Errors != 5 || gap.Callee != nil || gap.Latency != nil || gap.CallsPerS != 1.25 ||
		gap.LastError != "-32001 No provider for capability: ledger.append" {
		t.Errorf("ledger.append (a gap): %+v", gap)
	}
	// Past the window: totals stay, rates and latencies go.
	clock.Add(11 * time.Second)
	m = get()
	if h := m["crypto.hash"]; h.Calls != 3 || h.CallsPerS != 0 || h.Latency != nil || h.ErrorRate != 0 {
		t.Errorf("crypto.hash after the window: %+v", h)
	}
}

type latency struct{ P50, P95, Max float64 }

// TestNeuralRoutesBounded: callers name themselves, so the routes the
// Neural API counts are bounded; calls beyond are still answered.
func TestNeuralRoutesBounded(t *testing.T) {
	n := peer.NewNeural()
	ctx := context.Background()
	for i := range 5000 {
		if _, err := n.Call(ctx, fmt.Sprintf("caller-%04d", i), "ledger", "append", nil); err == nil {
			t.Fatal("a gap answered")
		}
	}
	out := func(name string) int { return len(n.Metrics(name)["outbound"].([]map[string]any)) }
	if out("caller-0000") != 1 || out("caller-4095") != 1 || out("caller-4096") != 0 || out("caller-4999") != 0 {
		t.Errorf("routes: first %d, last counted %d, beyond %d", out("caller-0000"), out("caller-4095"), out("caller-4096"))
	}
}
