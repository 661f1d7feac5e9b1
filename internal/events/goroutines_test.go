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
// (the connections' readers, in package ipc, are not counted unless they
// run on a source's goroutine), and of them those reading a connection.
func sourceGoroutines() (n, reading int) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("internal/events.(*TargetSource)")) {
			n++
			if bytes.Contains(g, []byte("ipc.(*Conn).readLoop")) {
				reading++
			}
		}
	}
	return n, reading
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
	if g, _ := sourceGoroutines(); g > n {
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

// TestTargetSourceDialPush: sources dialled with DialPush that poll
// nothing each run on one goroutine, which reads their connection too
// (ipc.Options.Reader: no reader goroutine of its own, as the TUI's 256
// listened targets had), with no queue of unread messages on the
// connection (Incoming holds none); they hear what the peer pushes, what
// came before the dial returned first and in order; and they stop when
// their context ends.
func TestTargetSourceDialPush(t *testing.T) {
	const n = 8
	dir := shortDir(t)
	path := filepath.Join(dir, "push.sock")
	srv, err := ipctest.Listen(path, ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conns := make(chan *ipc.Conn, n)
	var srcs []events.Source
	for i := range n {
		srcs = append(srcs, &events.TargetSource{Source: fmt.Sprint("push", i), LivenessMethod: "-",
			DialPush: func(ctx context.Context, trace func(ipc.TraceEvent), pd events.PushDial) (*ipc.Conn, error) {
				c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Trace: trace, IncomingBuffer: 1024, Push: pd.Push, Reader: pd.Reader})
				if err == nil {
					// As if the reader had handed these over before the
					// dial returned.
					pd.Push(&ipc.Message{Kind: ipc.KindNotification, Method: "early.1"})
					pd.Push(&ipc.Message{Kind: ipc.KindNotification, Method: "early.2"})
					conns <- c
				}
				return c, err
			}})
	}
	sctx, scancel := context.WithCancel(ctx)
	s := events.Merge(sctx, srcs, events.Options{})
	defer func() {
		scancel()
		s.Wait()
	}()
	for range n {
		select {
		case c := <-conns:
			if q := cap(c.Incoming()); q != 0 {
				t.Errorf("the connection holds a queue of %d unread messages", q)
			}
		case <-ctx.Done():
			t.Fatal("not dialled")
		}
	}
	for len(srv.Conns()) < n {
		time.Sleep(time.Millisecond)
	}
	g, reading := 0, 0
	for w := time.Now(); time.Since(w) < 5*time.Second; time.Sleep(time.Millisecond) {
		if g, reading = sourceGoroutines(); reading == n {
			break
		}
	}
	if g > n || reading != n {
		t.Errorf("%d sources run %d goroutines, %d of them reading their connection; want %d, each reading its own", n, g, reading, n)
	}
	for i := range 3 {
		srv.Notify(fmt.Sprint("later.", i), nil)
	}
	want := fmt.Sprint([]string{"early.1", "early.2", "later.0", "later.1", "later.2"})
	got := map[string][]string{}
	for heard := 0; heard < 5*n; {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := s.Next(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("heard %v, then: %v", got, err)
		}
		if ev.Kind == events.KindNotification {
			got[ev.Source] = append(got[ev.Source], ev.Name)
			heard++
		}
	}
	for src, names := range got {
		if fmt.Sprint(names) != want {
			t.Errorf("%s heard %v; want %v", src, names, want)
		}
	}
	scancel()
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the sources did not stop within 5 s of their context's end")
	}
	if g, _ := sourceGoroutines(); g != 0 {
		t.Errorf("%d goroutines still in TargetSource's code after the sources stopped", g)
	}
}
