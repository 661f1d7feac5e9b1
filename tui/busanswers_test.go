package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// A call from the composer shows the answer that belongs to it; another
// session's answer, sent first with the same id, is a warning in the trace
// pane, never the answer.
func TestTUIBusAnswerOfAnotherSessionIsAWarning(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bus, err := ipctest.ListenHostileBus(filepath.Join(dir, "bus.sock"), ipctest.HostileBusConfig{Answers: []ipctest.BusAnswer{
		{SessionID: "S-other", Result: `{"from":"other-session"}`},
		{Result: `{"from":"own-answer"}`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close()
	cfg := goldenConfig("dark")
	cfg.Timeout = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newModel(ctx, cfg)
	m.manualFeed = true
	defer func() { m.listen.close(); m.pc.client.close() }()
	m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
	tg := discovered("unix://"+bus.Path, "bus", "unix://"+bus.Path, discovery.StateLive)
	m.update(feedMsg{items: added(tg)})
	m.setFocus(pComposer)
	m.comp().method.Set("x.y")
	cmd := m.update(press("enter")[0])
	if cmd == nil {
		t.Fatal("the call is not in flight")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		m.update(msg)
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end")
	}
	if a := m.resp().ans; a == nil || a.outcome != "ok" {
		t.Fatalf("outcome %+v, want ok", a)
	}
	m.setFocus(pResponse)
	if screen := ansi.Strip(m.render()); !strings.Contains(screen, "own-answer") || strings.Contains(screen, "other-session") {
		t.Fatalf("the response pane does not show the call's own answer:\n%s", screen)
	}
	// The trace frames reach the pane through the feed.
	deadline := time.After(5 * time.Second)
	for {
		m.setFocus(pTrace)
		if strings.Contains(ansi.Strip(m.render()), "⚠ foreign_resp") {
			return
		}
		select {
		case <-m.feed.wake:
			m.update(feedTaken(m.feed))
		case <-deadline:
			t.Fatalf("the trace pane shows no foreign_response warning:\n%s", ansi.Strip(m.render()))
		}
	}
}
