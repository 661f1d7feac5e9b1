package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// registryTargets serves a Songbird-like registry holding n registrations
// (half with a Unix socket that is not there, half reached through a mesh
// relay, a few with a family) in a fresh socket directory, and returns the
// discoverer the TUI would use over that directory.
func registryTargets(t testing.TB, n int) *DiscoveryWatcher {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sb := ipctest.NewSongbird()
	for _, svc := range ipctest.LoadServices(n, filepath.Join(dir, "gone")) {
		sb.Register(svc)
	}
	srv, err := ipctest.Listen(filepath.Join(dir, "songbird.sock"), sb.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	d := discovery.New(discovery.Options{
		Getenv:     func(string) string { return "" },
		Environ:    func() []string { return nil },
		SocketDirs: []string{dir},
		NoProc:     true,
		Probe:      discovery.ProbeOptions{StaleTimeout: 5 * time.Second},
	})
	// Slow re-sweeps: the test is about the first listing.
	return &DiscoveryWatcher{D: d, Opts: discovery.WatchOptions{Interval: time.Minute, MaxInterval: time.Minute, PollInterval: time.Minute}}
}

// TestTenThousandRegisteredTargets streams a registry of 10,000 targets
// through discovery's watcher and the feed into the model, frame by frame as
// the program does, then works the targets pane the way a person would:
// every target is there, once; the screen draws only what fits; moving to
// the bottom, filtering to one target and clearing the filter land where
// they should. Timing lives in BenchmarkTargets10k.
func TestTenThousandRegisteredTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	const n = 10_000
	w := registryTargets(t, n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, goldenConfig("dark"))
	m.manualFeed = true
	m.update(winSize(160, 48))

	out := make(chan discovery.Event, 256)
	watched := make(chan error, 1)
	go func() { watched <- w.Watch(ctx, out) }()
	go func() { // the program's discovery pump: target events must arrive
		for {
			select {
			case te := <-out:
				m.feed.pushWait(ctx, te)
			case <-ctx.Done():
				return
			}
		}
	}()
	registered := func() int {
		c := 0
		for _, tg := range m.pc.targets {
			if strings.HasPrefix(tg.Name, "load") {
				c++
			}
		}
		return c
	}
	frames := 0
	deadline := time.After(90 * time.Second) // a hang guard, not a timing
	for registered() < n {
		msgc := make(chan tea.Msg, 1)
		go func() { msgc <- m.feed.next(ctx)() }()
		select {
		case msg := <-msgc:
			m.update(msg)
			m.render() // every frame is drawn, as the program would
			frames++
		case <-deadline:
			t.Fatalf("%d of %d registered targets reached the pane after 90 s", registered(), n)
		}
	}
	t.Logf("%d targets in %d frames", len(m.pc.targets), frames)

	names := map[string]int{}
	for _, r := range m.tp().rows {
		if r.key != "" {
			names[m.pc.targets[r.key].Name]++
		}
	}
	for i := 0; i < n; i++ {
		if name := fmt.Sprintf("load%05d", i); names[name] != 1 {
			t.Fatalf("%s is in the targets pane %d times, want once", name, names[name])
		}
	}

	// The events tail says it in a note or two, not 10,000.
	burst := 0
	for i := 0; i < m.events().ring.Len(); i++ {
		if e := m.events().ring.At(i); strings.HasSuffix(e.title, " targets appeared") {
			burst++
		}
	}
	if burst == 0 || m.events().ring.Len() > n/10 { // a few frames under load may carry 20 or fewer each
		t.Fatalf("events tail: %d events, %d burst notes; want a burst note and no note per target", m.events().ring.Len(), burst)
	}

	m.setFocus(pTargets)
	// Targets arrive as they are found: the registry first (current, with
	// the cursor on it), then what it lists. The top of the list:
	for _, msg := range press("g") {
		m.update(msg)
	}
	screen := ansi.Strip(m.render())
	if lines := strings.Count(screen, "\n") + 1; lines > 48 {
		t.Fatalf("the screen has %d lines for a 48-line terminal", lines)
	}
	rows := targetRows(screen)
	if len(rows) < 10 || len(rows) > 48 || rows[0] != "load00000" || rows[len(rows)-1] == "load09999" {
		t.Fatalf("the targets pane should show a screenful from load00000, shows %d rows %v:\n%s", len(rows), rows, screen)
	}
	for _, msg := range press("G") {
		m.update(msg)
	}
	if got := m.pc.targets[m.tp().selectedKey()].Name; got != "songbird" && !strings.HasPrefix(got, "load") {
		t.Fatalf("G selected %q", got)
	}
	screen = ansi.Strip(m.render())
	if rows := targetRows(screen); len(rows) == 0 || rows[len(rows)-1] != "songbird" || !slices.Contains(rows, "load09999") {
		t.Fatalf("after G the bottom of the list should show, shows %v:\n%s", rows, screen)
	}
	for _, msg := range press("/", "load07777", "enter") {
		m.update(msg)
	}
	if len(m.tp().rows) != 1 || m.pc.targets[m.tp().selectedKey()].Name != "load07777" {
		t.Fatalf("filter load07777: %d rows, selected %q", len(m.tp().rows), m.tp().selectedKey())
	}
	if m.pc.current != m.tp().selectedKey() {
		t.Fatalf("the filtered target is not the current one (%q, want %q)", m.pc.current, m.tp().selectedKey())
	}
	screen = ansi.Strip(m.render())
	if rows := targetRows(screen); len(rows) != 1 || rows[0] != "load07777" {
		t.Fatalf("the filtered target should be the only row, rows %v:\n%s", rows, screen)
	}
	for _, msg := range press("/", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "backspace", "enter") {
		m.update(msg)
	}
	if got := len(m.tp().rows); got < n {
		t.Fatalf("after clearing the filter %d rows, want at least %d", got, n)
	}
	if m.pc.targets[m.tp().selectedKey()].Name != "load07777" {
		t.Fatalf("clearing the filter lost the selection: %q", m.tp().selectedKey())
	}
	cancel()
	select {
	case <-watched:
	case <-time.After(10 * time.Second):
		t.Fatal("the discovery watcher did not end with its context")
	}
}

