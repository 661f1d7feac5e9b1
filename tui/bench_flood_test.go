//go:build linux

package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
// flooder does, from a process of its own (so the wall time per op is
// 100 µs whatever the cost); an op is one notification. cpu-ns/op is what
// counts: the process's CPU time (user and system, every thread) per
// notification. lost/op counts those dropped on the way (the feed or
// the connection could not keep up): they cost less than the rest.
func BenchmarkNotificationToRing(b *testing.B) { floodBench(b, false) }

// BenchmarkNotificationToScreen is BenchmarkNotificationToRing as the
// program runs it: bench/flood's screen (120×35, 2,000 targets listed) and
// a whole View after every batch the model is handed (bubbletea draws one
// after every message; its FPS only bounds the terminal writes, not
// included here).
func BenchmarkNotificationToScreen(b *testing.B) { floodBench(b, true) }

func floodBench(b *testing.B, draw bool) {
	path := filepath.Join(b.TempDir(), "aflood.sock")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The peer is another process (this test binary, as the writer): its
	// CPU is not the TUI's, and its ticker does not wake this one.
	writer := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestFloodWriterProcess$")
	writer.Env = append(os.Environ(), floodWriterEnv+"="+path)
	toWriter, err := writer.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	fromWriter, err := writer.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := writer.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		toWriter.Close() // the writer ends when its stdin does
		writer.Wait()
	}()
	ready := make([]byte, 9)
	if _, err := io.ReadFull(fromWriter, ready[:6]); err != nil || string(ready[:6]) != "ready\n" {
		b.Fatalf("the writer did not start: %q %v", ready, err)
	}

	cfg := Config{Theme: "dark", Now: fixedNow, Getenv: func(string) string { return "" }, MaxListen: 4}
	m := newModel(ctx, cfg)
	m.manualFeed = true
	defer func() {
		cancel()
		m.listen.close()
		m.pc.client.close()
	}()
	m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tg := discovered("unix://"+path, "aflood", "unix://"+path, discovery.StateLive)
	m.update(feedMsg{items: added(tg)})
	if draw {
		m.update(tea.WindowSizeMsg{Width: 120, Height: 35})
		m.update(feedMsg{items: crowdTargets(1999)})
	}
	// Wait until the writer has the listener's connection.
	if _, err := io.ReadFull(fromWriter, ready[:9]); err != nil || string(ready[:9]) != "accepted\n" {
		b.Fatalf("the listener did not connect: %v", err)
	}
	ev := m.events()
	got := func() uint64 { return ev.ring.total + ev.feedLost + ev.peerLost }
	base := got()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	fmt.Fprintln(toWriter, b.N)
	want := base + uint64(b.N)
	deadline := time.Now().Add(time.Minute + time.Duration(b.N)*time.Second/floodRate)
	for got() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d notifications arrived", got()-base, b.N)
		}
		m.update(m.feedCmd()())
		if draw {
			_ = m.View()
		}
	}
	cpu := processCPU() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(ev.feedLost+ev.peerLost)/float64(b.N), "lost/op")
}

// floodWriterEnv names the socket TestFloodWriterProcess serves.
const floodWriterEnv = "PRIMALSCOPE_BENCH_FLOOD_WRITER"

// TestFloodWriterProcess is BenchmarkNotificationToRing's peer, run as a
// process of its own (it does nothing in a test run): it serves the
// socket the environment names, says "ready", and once a connection came
// "accepted"; then for each count N read from stdin it writes N
// notifications, one write each, floodRate a second paced by a 1 ms ticker
// (as bench/flood's flooder). It ends when stdin ends.
func TestFloodWriterProcess(t *testing.T) {
	path := os.Getenv(floodWriterEnv)
	if path == "" {
		t.Skip("the benchmark's writer process")
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fmt.Println("ready")
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Println("accepted")
	in := bufio.NewScanner(os.Stdin)
	buf := make([]byte, 0, 256)
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for in.Scan() {
		n, err := strconv.Atoi(in.Text())
		if err != nil {
			t.Fatal(err)
		}
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
	}
}

// floodRate is bench/flood's: notifications a second.
const floodRate = 10000

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEventStreamFrame2k is BenchmarkEventStreamFrame with 2,000
// targets listed (bench/flood's screen): one frame's worth of events
// applied and the whole screen drawn, targets pane included.
func BenchmarkEventStreamFrame2k(b *testing.B) {
	m := benchModel(b, 120, 35)
	m.update(feedMsg{items: crowdTargets(2000)})
	const perFrame = 10000 / DefaultFPS
	items := make([]any, perFrame)
	for i := range items {
		items[i] = tailLine(fixedNow(), "aflood", "", EvNotification, "telemetry.tick", []byte(`{"seq":12345,"source":"aflood","value":7}`), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.update(feedMsg{items: items})
		_ = m.render()
	}
}

// crowdTargets is discovery's news of n live targets.
func crowdTargets(n int) []any {
	ds := make([]*discovery.Target, n)
	for i := range ds {
		addr := fmt.Sprintf("unix:///run/biomeos/crowd%04d.sock", i)
		ds[i] = discovered(addr, fmt.Sprintf("crowd%04d", i), addr, discovery.StateLive)
		ds[i].Probe.Latency = time.Duration(i%50) * 100 * time.Microsecond
	}
	return added(ds...)
}
