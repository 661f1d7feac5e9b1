package events_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestTargetSourcePace: a peer pushing a notification every millisecond
// is taken a pace's worth at a time: the source's events come out in a
// handful of clusters, one a pace (without Pace they came out one by one,
// in about every 5 ms slice of the run: what cost a wake-up of the reader,
// and of an idle processor, per notification). Every notification arrives,
// in order, and one after a quiet spell is taken at once.
func TestTargetSourcePace(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "pusher.sock")
	srv, err := ipctest.Listen(path, ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const pace = 50 * time.Millisecond
	ts := &events.TargetSource{
		Source: "pusher", LivenessMethod: "-", Pace: pace,
		Answer: func(*ipc.Message) (json.RawMessage, *ipc.RPCError) { return nil, nil },
		Dial: func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			return ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Trace: trace, IncomingBuffer: 1024})
		},
	}
	var mu sync.Mutex
	var at []time.Time
	var seqs []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		ts.Run(ctx, func(e events.Event) {
			if e.Kind != events.KindNotification {
				return
			}
			var p struct{ Seq int }
			json.Unmarshal(e.Payload, &p)
			mu.Lock()
			at, seqs = append(at, time.Now()), append(seqs, p.Seq)
			mu.Unlock()
		})
	}()
	for ctx.Err() == nil && len(srv.Conns()) == 0 {
		time.Sleep(2 * time.Millisecond)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(at)
	}
	const n = 300
	start := time.Now()
	tk := time.NewTicker(time.Millisecond)
	for i := 0; i < n; i++ {
		<-tk.C
		srv.Notify("tick", map[string]int{"seq": i})
	}
	tk.Stop()
	run := time.Since(start)
	for ctx.Err() == nil && count() < n {
		time.Sleep(time.Millisecond)
	}
	// Quiet, then one more: taken at once.
	time.Sleep(2 * pace)
	sent := time.Now()
	srv.Notify("tick", map[string]int{"seq": n})
	for ctx.Err() == nil && count() < n+1 {
		time.Sleep(time.Millisecond)
	}
	lag := time.Since(sent)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) != n+1 {
		t.Fatalf("%d of %d notifications", len(seqs), n+1)
	}
	for i, s := range seqs {
		if s != i {
			t.Fatalf("notification %d has seq %d: out of order", i, s)
		}
	}
	slices := map[int64]bool{}
	for _, a := range at[:n] {
		slices[a.Sub(start).Milliseconds()/5] = true
	}
	most := int(run/pace) + 3
	t.Logf("%d notifications over %v came out in %d slices of 5 ms (pace %v); one after a quiet spell after %v", n, run.Round(time.Millisecond), len(slices), pace, lag.Round(time.Millisecond))
	if len(slices) > most {
		t.Errorf("the notifications came out in %d slices of 5 ms; at a pace of %v, at most %d", len(slices), pace, most)
	}
	if lag > pace/2 {
		t.Errorf("a notification after a quiet spell was taken after %v (pace %v)", lag, pace)
	}
}
