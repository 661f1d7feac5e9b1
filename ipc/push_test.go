package ipc_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestPushTakesWhatIsPushed: with Options.Push, what the peer pushes is
// handed to Push in order, on the reading goroutine, none dropped past
// IncomingBuffer; nothing waits on Incoming, which
// holds no queue (1,024 slots of it were allocated whole per listening
// connection: 2 MiB over the TUI's 256) and is closed when the
// connection ends.
func TestPushTakesWhatIsPushed(t *testing.T) {
	const n = 3000 // more than IncomingBuffer: nothing is dropped
	ours, theirs := unixPair(t)
	var mu sync.Mutex
	var got []string
	all := make(chan struct{})
	c := ipc.NewConn(ipc.NetFramer(ours, 1<<20), ipc.Options{IncomingBuffer: 1024, Push: func(m *ipc.Message) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, m.Method)
		if len(got) == n {
			close(all)
		}
	}})
	defer c.Close()
	if q := cap(c.Incoming()); q != 0 {
		t.Errorf("with Push, Incoming holds a queue of %d", q)
	}
	go func() {
		for i := range n {
			fmt.Fprintf(theirs, `{"jsonrpc":"2.0","method":"m%d","params":{}}`+"\n", i)
		}
	}()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		mu.Lock()
		t.Fatalf("%d of %d pushes reached Push in 10 s", len(got), n)
	}
	mu.Lock()
	for i, m := range got {
		if m != fmt.Sprint("m", i) {
			t.Fatalf("push %d is %s: not in order", i, m)
		}
	}
	mu.Unlock()
	if d := c.Dropped(); d != 0 {
		t.Errorf("Dropped %d", d)
	}
	select {
	case m := <-c.Incoming():
		t.Errorf("Incoming delivered %v with Push set", m)
	default:
	}
	theirs.Close()
	select {
	case _, open := <-c.Incoming():
		if open {
			t.Error("Incoming delivered a message after the peer closed")
		}
	case <-time.After(5 * time.Second):
		t.Error("Incoming was not closed when the connection ended")
	}
}

// TestPushConnAllocatesNoQueue: a connection opened with Push costs less
// than the queue it does not allocate (8 KiB for 1,024 slots).
func TestPushConnAllocatesNoQueue(t *testing.T) {
	alloc := func(push func(*ipc.Message)) uint64 {
		const k = 20
		ours := make([]*ipc.Conn, 0, k)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range k {
			a, _ := unixPair(t)
			ours = append(ours, ipc.NewConn(ipc.NetFramer(a, 1<<20), ipc.Options{IncomingBuffer: 1024, Push: push}))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		for _, c := range ours {
			c.Close()
		}
		return (after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)) / k
	}
	queued, pushed := alloc(nil), alloc(func(*ipc.Message) {})
	t.Logf("a connection holds %d B with Incoming's queue, %d B with Push", queued, pushed)
	if pushed+6<<10 > queued {
		t.Errorf("a connection with Push holds %d B, with a queue %d B: want the 8 KiB queue saved", pushed, queued)
	}
}

// TestReaderRunsOnTheOwner: with Options.Reader, the Conn starts no
// goroutine to read: the owner runs the reading loop it is handed (here,
// and it answers a call made meanwhile) and it returns when the
// connection ends; a Conn closed before its owner ran the loop closes at
// once, and the loop then returns at once.
func TestReaderRunsOnTheOwner(t *testing.T) {
	ours, theirs := unixPair(t)
	var read func()
	var pushes []string
	c := ipc.NewConn(ipc.NetFramer(ours, 1<<20), ipc.Options{
		Push:   func(m *ipc.Message) { pushes = append(pushes, m.Method) }, // the owner's goroutine
		Reader: func(r func()) { read = r },
	})
	if read == nil {
		t.Fatal("NewConn did not hand the reading loop over")
	}
	// The peer: a push, then the answer to call 1, then it hangs up.
	go func() {
		buf := make([]byte, 4096)
		n, _ := theirs.Read(buf) // the call
		if n > 0 {
			fmt.Fprint(theirs, `{"jsonrpc":"2.0","method":"hello","params":{}}`+"\n")
			fmt.Fprint(theirs, `{"jsonrpc":"2.0","id":1,"result":"ok"}`+"\n")
		}
		time.Sleep(50 * time.Millisecond)
		theirs.Close()
	}()
	answered := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Call(ctx, "ping", nil)
		answered <- err
	}()
	done := make(chan struct{})
	go func() { read(); close(done) }() // the owner's goroutine
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer: the reading loop did not run")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the reading loop did not return when the peer hung up")
	}
	<-c.Done()
	if fmt.Sprint(pushes) != "[hello]" {
		t.Errorf("pushed: %v", pushes)
	}
	c.Close()

	// Closed before the owner ran the loop: Close returns, the loop too.
	ours2, _ := unixPair(t)
	var read2 func()
	c2 := ipc.NewConn(ipc.NetFramer(ours2, 1<<20), ipc.Options{Push: func(*ipc.Message) {}, Reader: func(r func()) { read2 = r }})
	closed := make(chan struct{})
	go func() { c2.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a reading loop no one ran")
	}
	ran := make(chan struct{})
	go func() { read2(); close(ran) }()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the reading loop run after Close did not return")
	}
}

// TestTraceOfAFrameReadAtItsMessageTime: a frame read is traced at the
// time its Message is stamped with, the clock read once a frame (it was
// read again for the trace: twice a notification under a flood), so the
// trace pane and the events pane show the same instant for it.
func TestTraceOfAFrameReadAtItsMessageTime(t *testing.T) {
	const n = 200
	ours, theirs := unixPair(t)
	var mu sync.Mutex
	var traced, pushed []time.Time
	all := make(chan struct{})
	c := ipc.NewConn(ipc.NetFramer(ours, 1<<20), ipc.Options{
		Trace: func(ev ipc.TraceEvent) {
			if ev.Dir == ipc.In {
				mu.Lock()
				traced = append(traced, ev.Time)
				mu.Unlock()
			}
		},
		Push: func(m *ipc.Message) {
			mu.Lock()
			defer mu.Unlock()
			pushed = append(pushed, m.Time)
			if len(pushed) == n {
				close(all)
			}
		}})
	defer c.Close()
	go func() {
		for i := range n {
			fmt.Fprintf(theirs, `{"jsonrpc":"2.0","method":"m%d","params":{}}`+"\n", i)
		}
	}()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("the pushes did not arrive in 10 s")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(traced) != n {
		t.Fatalf("%d frames traced, want %d", len(traced), n)
	}
	for i := range n {
		if pushed[i].IsZero() || !traced[i].Equal(pushed[i]) || traced[i] != pushed[i] {
			t.Fatalf("frame %d traced at %v, its message stamped %v", i, traced[i], pushed[i])
		}
	}
}
