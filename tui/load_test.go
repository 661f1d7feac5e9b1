package tui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The measurements in this file take tens of seconds; they run only when
// PRIMALSCOPE_LOAD=1 (see BENCHMARKS.md for the commands and figures).
func needLoad(t *testing.T) {
	if os.Getenv("PRIMALSCOPE_LOAD") != "1" {
		t.Skip("set PRIMALSCOPE_LOAD=1 to run load measurements")
	}
}

// TestLoadEventStream streams 10,000 events a second into the live feed for
// 10 s while the program loop applies them and draws frames, and reports
// frame times and memory before and after.
func TestLoadEventStream(t *testing.T) {
	needLoad(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, goldenConfig("dark"))
	m.update(feedMsgOf(sampleTargets()))
	m.update(winSize(160, 48))
	m.setFocus(pEvents)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	const rate, secs = 10000, 10
	done := make(chan struct{})
	go func() { // the producer: 10,000 events a second, in 1 ms slices
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		sent := 0
		for time.Since(start) < secs*time.Second {
			<-tick.C
			want := int(time.Since(start).Seconds() * rate)
			for ; sent < want; sent++ {
				m.feed.push(tailLine(time.Now(), fmt.Sprintf("primal%d", sent%7), "", EventKind(1+sent%3),
					"dag.event.appended", []byte(`{"session_id":"sess-0001","seq":12345}`), nil))
			}
		}
	}()
	var frames []time.Duration
	applied := 0
loop:
	for {
		msgc := make(chan any, 1)
		go func() { msgc <- m.feed.next(ctx)() }()
		select {
		case msg := <-msgc:
			fm, _ := msg.(feedMsg)
			applied += len(fm.items) + len(fm.lines)
			start := time.Now()
			m.update(fm)
			_ = m.render()
			frames = append(frames, time.Since(start))
		case <-done:
			break loop
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	sort.Slice(frames, func(i, j int) bool { return frames[i] < frames[j] })
	pct := func(p float64) time.Duration { return frames[int(float64(len(frames)-1)*p)] }
	t.Logf("events applied %d (%d/s), dropped before the ring %d, frames %d (%.0f/s)",
		applied, applied/secs, m.feed.dropped.Load(), len(frames), float64(len(frames))/secs)
	t.Logf("frame (Update+View) p50 %v p99 %v max %v", pct(0.5), pct(0.99), frames[len(frames)-1])
	t.Logf("heap in use before %.1f MiB, after %.1f MiB (ring of %d events kept)",
		float64(before.HeapInuse)/(1<<20), float64(after.HeapInuse)/(1<<20), m.events().ring.Len())
}

func feedMsgOf(items []any) feedMsg { return feedMsg{items: items} }

// procCPU returns the user+system CPU time of pid from /proc.
func procCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// TestLoadProcess runs the real binary in tmux: the time from start to its
// first frame, and the CPU it uses while idle for 30 s (no targets, nothing
// streaming).
func TestLoadProcess(t *testing.T) {
	needLoad(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "primalscope")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/primalscope").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	empty := filepath.Join(dir, "sockets")
	os.Mkdir(empty, 0o700)
	s := &tmuxSession{t: t, socket: fmt.Sprintf("psload%d", os.Getpid()), name: "ps"}
	s.tmux("new-session", "-d", "-s", s.name, "-x", "160", "-y", "48", "sleep 600")
	s.endWithTest()
	pidFile := filepath.Join(dir, "pid")
	cmd := fmt.Sprintf("echo $$ > %s; exec env HOME=%s XDG_RUNTIME_DIR=%s %s --socket-dir %s --theme dark --no-history", pidFile, dir, dir, bin, empty)
	start := time.Now()
	s.tmux("respawn-pane", "-k", "-t", s.name, cmd)
	var first time.Duration
	for time.Since(start) < 10*time.Second {
		if strings.Contains(s.screen(false), "No targets found") {
			first = time.Since(start)
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if first == 0 {
		t.Fatalf("no first frame:\n%s", s.screen(false))
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	time.Sleep(2 * time.Second) // let the first sweep settle
	c0 := procCPU(t, pid)
	time.Sleep(30 * time.Second)
	c1 := procCPU(t, pid)
	t.Logf("start to first frame (exec to the empty state on screen, via tmux polling every 2 ms): %v", first)
	t.Logf("CPU while idle for 30 s: %v (%.3f%% of one core)", c1-c0, float64(c1-c0)/float64(30*time.Second)*100)
}
