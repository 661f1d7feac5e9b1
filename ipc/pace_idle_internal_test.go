package ipc

import (
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"
)

// TestIdleListenerHoldsNoReadBuffer: a paced connection's framer waiting
// with nothing unread holds no read buffer (the TUI's 256 listening
// connections held 4 KiB each, mostly silent), and still reads every line
// that comes after, a line cut in two writes whole, and the end.
func TestIdleListenerHoldsNoReadBuffer(t *testing.T) {
	const n = 64
	// held is the heap n framers over conns of wrap hold while they wait,
	// each having read one line.
	held := func(wrap func(net.Conn) net.Conn) uint64 {
		type end struct {
			f    *LineFramer
			peer net.Conn
			got  chan string
		}
		ends := make([]end, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range ends {
			ours, theirs := unixPair(t)
			e := end{f: NetFramer(wrap(ours), 1<<20), peer: theirs, got: make(chan string, 4)}
			go func() {
				for {
					b, err := e.f.ReadFrame()
					if err != nil {
						close(e.got)
						return
					}
					e.got <- string(b)
				}
			}()
			ends[i] = e
			fmt.Fprintf(theirs, "{\"n\":%d}\n", i)
			if s := <-e.got; s != fmt.Sprintf(`{"n":%d}`, i) {
				t.Fatalf("read %q", s)
			}
		}
		time.Sleep(50 * time.Millisecond) // every reader waits again
		runtime.GC()
		runtime.ReadMemStats(&after)
		// They still read: a line, then one cut in two writes, then the end.
		for i, e := range ends {
			fmt.Fprintf(e.peer, "{\"again\":%d}\n", i)
			fmt.Fprint(e.peer, `{"cut":`)
			time.Sleep(time.Millisecond)
			fmt.Fprint(e.peer, "1}\n")
			e.peer.Close()
			for _, want := range []string{fmt.Sprintf(`{"again":%d}`, i), `{"cut":1}`} {
				select {
				case s := <-e.got:
					if s != want {
						t.Fatalf("read %q, want %q", s, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("%q not read within 5 s", want)
				}
			}
			select {
			case _, open := <-e.got:
				if open {
					t.Fatal("a line after the end")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the end not read within 5 s")
			}
		}
		return (after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)) / n
	}
	plain := held(func(c net.Conn) net.Conn { return c })
	paced := held(func(c net.Conn) net.Conn { return newPacedConn(c, time.Millisecond) })
	t.Logf("a waiting framer holds %d B over a plain connection, %d B over a paced one", plain, paced)
	if paced+3<<10 > plain {
		t.Errorf("a waiting framer over a paced connection holds %d B, over a plain one %d B: want its 4 KiB read buffer let go", paced, plain)
	}
}
