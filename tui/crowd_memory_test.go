package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"testing"
	"time"
	"weak"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// crowdHelperEnv makes the test binary serve a crowd (TestCrowdServeHelper)
// instead of testing: "DIR N" serves N live crowd primals in DIR until its
// standard input closes.
const crowdHelperEnv = "PRIMALSCOPE_CROWD_HELPER"

// TestCrowdServeHelper is not a test: run by TestCrowdLiveHeap as a child
// process, it serves the crowd there, so that the crowd's own memory is not
// counted as the TUI's.
func TestCrowdServeHelper(t *testing.T) {
	arg := os.Getenv(crowdHelperEnv)
	if arg == "" {
		t.Skip("a helper process for TestCrowdLiveHeap")
	}
	var dir string
	var n int
	if _, err := fmt.Sscan(arg, &dir, &n); err != nil {
		t.Fatal(err)
	}
	c, err := ipctest.StartCrowd(dir, n, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it (or dies)
}

// startCrowdProcess serves n live crowd primals in dir from a child
// process, which ends with the test.
func startCrowdProcess(t *testing.T, dir string, n int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestCrowdServeHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), crowdHelperEnv+"="+dir+" "+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	ready := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			if s.Text() == "ready" {
				ready <- true
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatal("the crowd process did not start in 60 s")
	}
}

// liveHeap is the live heap and the goroutine stacks in use after a full
// collection.
func liveHeap() (heap, stacks uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// crowdModel runs the TUI's model, as Run does but with the feed pumped
// here (every frame drawn, at 120×35), over a directory of n live crowd
// primals served by another process, until every target is live, listened
// to as the TUI does (up to Config.MaxListen), and discovery has swept
// again twice (so what the watcher and the discoverer keep between sweeps
// is there), and returns as the next sweep ends. It returns the model;
// stop ends everything it started.
func crowdModel(t *testing.T, n int) (m *model, stop func()) {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	startCrowdProcess(t, dir, n)

	ctx, cancel := context.WithCancel(context.Background())
	hb := make(chan events.Event, 64)
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	cfg.SocketDirs = []string{dir}
	cfg.Discoverer = &DiscoveryWatcher{
		D: discovery.New(discovery.Options{
			Getenv:     func(string) string { return "" },
			Environ:    func() []string { return nil },
			SocketDirs: []string{dir},
			NoProc:     true,
		}),
		// Sweeps a second apart (5 s doubling to 60 s by default): the
		// same work, sooner.
		Opts:       discovery.WatchOptions{Interval: time.Second, MaxInterval: time.Second},
		Heartbeats: hb,
	}
	m = newModel(ctx, cfg)
	m.manualFeed = true
	m.update(winSize(120, 35))
	var wg sync.WaitGroup
	startSources(ctx, &wg, cfg, m.feed)
	stop = func() {
		cancel()
		m.listen.close()
		m.pc.client.close()
		wg.Wait()
	}

	live := func() int {
		c := 0
		for _, tg := range m.pc.targets {
			if tg.health() == discovery.StateLive {
				c++
			}
		}
		return c
	}
	msgc := make(chan tea.Msg, 1)
	pumping := false
	sweeps, sweepsAtLive := 0, -1
	deadline := time.After(90 * time.Second) // a hang guard, not a timing
	// Until the sweep that ends after all that (the measure is taken
	// between sweeps).
	settled := -1
	for settled < 0 || sweeps <= settled {
		if settled < 0 && sweepsAtLive >= 0 && sweeps >= sweepsAtLive+2 && len(m.listen.listening) >= min(n, cfg.MaxListen) {
			settled = sweeps
		}
		if !pumping {
			pumping = true
			go func() { msgc <- m.feed.next(ctx)() }()
		}
		select {
		case msg := <-msgc:
			pumping = false
			m.update(msg)
			m.render()
			if sweepsAtLive < 0 && live() == n {
				sweepsAtLive = sweeps
			}
		case <-hb:
			sweeps++
			if settled >= 0 {
				continue // measured at once
			}
		case <-deadline:
			stop()
			t.Fatalf("after 90 s: %d of %d targets live, %d sweeps, %d listened to", live(), n, sweeps, len(m.listen.listening))
		}
	}
	if pumping {
		// The pump's reader ends with ctx (stop); its message is dropped.
		go func() { <-msgc }()
	}
	return m, stop
}

// TestCrowdLiveHeap bounds what the TUI keeps for a big ecosystem: with
// 2,000 live targets listed (capabilities known, the first 256 listened
// to, discovery sweeping), the live heap and the goroutine stacks per
// target after a full collection.
func TestCrowdLiveHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	const n = 2000
	// PRIMALSCOPE_HEAPPROFILE=FILE writes the heap profile of the measure
	// there (go tool pprof -sample_index=inuse_space), finely sampled.
	profile := os.Getenv("PRIMALSCOPE_HEAPPROFILE")
	if profile != "" {
		runtime.MemProfileRate = 512
	}
	heap0, stacks0 := liveHeap()
	m, stop := crowdModel(t, n)
	defer stop()
	heap1, stacks1 := liveHeap()
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			t.Fatal(err)
		}
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	runtime.KeepAlive(m)
	heap, stacks := heap1-min(heap0, heap1), stacks1-min(stacks0, stacks1)
	msg := fmt.Sprintf("%d targets, %d listened to: live heap %.1f MiB (%d B a target), goroutine stacks %.1f MiB (%d goroutines)",
		n, len(m.listen.listening), float64(heap)/(1<<20), heap/n, float64(stacks)/(1<<20), runtime.NumGoroutine())
	// 10,458 B a target (20.0 MiB) when the discoverer and the TUI each
	// kept a copy of every target with its probe, 8,900 B when the targets
	// pane still held each target's first snapshot; 8,075 B when each
	// listened target's connection held a queue of 1,024 unread messages
	// and the events ring was allocated whole; 5,100 B since.
	const maxPerTarget = 6000
	if heap/n > maxPerTarget {
		t.Errorf("%s; want at most %d B a target", msg, maxPerTarget)
	} else {
		t.Log(msg)
	}
	// One goroutine a listened target (it was three: 780 in all), and a
	// few of the TUI's own.
	if g := runtime.NumGoroutine(); g > len(m.listen.listening)+64 {
		t.Errorf("%s; want at most one goroutine a listened target and 64 more", msg)
	}
	// The soft memory limit's floor leaves the collector room: a live heap
	// and stacks over half of it have it run (nearly) without end.
	if 2*(heap+stacks) > memoryFloor {
		t.Errorf("the live heap and stacks (%.1f MiB) are over half the memory floor (%d MiB)", float64(heap+stacks)/(1<<20), memoryFloor>>20)
	}
}

