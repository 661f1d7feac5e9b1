package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// The TUI as it is used (issue 16): focus, quitting, the composer across
// replies and targets, replays, and the live tails' cursor.

// quits reports whether cmd (or a command of its batch) quits.
func quits(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	switch msg := cmd().(type) {
	case tea.QuitMsg:
		return true
	case tea.BatchMsg:
		for _, c := range msg {
			if quits(c) {
				return true
			}
		}
	}
	return false
}

// TestSendKeepsFocus: after ⏎ sends, the composer keeps the keyboard, so
// a q typed next is text, not a quit.
func TestSendKeepsFocus(t *testing.T) {
	_, tg := startPrimal(t)
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: added(tg)})
	run(t, m, m.cp().pickMethod("crypto.sign_ed25519"))
	run(t, m, m.update(press("enter")[0]))
	if a := m.resp().ans; a == nil || a.outcome != "ok" {
		t.Fatalf("no answer: %+v", a)
	}
	if m.pc.focus != pComposer {
		t.Fatalf("after send the focus is on pane %d, not the composer", m.pc.focus)
	}
	cmd := m.update(press("q")[0])
	if quits(cmd) {
		t.Fatal("a q typed after sending quit the program")
	}
	if got := m.comp().params.String(); got != "{}q" {
		t.Fatalf("the q did not reach the params: %q", got)
	}
}

// TestQuitAsks: a bare quit asks first while the composer holds unsent
// edits or a call is in flight (the quit key again quits, any other key
// stays); with nothing to lose it quits at once; force quit never asks.
func TestQuitAsks(t *testing.T) {
	t.Run("unsent edits", func(t *testing.T) {
		m, _ := testModel(t, goldenConfig("dark"))
		m.update(feedMsg{items: sampleTargets()})
		if !quits(m.update(press("q")[0])) {
			t.Fatal("nothing to lose, and q did not quit")
		}
		keyMsgs(t, m, "3", `{"message":"hi"}`, "esc") // typed, then left
		if m.pc.focus == pComposer {
			t.Fatal("esc did not leave the composer")
		}
		m.setFocus(pTargets)
		if quits(m.update(press("q")[0])) {
			t.Fatal("q quit with unsent edits without asking")
		}
		if !strings.Contains(m.pc.status, "edits not sent") || !strings.Contains(m.pc.status, "q quits anyway") || !strings.Contains(m.pc.status, "esc stays") {
			t.Fatalf("the question does not say why and how: %q", m.pc.status)
		}
		if quits(m.update(press("j")[0])) || m.quitting {
			t.Fatal("another key did not answer 'stay'")
		}
		if m.tp().sel != 0 {
			t.Fatal("the key that answered the question also moved the cursor")
		}
		m.update(press("q")[0])
		if !quits(m.update(press("q")[0])) {
			t.Fatal("q, asked, did not quit")
		}
		// Sent, nothing is left unsent.
		m.comp().loaded()
		if !quits(m.update(press("q")[0])) {
			t.Fatal("after the edits were sent, q did not quit")
		}
	})
	t.Run("in flight", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "slow.sock")
		release := make(chan struct{})
		defer close(release)
		s, err := ipctest.Listen(path, ipctest.Config{Concurrent: true, Methods: map[string]ipctest.HandlerFunc{
			"slow.wait": func(ctx context.Context, _ json.RawMessage) (any, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return "late", nil
			},
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m, _ := testModel(t, goldenConfig("dark"))
		m.update(feedMsg{items: added(discovered("unix://"+path, "slow", "unix://"+path, discovery.StateLive))})
		m.setFocus(pComposer)
		m.comp().method.Set("slow.wait")
		if cmd := m.update(press("enter")[0]); cmd == nil || !m.comp().inflight {
			t.Fatal("the call is not in flight")
		}
		m.update(press("esc")[0])
		if quits(m.update(press("q")[0])) || !strings.Contains(m.pc.status, "slow.wait is in flight") {
			t.Fatalf("q quit with a call in flight without asking (status %q)", m.pc.status)
		}
		if !quits(m.update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})) {
			t.Fatal("force quit asked")
		}
	})
	t.Run("remapped", func(t *testing.T) {
		cfg := goldenConfig("dark")
		cfg.Keys = map[string][]string{"quit": {"Q"}, "back": {"ctrl+g"}}
		m, _ := testModel(t, cfg)
		m.update(feedMsg{items: sampleTargets()})
		keyMsgs(t, m, "3", "x")
		m.setFocus(pTargets)
		if quits(m.update(press("Q")[0])) || !strings.Contains(m.pc.status, "Q quits anyway") || !strings.Contains(m.pc.status, "ctrl+g stays") {
			t.Fatalf("the question does not name the remapped keys: %q", m.pc.status)
		}
		if quits(m.update(press("q")[0])) {
			t.Fatal("the old quit key answered the question")
		}
		m.update(press("Q")[0])
		if !quits(m.update(press("Q")[0])) {
			t.Fatal("the remapped quit key did not confirm")
		}
	})
}

