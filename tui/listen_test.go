package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestListenBounded: with more live targets than MaxListen, the TUI
// listens to MaxListen of them (the current one first, then in the pane's
// order), says on the events tail how many it left out, and listens to a
// left-out target as soon as the user opens it. A target it cannot listen
// to frees its place.
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
			return nil, errors.New("refused")
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
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(dialed)
	}
	if got := count(); got != 50 {
		t.Fatalf("%d targets dialled, want MaxListen (50)", got)
	}
	// k001 failed and freed its place, which the next feed gives to the
	// next target in line (k001 itself waits for its backoff).
	if m.listen.listening["k001"] || len(m.listen.listening) != 49 {
		t.Fatalf("listening to %d, k001 %v; want 49 and not the one that failed", len(m.listen.listening), m.listen.listening["k001"])
	}
	run(t, m, m.update(feedMsg{items: []any{Event{Source: "p000", Kind: EvHeartbeat, Name: "health.heartbeat"}}}))
	for i := 0; i < 51; i++ { // the current target first, then the pane's order
		if k := fmt.Sprintf("k%03d", i); i != 1 && !m.listen.listening[k] {
			t.Fatalf("%s is not listened to: the first in the pane's order should be", k)
		}
	}
	if got := count(); got != 51 || len(m.listen.listening) != 50 {
		t.Fatalf("%d dialled, listening to %d; want 51 and 50", got, len(m.listen.listening))
	}
	note := ""
	for i := 0; i < m.events().ring.Len(); i++ {
		if e := m.events().ring.At(i); e.Name == "listening" {
			note = string(e.Data)
		}
	}
	if !strings.Contains(note, "70 more live targets are not listened to") {
		t.Fatalf("the events tail should say how many are left out, says %q", note)
	}
	// Opening a left-out target listens to it at once.
	m.setFocus(pTargets)
	for m.tp().selectedKey() != "k100" {
		m.tp().move(1)
	}
	run(t, m, m.update(tea.KeyPressMsg{Code: tea.KeyEnter}))
	if m.pc.current != "k100" || !m.listen.listening["k100"] {
		t.Fatalf("opening k100: current %q, listening %v", m.pc.current, m.listen.listening["k100"])
	}
	mu.Lock()
	n := dialed["k100"]
	mu.Unlock()
	if n != 1 {
		t.Fatalf("k100 dialled %d times, want once", n)
	}
	conns := func() map[string]bool {
		m.pc.client.mu.Lock()
		defer m.pc.client.mu.Unlock()
		out := map[string]bool{}
		for k := range m.pc.client.conns {
			out[k] = true
		}
		return out
	}
	heartbeat := feedMsg{items: []any{Event{Source: "p000", Kind: EvHeartbeat, Name: "health.heartbeat"}}}

	// Moving through left-out targets with the keys: each becomes current
	// and is heard, the one before it is let go; never more than one past
	// the bound, in the model or in open connections.
	m.setFocus(pTargets)
	for i := 0; i < 19; i++ {
		run(t, m, m.update(press("down")[0]))
		run(t, m, m.update(heartbeat))
		if len(m.listen.listening) > 51 || len(conns()) > 51 {
			t.Fatalf("after %d moves: listening to %d, %d connections open; want at most MaxListen+1 (51)", i+1, len(m.listen.listening), len(conns()))
		}
		if !m.listen.listening[m.pc.current] || !conns()[m.pc.current] {
			t.Fatalf("the current target %s is not heard", m.pc.current)
		}
	}
	if m.pc.current != "k119" || conns()["k118"] {
		t.Fatalf("current %s; k118 still connected: %v", m.pc.current, conns()["k118"])
	}

	// Targets that leave free their places, and their connections close.
	var gone []any
	for _, k := range []string{"k000", "k002", "k003", "k004"} {
		gone = append(gone, removed(&discovery.Target{ID: k, Name: "p" + k[1:]}))
	}
	run(t, m, m.update(feedMsg{items: gone}))
	for _, k := range []string{"k000", "k002", "k003", "k004"} {
		if m.listen.listening[k] || conns()[k] {
			t.Fatalf("%s left but is still listened to (%v) or connected (%v)", k, m.listen.listening[k], conns()[k])
		}
	}
	// The current target, heard past the bound until now, takes one of
	// the four places; k051-k053 get the others.
	if len(m.listen.listening) != 50 || !m.listen.listening["k051"] || !m.listen.listening["k053"] || m.listen.listening["k054"] || !m.listen.listening["k119"] {
		t.Fatalf("after four left: listening to %d (want 50), k051 %v, k053 %v, k054 %v (want false), k119 %v",
			len(m.listen.listening), m.listen.listening["k051"], m.listen.listening["k053"], m.listen.listening["k054"], m.listen.listening["k119"])
	}
}

// TestDropLetsCallsFinish: letting a target go while a call to it is in
// flight (the user moved on, or discovery lost it for a moment) does not
// cut the call: new calls get a fresh connection at once, the old one
// closes when its call is answered, and its end is not reported as a
// connection that closed.
func TestDropLetsCallsFinish(t *testing.T) {
	dir := t.TempDir()
	p := &ipctest.Primal{Name: "slow", Version: "1.0", Groups: []ipctest.Group{{Type: "test", Methods: []string{"slow"}}},
		Handlers: map[string]ipctest.HandlerFunc{"test.slow": func(context.Context, json.RawMessage) (any, error) {
			time.Sleep(300 * time.Millisecond)
			return "done", nil
		}}}
	path := filepath.Join(dir, "slow.sock")
	s, err := ipctest.StartPrimal(path, p)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, _ := testModel(t, goldenConfig("dark"))
	tg := discovered("unix://"+path, "slow", "unix://"+path, discovery.StateLive)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	first, err := m.pc.client.conn(ctx, tg)
	if err != nil {
		t.Fatal(err)
	}
	answered := make(chan error, 1)
	go func() {
		_, err := m.pc.client.send(ctx, tg, ipc.Request{Method: "test.slow"})
		answered <- err
	}()
	for first.InFlight() == 0 { // the call is on the wire
		time.Sleep(time.Millisecond)
	}
	dropped := make(chan struct{})
	go func() { m.pc.client.drop(tg.ID, 5*time.Second); close(dropped) }()
	time.Sleep(20 * time.Millisecond)
	again, err := m.pc.client.conn(ctx, tg)
	if err != nil || again == first {
		t.Fatalf("a new call should get a fresh connection at once: same %v, %v", again == first, err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("the call in flight was cut: %v", err)
	}
	select {
	case <-dropped:
	case <-time.After(3 * time.Second):
		t.Fatal("drop did not close the connection after its call was answered")
	}
	select {
	case <-first.Done():
	case <-time.After(time.Second):
		t.Fatal("the dropped connection is still open")
	}
	time.Sleep(50 * time.Millisecond) // its reader has ended
	for {
		select {
		case x := <-m.feed.ch:
			if e, ok := x.(Event); ok && e.Name == "connection closed" {
				t.Fatalf("a connection closed on purpose was reported: %+v", e)
			}
			continue
		default:
		}
		break
	}
}
