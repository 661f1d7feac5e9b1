package discovery

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// next waits for the next event that is not Synced (or fails the test).
func next(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	timeout := time.After(8 * time.Second)
	for {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatal("event stream closed")
			}
			if e.Kind != Synced {
				return e
			}
		case <-timeout:
			t.Fatal("no event")
		}
	}
}

func TestWatch(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "alpha.sock", primal("alpha", false).Config())
	sb := ipctest.NewSongbird()
	serve(t, dir, "songbird.sock", sb.Config())
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{ConnectTimeout: time.Second, StaleTimeout: 3 * time.Second}})
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	refresh := make(chan struct{})
	ch := d.Watch(ctx, WatchOptions{Interval: time.Minute, PollInterval: 50 * time.Millisecond, Debounce: 20 * time.Millisecond, Refresh: refresh})

	seen := map[string]EventKind{}
	for len(seen) < 2 {
		e := next(t, ch)
		seen[e.Target.Name] = e.Kind
	}
	if seen["alpha"] != Added || seen["songbird"] != Added {
		t.Fatalf("first sweep: %v", seen)
	}

	// A primal appears in the directory.
	beta := serve(t, dir, "beta.sock", primal("beta", false).Config())
	e := next(t, ch)
	if e.Kind != Added || e.Target.Name != "beta" || e.Target.State() != StateLive {
		t.Fatalf("beta: %s %s %s", e.Kind, e.Target.Name, e.Target.State())
	}
	// It leaves (its socket file is removed).
	beta.Close()
	e = next(t, ch)
	if e.Kind != Removed || e.Target.Name != "beta" {
		t.Fatalf("beta gone: %s %s", e.Kind, e.Target.Name)
	}

	// A TCP primal registers with Songbird: ipc.watch polling finds it.
	tcp, err := ipctest.ListenTCP("127.0.0.1:0", primal("gamma", false).Config())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	sb.Register(ipctest.Service{PrimalID: "gamma", Endpoint: "tcp://" + tcp.Addr})
	for {
		e = next(t, ch)
		if e.Target.Name == "gamma" {
			break
		}
		// the songbird target itself may change (nothing else should)
		if e.Target.Name != "songbird" {
			t.Fatalf("unexpected %s %s %v", e.Kind, e.Target.Name, e.Changes)
		}
	}
	if e.Kind != Added || e.Target.State() != StateLive || e.Target.Sources[0].Source != SrcSongbird {
		t.Fatalf("gamma: %+v", e)
	}
	// It leaves the registry: the periodic sweep is not due for a minute,
	// but the registry's revision moves, which triggers one.
	sb.Unregister("gamma")
	e = next(t, ch)
	if e.Kind != Removed || e.Target.Name != "gamma" {
		t.Fatalf("gamma gone: %s %s", e.Kind, e.Target.Name)
	}

	// A refresh asked for by the consumer runs a sweep.
	refresh <- struct{}{}
	for {
		e, ok := <-ch
		if !ok {
			t.Fatal("closed")
		}
		if e.Kind == Synced && e.Sweep.Reason == "refresh" {
			break
		}
	}

	cancel()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				// Every goroutine the watcher started has ended (a few may
				// still be on their way out of the runtime).
				for i := 0; i < 100 && runtime.NumGoroutine() > base+2; i++ {
					time.Sleep(20 * time.Millisecond)
				}
				if n := runtime.NumGoroutine(); n > base+2 {
					t.Errorf("%d goroutines left, %d before", n, base)
				}
				return
			}
		case <-deadline:
			t.Fatal("stream not closed after cancel")
		}
	}
}

func TestWatchDropsOverlap(t *testing.T) {
	w := &watcher{trig: make(chan string, 1)}
	w.running.Store(true)
	w.trigger("fs")
	w.trigger("fs")
	if w.dropped.Load() != 2 || len(w.trig) != 0 || !w.missed.Load() {
		t.Errorf("dropped %d, queued %d", w.dropped.Load(), len(w.trig))
	}
	w.running.Store(false)
	w.trigger("fs")
	w.trigger("timer")
	if w.dropped.Load() != 3 || len(w.trig) != 1 {
		t.Errorf("dropped %d, queued %d", w.dropped.Load(), len(w.trig))
	}
}

func TestDiff(t *testing.T) {
	a := &Target{ID: "x", Name: "a", Probe: &Probe{State: StateLive, Latency: time.Millisecond}}
	b := a.clone()
	b.Probe = &Probe{State: StateLive, Latency: 2 * time.Millisecond}
	if d := Diff(a, b); len(d) != 0 {
		t.Errorf("latency alone is a change: %v", d)
	}
	b.Probe = &Probe{State: StateStale}
	b.Aliases = []string{"z"}
	if d := Diff(a, b); len(d) != 2 || d[0] != "state" || d[1] != "aliases" {
		t.Errorf("%v", d)
	}
	// The session becoming unauthenticated is a change (the TUI's lock).
	b = a.clone()
	b.Probe = &Probe{State: StateLive, Secured: true, Session: &ipc.SessionSecurity{BTSP: true, Cipher: "chacha20_poly1305", Encrypted: true}}
	a.Probe.Secured = true
	if d := Diff(a, b); len(d) != 1 || d[0] != "session" {
		t.Errorf("unauthenticated session: %v", d)
	}
	_ = filepath.Join
}
