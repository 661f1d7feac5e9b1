package tui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestListenBounded: with more live targets than MaxListen, the TUI hears
// MaxListen of them (the current one first, then in the pane's order), says
// on the events tail how many it left out, and hears a left-out target as
// soon as the user opens it. A target whose source cannot go on (a BTSP
// handshake it cannot do) frees its place.
func TestListenBounded(t *testing.T) {
	_, shared := startPrimal(t)
	var mu sync.Mutex
	dialed := map[string]int{}
	fail := map[string]bool{}
	cfg := goldenConfig("dark")
	cfg.NoListen, cfg.MaxListen = false, 50
	cfg.Dial = func(ctx context.Context, tg *discovery.Target, opts ipc.Options) (*ipc.Conn, error) {
		mu.Lock()
		dialed[tg.ID]++
		bad := fail[tg.ID]
		mu.Unlock()
		if bad {
			return nil, &ipc.BTSPRequiredError{Endpoint: tg.Address}
		}
		return defaultDialer(ctx, shared, opts) // every target is the same fake primal
	}
	m, _ := testModel(t, cfg)
	var items []any
	for i := 0; i < 120; i++ {
		tg := *shared
		tg.ID, tg.Name = fmt.Sprintf("k%03d", i), fmt.Sprintf("p%03d", i)
		items = append(items, added(&tg)...)
	}
	mu.Lock()
	fail["k001"] = true
	mu.Unlock()
	run(t, m, m.update(feedMsg{items: items}))
	l := m.listen
	for i := 0; i < 50; i++ { // the current target first, then the pane's order
		// (k001's source may have given up already: it is said below)
		if k := fmt.Sprintf("k%03d", i); !l.listening[k] || (i != 1 && !l.group.Running(k)) {
			t.Fatalf("%s is not heard: the first 50 in the pane's order should be", k)
		}
	}
	if len(l.listening) != 50 || l.group.Len() > 50 {
		t.Fatalf("hearing %d (%d sources); want MaxListen (50)", len(l.listening), l.group.Len())
	}
	note := func() string {
		n := ""
		for i := 0; i < m.events().ring.Len(); i++ {
			if e := m.events().ring.At(i); e.title == "listening" {
				n = string(e.data)
			}
		}
		return n
	}
	if !strings.Contains(note(), "70 more live targets are not listened to") {
		t.Fatalf("the events tail should say how many are left out, says %q", note())
	}
	count := func(k string) int {
		mu.Lock()
		defer mu.Unlock()
		return dialed[k]
	}
	all := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(dialed)
	}
	// k001's source gives up (no seed can help) and says so; its place
	// goes to the next in line, k050.
	deadline := time.Now().Add(10 * time.Second)
	for l.listening["k001"] || !l.listening["k050"] {
		if time.Now().After(deadline) {
			t.Fatalf("k001 still heard (%v), k050 not (%v), after 10 s", l.listening["k001"], l.listening["k050"])
		}
		drainFeed(t, m, 50*time.Millisecond)
	}
	stopped := false
	for i := 0; i < m.events().ring.Len(); i++ {
		e := m.events().ring.At(i)
		stopped = stopped || (e.Source == "p001" && strings.Contains(e.title, "stopped watching"))
	}
	if !stopped || len(l.listening) != 50 {
		t.Fatalf("k001's end said %v; hearing %d, want 50", stopped, len(l.listening))
	}
	for all() < 51 { // every source dials, in its own goroutine
		if time.Now().After(deadline) {
			t.Fatalf("%d targets dialled after 10 s, want 51", all())
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Opening a left-out target hears it at once.
	m.setFocus(pTargets)
	for m.tp().selectedKey() != "k100" {
		m.tp().move(1)
	}
	run(t, m, m.update(tea.KeyPressMsg{Code: tea.KeyEnter}))
	if m.pc.current != "k100" || !l.listening["k100"] || !l.group.Running("k100") {
		t.Fatalf("opening k100: current %q, heard %v", m.pc.current, l.listening["k100"])
	}
	for count("k100") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("k100 was never dialled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	heartbeat := feedMsg{items: []any{tailLine(t0, "p000", "k000", EvHeartbeat, "health.heartbeat", nil, nil)}}

	// Moving through left-out targets with the keys: each becomes current
	// and is heard, the one before it is let go; never more than one past
	// the bound.
	m.setFocus(pTargets)
	for i := 0; i < 19; i++ {
		run(t, m, m.update(press("down")[0]))
		run(t, m, m.update(heartbeat))
		if len(l.listening) > 51 || l.group.Len() > 51 {
			t.Fatalf("after %d moves: hearing %d, %d sources; want at most MaxListen+1 (51)", i+1, len(l.listening), l.group.Len())
		}
		if !l.listening[m.pc.current] || !l.group.Running(m.pc.current) {
			t.Fatalf("the current target %s is not heard", m.pc.current)
		}
	}
	if m.pc.current != "k119" || l.group.Running("k118") || count("k100") != 1 {
		t.Fatalf("current %s; k118 still heard: %v; k100 dialled %d times, want once", m.pc.current, l.group.Running("k118"), count("k100"))
	}

	// Targets that leave free their places, and their sources stop.
	var gone []any
	for _, k := range []string{"k000", "k002", "k003", "k004"} {
		gone = append(gone, removed(&discovery.Target{ID: k, Name: "p" + k[1:]}))
	}
	run(t, m, m.update(feedMsg{items: gone}))
	for _, k := range []string{"k000", "k002", "k003", "k004"} {
		if l.listening[k] || l.group.Running(k) {
			t.Fatalf("%s left but is still heard", k)
		}
	}
	// The current target, heard past the bound until now, takes one of
	// the four places; k051-k053 get the others.
	if len(l.listening) != 50 || !l.listening["k051"] || !l.listening["k053"] || l.listening["k054"] || !l.listening["k119"] {
		t.Fatalf("after four left: hearing %d (want 50), k051 %v, k053 %v, k054 %v (want false), k119 %v",
			len(l.listening), l.listening["k051"], l.listening["k053"], l.listening["k054"], l.listening["k119"])
	}
	m.listen.close()
	if l.group.Len() != 0 {
		t.Fatal("sources still run after close")
	}
}