// TestTargetsKeepNoOldSnapshot: once discovery sends a target's new
// snapshot (its health changed, its listing did not), nothing in the TUI
// holds the old one, and the filter still finds the target.
func TestTargetsKeepNoOldSnapshot(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(120, 35))
	first := discovered("/run/a.sock", "alpha", "/run/a.sock", discovery.StateUnknown)
	m.update(feedMsg{items: added(first, discovered("/run/b.sock", "beta", "/run/b.sock", discovery.StateLive))})
	m.render()
	m.setFocus(pTargets)
	keyMsgs(t, m, "/", "alp", "enter") // the filter words are worked out
	keyMsgs(t, m, "/", "backspace", "backspace", "backspace", "enter")
	old := weak.Make(first)
	next := discovered("/run/a.sock", "alpha", "/run/a.sock", discovery.StateLive)
	first = nil
	m.update(feedMsg{items: []any{changed(next)}})
	m.render()
	runtime.GC()
	runtime.GC()
	if old.Value() != nil {
		t.Error("the first snapshot of a target is still held after discovery replaced it")
	}
	keyMsgs(t, m, "/", "alp", "enter")
	if len(m.tp().rows) != 1 || m.tp().rows[0].key != "/run/a.sock" {
		t.Errorf("filtering for alp after the change: rows %v, want alpha's alone", m.tp().rows)
	}
}