// targetRowRE matches a row of the targets pane on a plain screen: the
// pane's left border, the selection mark, a health dot and the name.
var targetRowRE = regexp.MustCompile(`^│[ ›][●○◌✕] (\S+)`)

// targetRows lists the names the targets pane shows on screen, top down.
func targetRows(screen string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if m := targetRowRE.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// manyTargets builds n synthetic targets, a tenth of them live with a
// capability tree, the rest stale or down, spread over a few families.
func manyTargets(n int) []any {
	base := sampleTargets()
	caps := base[0].(discovery.Event).Target.Probe
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("load%05d", i)
		addr := "tcp://10.0.0.1:" + fmt.Sprint(20000+i)
		tg := discovered(addr, name, addr, discovery.StateStale)
		tg.Sources, tg.Level, tg.Probe.Wire = []discovery.SourceRef{{Source: "songbird"}}, 1, "jsonrpc"
		switch {
		case i%10 == 0:
			tg.Probe.State, tg.Probe.Latency, tg.Probe.Capabilities, tg.Probe.Identity = discovery.StateLive, time.Millisecond, caps.Capabilities, caps.Identity
		case i%3 == 0:
			tg.Probe.State = discovery.StateDead
		}
		if i%7 == 0 {
			tg.Family = fmt.Sprintf("family-%d", i%4)
		}
		out = append(out, added(tg)...)
	}
	return out
}

// BenchmarkTargets10k measures what a person feels with 10,000 targets
// listed: a frame of the screen, one move of the cursor, one keystroke in
// the filter, and one frame's worth of discovery changes (100 targets
// changing health) arriving.
func BenchmarkTargets10k(b *testing.B) {
	const n = 10_000
	setup := func(b *testing.B) *model {
		m := newModel(context.Background(), goldenConfig("dark"))
		m.manualFeed = true
		m.update(winSize(160, 48))
		m.update(feedMsg{items: manyTargets(n)})
		m.setFocus(pTargets)
		return m
	}
	b.Run("absorb-all", func(b *testing.B) {
		items := manyTargets(n)
		for b.Loop() {
			m := newModel(context.Background(), goldenConfig("dark"))
			m.manualFeed = true
			m.update(feedMsg{items: items})
		}
	})
	b.Run("frame", func(b *testing.B) {
		m := setup(b)
		for b.Loop() {
			m.render()
		}
	})
	b.Run("move", func(b *testing.B) {
		m := setup(b)
		down, up := press("down")[0], press("up")[0]
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 {
				m.update(down)
			} else {
				m.update(up)
			}
			m.render()
		}
	})
	b.Run("filter-key", func(b *testing.B) {
		m := setup(b)
		m.update(press("/")[0])
		typed, erase := press("7")[0], press("backspace")[0]
		i := 0
		for b.Loop() {
			if i++; i%2 == 0 {
				m.update(erase)
			} else {
				m.update(typed)
			}
			m.render()
		}
	})
	b.Run("health-changes", func(b *testing.B) {
		m := setup(b)
		all := manyTargets(n)
		i := 0
		for b.Loop() {
			batch := make([]any, 0, 100)
			for j := 0; j < 100; j++ {
				d := *all[(i*100+j)%n].(discovery.Event).Target
				if i%2 == 0 {
					p := *d.Probe
					p.State = discovery.StateDead
					d.Probe = &p
				}
				batch = append(batch, changed(&d))
			}
			i++
			m.update(feedMsg{items: batch})
			m.render()
		}
	})
}

// BenchmarkListen10k measures the listening pass over 10,000 targets (a
// tenth live, all already listened to or left out by MaxListen): on a frame
// where nothing that decides listening changed (skipped), and after a
// change (the whole pass).
func BenchmarkListen10k(b *testing.B) {
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	cfg.Dial = func(context.Context, *discovery.Target, ipc.Options) (*ipc.Conn, error) {
		return nil, errors.New("no network in this benchmark")
	}
	m := newModel(context.Background(), cfg)
	m.manualFeed = true
	b.Cleanup(m.listen.close) // the sources it started, retrying their dials
	m.update(feedMsg{items: manyTargets(10_000)})
	m.listenPass() // the first pass claims MaxListen places
	b.Run("unchanged", func(b *testing.B) {
		for b.Loop() {
			m.listenPass()
		}
	})
	b.Run("after-a-change", func(b *testing.B) {
		for b.Loop() {
			m.listen.dirty = true
			m.listenPass()
		}
	})
}
