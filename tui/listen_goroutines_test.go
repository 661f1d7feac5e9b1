package tui

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// listenGoroutines counts the goroutines that listening runs: its
// sources' (tui.keyed), theirs (events.TargetSource's), and the readers of
// listening connections (the paced ones); reading says how many of them
// are reading a listening connection. Only goroutines numbered above after
// count: goroutine ids only grow, so those an earlier test left ending are
// not counted (in the whole package's run under -race they made 80 of 30).
func listenGoroutines(after int64) (n, reading int) {
	buf := make([]byte, 1<<20)
	for {
		k := runtime.Stack(buf, true)
		if k < len(buf) {
			buf = buf[:k]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if goroutineID(g) <= after {
			continue
		}
		paced := bytes.Contains(g, []byte("ipc.(*pacedConn)")) // reading or waiting to read
		if paced || bytes.Contains(g, []byte("tui.keyed.Run")) || bytes.Contains(g, []byte("internal/events.(*TargetSource)")) {
			n++
		}
		if paced {
			reading++
		}
	}
	return n, reading
}

// goroutineID is the id of the goroutine whose stack g is ("goroutine N
// [...]:" first); 0 when it cannot be read.
func goroutineID(g []byte) int64 {
	g = bytes.TrimLeft(g, "\n")
	rest, ok := bytes.CutPrefix(g, []byte("goroutine "))
	if !ok {
		return 0
	}
	var id int64
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + int64(c-'0')
	}
	return id
}

// lastGoroutineID is the highest goroutine id running now.
func lastGoroutineID() int64 {
	buf := make([]byte, 1<<20)
	for {
		k := runtime.Stack(buf, true)
		if k < len(buf) {
			buf = buf[:k]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var top int64
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		top = max(top, goroutineID(g))
	}
	return top
}

// TestListenOneGoroutineATarget: the TUI listens to each target on one
// goroutine, which reads its connection (it was three: the source's, the
// connection's reader, and one reading the connection's queue: 768 stacks
// for 256 listened targets, 6 of the 8 MiB of goroutine stacks under
// bench/flood), and hears what the target pushes.
func TestListenOneGoroutineATarget(t *testing.T) {
	const n = 30
	// Ids are handed out in batches of 16 a processor, so one made later
	// may be a little lower: the margin keeps this test's own counted.
	before := lastGoroutineID() - int64(32*runtime.GOMAXPROCS(0))
	srv, shared := startPrimal(t)
	cfg := goldenConfig("dark")
	cfg.NoListen, cfg.MaxListen = false, n
	cfg.Dial = func(ctx context.Context, _ *discovery.Target, opts ipc.Options) (*ipc.Conn, error) {
		return defaultDialer(ctx, shared, opts) // every target is the same fake primal
	}
	m, _ := testModel(t, cfg)
	var items []any
	for i := range n {
		tg := *shared
		tg.ID, tg.Name = fmt.Sprintf("k%03d", i), fmt.Sprintf("p%03d", i)
		items = append(items, added(&tg)...)
	}
	run(t, m, m.update(feedMsg{items: items}))
	if len(m.listen.listening) != n {
		t.Fatalf("listening to %d targets, want %d", len(m.listen.listening), n)
	}
	g, reading := 0, 0
	for w := time.Now(); time.Since(w) < 10*time.Second; time.Sleep(5 * time.Millisecond) {
		if g, reading = listenGoroutines(before); reading >= n && len(srv.Conns()) >= n {
			break
		}
	}
	if reading != n {
		t.Fatalf("%d of %d listening connections are read", reading, n)
	}
	if g > n {
		t.Errorf("listening to %d targets runs %d goroutines (%.1f a target); want one a target", n, g, float64(g)/n)
	}
	srv.Notify("dag.event.appended", map[string]int{"seq": 7})
	heard := map[string]bool{}
	for w := time.Now(); len(heard) < n && time.Since(w) < 10*time.Second; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		msg := m.feed.next(ctx)()
		cancel()
		if fm, ok := msg.(feedMsg); ok {
			for _, l := range fm.lines {
				if l.Name == "dag.event.appended" {
					heard[l.key] = true
				}
			}
		}
	}
	if len(heard) != n {
		t.Errorf("%d of %d listened targets heard the notification", len(heard), n)
	}
}
