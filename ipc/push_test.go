package ipc_test

import (
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