// TestReplyKeepsCall: answering a peer's request has its own field; the
// call being written (method and params) is there again after the answer
// is sent, or dropped.
func TestReplyKeepsCall(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: sampleTargets()})
	keyMsgs(t, m, "3", "crypto.sign_ed25519", "down", "backspace", "backspace", `{"message":"mine"}`)
	got := make(chan json.RawMessage, 2)
	// Asked now: a Hello older than the peer's 3 s is not answered (p16).
	req := tailLine(time.Now(), "holon", "ws://h", EvRequest, "client.v1.Client/Hello", []byte(`{"greeting":"hi"}`), json.RawMessage(`"s1"`))
	req.reply = func(_ context.Context, res json.RawMessage, _ *ipc.RPCError) error { got <- res; return nil }
	for i := 0; i < 2; i++ {
		m.update(liveMsg{lines: []line{req}})
	}
	// Answer the first: type a result, send it.
	keyMsgs(t, m, "esc", "R", "a")
	c := m.comp()
	if m.pc.focus != pComposer || c.reply == nil {
		t.Fatal("answering did not open the composer in reply mode")
	}
	if v := ansi.Strip(m.render()); !strings.Contains(v, "result {}") {
		t.Fatalf("the reply does not start from {}:\n%s", v)
	}
	keyMsgs(t, m, "backspace", "backspace", `{"ok":true}`)
	run(t, m, m.update(press("enter")[0]))
	select {
	case res := <-got:
		if string(res) != `{"ok":true}` {
			t.Fatalf("the peer got %s", res)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reply was not sent")
	}
	if c.method.String() != "crypto.sign_ed25519" || c.params.String() != `{"message":"mine"}` {
		t.Fatalf("after replying the call is %q %q", c.method.String(), c.params.String())
	}
	// Open the other, then drop it.
	keyMsgs(t, m, "R", "k", "a", "x", "esc")
	if c.reply != nil || c.params.String() != `{"message":"mine"}` {
		t.Fatalf("after dropping a reply the params are %q", c.params.String())
	}
	if len(got) != 0 {
		t.Fatal("a dropped reply was sent")
	}
}

// TestTargetSwitchMarksMethod: a method written for one target, kept when
// another becomes current, is marked as not offered there and is not sent
// as if it were: the first send says so, the second sends it. A bus's
// session and pool are not sent to a target that is not a bus.
func TestTargetSwitchMarksMethod(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: sampleTargets()})
	bd, ng := sampleTarget(0), sampleTarget(2)
	m.update(selectMsg{key: bd.ID})
	run(t, m, m.cp().pickMethod("crypto.sign_ed25519"))
	if v := ansi.Strip(m.render()); strings.Contains(v, "not offered") {
		t.Fatalf("a method beardog offers is marked:\n%s", v)
	}
	m.update(selectMsg{key: ng.ID})
	m.setFocus(pComposer)
	v := ansi.Strip(m.render())
	if !strings.Contains(v, "method crypto.sign_ed25519 ⚠ not offered here") {
		t.Fatalf("the carried method is not marked:\n%s", v)
	}
	cmd := m.update(press("enter")[0])
	if cmd != nil || m.comp().inflight {
		t.Fatal("the carried method was sent without a word")
	}
	if want := "nestgate does not offer crypto.sign_ed25519 (it was written for beardog): ⏎ again sends it anyway"; !strings.Contains(m.pc.status, want) {
		t.Fatalf("status %q lacks %q", m.pc.status, want)
	}
	if cmd := m.update(press("enter")[0]); cmd == nil || !m.comp().inflight {
		t.Fatal("the second send, asked for, did not send")
	}
	m.comp().inflight = false

	// Typed for this target: marked (and sent at once: the user chose it).
	m.comp().method.Set("storage.nope")
	if v := ansi.Strip(m.render()); !strings.Contains(v, "not offered here") {
		t.Fatalf("an unlisted method is not marked:\n%s", v)
	}

	// A bus's routing fields stay with the bus.
	bus := discovered("unix:///nonexistent/agents.sock#agents", "agents", "unix:///nonexistent/agents.sock", discovery.StateLive)
	bus.Pool, bus.Kind = "agents", discovery.KindBus
	m.update(feedMsg{items: added(bus)})
	m.update(selectMsg{key: bus.ID})
	m.comp().session.Set("S1")
	m.update(selectMsg{key: ng.ID})
	m.comp().method.Set("storage.get")
	var done tea.Msg
	if cmd := m.update(press("enter")[0]); cmd != nil {
		done = cmd()
	}
	cd, ok := done.(callDoneMsg)
	if !ok || cd.ans.req.Method != "storage.get" || cd.ans.req.SessionID != "" || cd.ans.req.Pool != "" {
		t.Fatalf("the call to a primal: %#v", done)
	}
}

// TestReplayKeepsCursor: after a replay the history reloads with the new
// call on top; the cursor stays on the call replayed, so replaying again
// replays the same call.
func TestReplayKeepsCursor(t *testing.T) {
	_, tg := startPrimal(t)
	hist := NewMemHistory(0)
	for i := 1; i <= 3; i++ {
		hist.Record(history.Entry{Time: t0, Target: "beardog", Endpoint: tg.Address, Method: "crypto.sign_ed25519",
			Params: json.RawMessage(fmt.Sprintf(`{"message":"m%d"}`, i)), Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)})
	}
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: added(tg)})
	keyMsgs(t, m, "H", "j") // on call 2
	for i := 0; i < 2; i++ {
		keyMsgs(t, m, "r")
		if a := m.resp().ans; a == nil || !strings.HasPrefix(a.title, "replay of 2 ") {
			t.Fatalf("replay %d: %+v", i+1, a)
		}
		run(t, m, m.histp().load("")) // the reload a call asks for
		if e := m.histp().selected(); e == nil || e.ID != 2 {
			t.Fatalf("after replay %d the cursor is on %+v", i+1, e)
		}
	}
	if es, _ := hist.Search(context.Background(), "", 0); len(es) != 5 {
		t.Fatalf("history holds %d calls, want 5", len(es))
	}
}
