//go:build linux

package tui

import (
	"context"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
)

// floodLine appends the notification bench/flood's flooder sends (what
// peer.Server.Notify writes for telemetry.tick).
func floodLine(b []byte, seq int) []byte {
	b = append(b, `{"jsonrpc":"2.0","method":"telemetry.tick","params":{"seq":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	b = append(b, `,"source":"aflood","value":`...)
	b = strconv.AppendInt(b, int64(seq%97), 10)
	return append(b, "}}\n"...)
}

// BenchmarkNotificationToRing measures one notification from bytes on a
// socket to a line in the events pane's ring, the whole way the TUI takes
// it: the listener's connection (ipc readLoop, framing, decoding, the trace
// hook), events.TargetSource, the feed, one frame's gathering and the
// model's Update (events and trace panes, header counters). Drawing is
// not in it (BenchmarkEventStreamFrame). A peer writes b.N notifications,
// one write each, 10,000 a second paced by a 1 ms ticker as bench/flood's
// flooder does (so the wall time per op is 100 µs whatever the cost); an
// op is one notification. cpu-ns/op is what counts: the process's CPU
// time (user and system, every thread) less the writer's own thread,
// per notification. lost/op counts those dropped on the way (the feed or
// the connection could not keep up): they cost less than the rest.
func BenchmarkNotificationToRing(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "aflood.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := make(chan int)
	served := make(chan struct{})
	writerCPU := make(chan time.Duration, 1)
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n, ok := <-start
		if !ok {
			return
		}
		// The writer's CPU is not the TUI's: it runs on a thread of its
		// own, measured and taken off.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU()
		buf := make([]byte, 0, 256)
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		begin := time.Now()
		for i := 0; i < n; {
			now := <-tk.C
			due := min(int(now.Sub(begin).Seconds()*floodRate), n)
			for ; i < due; i++ {
				buf = floodLine(buf[:0], i)
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}
		writerCPU <- threadCPU() - t0
		<-ctx.Done()
	}()

	cfg := Config{Theme: "dark", Now: fixedNow, Getenv: func(string) string { return "" }, MaxListen: 4}
	m := newModel(ctx, cfg)
	m.manualFeed = true
	defer func() {
		cancel()
		m.listen.close()
		m.pc.client.close()
		<-served
	}()
	m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tg := discovered("unix://"+path, "aflood", "unix://"+path, discovery.StateLive)
	m.update(feedMsg{items: added(tg)})
	// Wait until the listener's connection is up (the peer accepted).
	deadline := time.Now().Add(10 * time.Second)
	for !m.listen.group.Running(tg.ID) {
		if time.Now().After(deadline) {
			b.Fatal("the listener did not start")
		}
		time.Sleep(time.Millisecond)
	}
	ev := m.events()
	got := func() uint64 { return ev.ring.total + ev.feedLost + ev.peerLost }
	base := got()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	start <- b.N
	want := base + uint64(b.N)
	deadline = time.Now().Add(time.Minute)
	for got() < want {
		if time.Now().After(deadline) {
			b.Fatalf("after a minute %d of %d notifications arrived", got()-base, b.N)
		}
		m.update(m.feed.next(ctx)())
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	select {
	case w := <-writerCPU:
		cpu -= w
	case <-time.After(10 * time.Second):
		b.Fatal("the writer did not finish")
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(ev.feedLost+ev.peerLost)/float64(b.N), "lost/op")
}

// floodRate is bench/flood's: notifications a second.
const floodRate = 10000

// processCPU and threadCPU are the user and system CPU time of the process
// and of the calling thread so far.
func processCPU() time.Duration { return rusage(syscall.RUSAGE_SELF) }
func threadCPU() time.Duration  { return rusage(1) } // RUSAGE_THREAD

func rusage(who int) time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(who, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
