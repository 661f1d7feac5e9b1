package events_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// sourceGoroutines counts the goroutines running in a TargetSource's code
// (the connections' readers, in package ipc, are not counted).
func sourceGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	c := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("internal/events.(*TargetSource)")) {
			c++
		}
	}
	return c
}

// TestTargetSourceOneGoroutine: a source that polls nothing (as the TUI
// listens to 256 targets) runs on one goroutine of its own while its
// connection is open, not two (one more read Incoming: 256 goroutines'
// stacks in the TUI), and what the peer pushes still arrives. A source
// that polls keeps reading pushes while a poll waits on a silent peer.
func TestTargetSourceOneGoroutine(t *testing.T) {
	const n = 12
	dir := shortDir(t)
	path := filepath.Join(dir, "many.sock")
	srv, err := ipctest.Listen(path, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
		return ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Trace: trace})
	}
	var srcs []events.Source
	for i := range n {
		srcs = append(srcs, &events.TargetSource{Source: fmt.Sprint("s", i), LivenessMethod: "-", Dial: dial})
	}
	s := events.Merge(ctx, srcs, events.Options{})
	defer func() {
		cancel()
		s.Wait()
	}()
	for len(srv.Conns()) < n {
		if ctx.Err() != nil {
			t.Fatalf("%d of %d sources connected", len(srv.Conns()), n)
		}
		time.Sleep(time.Millisecond)
	}
	if g := sourceGoroutines(); g > n {
		t.Errorf("%d sources polling nothing run %d goroutines in TargetSource's code; want at most one each (%d)", n, g, n)
	}
	srv.Notify("tick", map[string]int{"seq": 1})
	heard := 0
	for heard < n {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := s.Next(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("%d of %d sources heard the notification: %v", heard, n, err)
		}
		if ev.Kind == events.KindNotification && ev.Name == "tick" {
			heard++
		}
	}

	// A source whose liveness poll waits (the peer answers nothing, for
	// 3 s) still reads what is pushed meanwhile.
	path2 := filepath.Join(dir, "slow.sock")
	srv2, err := ipctest.Listen(path2, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	ts := &events.TargetSource{Source: "slow", StaleAfter: 3 * time.Second, Interval: time.Hour,
		Dial: func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			return ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path2}, ipc.Options{Trace: trace})
		}}
	s2 := events.Merge(ctx, []events.Source{ts}, events.Options{})
	defer func() {
		cancel()
		s2.Wait()
	}()
	for len(srv2.Conns()) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the polling source did not connect")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	srv2.Notify("during.poll", nil)
	rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
	defer rcancel()
	for {
		ev, err := s2.Next(rctx)
		if err != nil {
			t.Fatalf("a push sent while a liveness poll waited did not arrive within 2 s: %v", err)
		}
		if ev.Kind == events.KindNotification && ev.Name == "during.poll" {
			t.Logf("heard %v after it was sent, with the poll still waiting", time.Since(start).Round(time.Millisecond))
			return
		}
	}
}
