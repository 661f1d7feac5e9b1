package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/ipc"
)

// remapKeys gives every action a key of its own that no default uses:
// f1…f20, ctrl+f1…, alt+a…, alt+0…, in the order of ActionNames.
func remapKeys(t *testing.T) map[string]string {
	t.Helper()
	var pool []tea.Key
	for i := 0; i < 20; i++ {
		pool = append(pool, tea.Key{Code: tea.KeyF1 + rune(i)}, tea.Key{Code: tea.KeyF1 + rune(i), Mod: tea.ModCtrl})
	}
	for r := 'a'; r <= 'z'; r++ {
		pool = append(pool, tea.Key{Code: r, Mod: tea.ModAlt})
	}
	for r := '0'; r <= '9'; r++ {
		pool = append(pool, tea.Key{Code: r, Mod: tea.ModAlt})
	}
	names := ActionNames()
	if len(names) > len(pool) {
		t.Fatalf("%d actions, %d keys to give them", len(names), len(pool))
	}
	out := map[string]string{}
	for i, n := range names {
		out[n] = tea.KeyPressMsg(pool[i]).String()
	}
	return out
}

// keyPress turns a key name that remapKeys made back into a key press.
func keyPress(t *testing.T, name string) tea.KeyPressMsg {
	t.Helper()
	var k tea.Key
	switch {
	case strings.HasPrefix(name, "alt+"):
		k = tea.Key{Code: rune(name[4]), Mod: tea.ModAlt}
	default:
		s, ctrl := strings.CutPrefix(name, "ctrl+")
		var n int
		if _, err := fmt.Sscanf(s, "f%d", &n); err != nil {
			t.Fatalf("key %q: %v", name, err)
		}
		k = tea.Key{Code: tea.KeyF1 + rune(n-1)}
		if ctrl {
			k.Mod = tea.ModCtrl
		}
	}
	kp := tea.KeyPressMsg(k)
	if kp.String() != name {
		t.Fatalf("built %q for %q", kp.String(), name)
	}
	return kp
}

// TestEveryActionRemapped is the acceptance test of "every key through the
// KeyMap": a config file's [keys] table gives every action a new key; each
// action is then driven by its new key and does what it does, the old keys
// no longer do it, and the status bar, the panes' hints, the tabs and the ?
// overlay name the new keys.
func TestEveryActionRemapped(t *testing.T) {
	keys := remapKeys(t)
	var toml strings.Builder
	toml.WriteString("[keys]\n")
	names := make([]string, 0, len(keys))
	for n := range keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&toml, "%s = [%q]\n", n, keys[n])
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(toml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := config.Load(path) // the CLI's one reader of the file
	if err != nil {
		t.Fatal(err)
	}
	loaded := map[string][]string(file.Keys)

	_, tg := startPrimal(t)
	caps, err := capability.Parse([]byte(`{"primal":"beardog","version":"0.9.0","methods":["crypto.sign_ed25519","crypto.verify_ed25519","health.liveness"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tg.Probe.Capabilities = caps
	hist := NewMemHistory(0)
	cfg := goldenConfig("dark")
	cfg.Keys, cfg.History = loaded, hist
	books := &fakeBooks{}
	cfg.Books = books
	m, _ := testModel(t, cfg)
	if m.pc.status != "" {
		t.Fatalf("remapping every action: %s", m.pc.status)
	}
	m.update(winSize(240, 60))
	items := added(tg)
	items = append(items, sampleTargets()[1:]...) // the others, not a second beardog
	m.update(feedMsg{items: items})

	driven := map[string]bool{}
	do := func(action string) {
		t.Helper()
		k, ok := keys[action]
		if !ok {
			t.Fatalf("no action %q", action)
		}
		driven[action] = true
		run(t, m, m.update(keyPress(t, k)))
	}
	want := func(what string, ok bool) {
		t.Helper()
		if !ok {
			t.Fatalf("%s (focus %s, status %q)", what, tabName(m.pc.focus), m.pc.status)
		}
	}
	cur := func() string {
		if tgt := m.pc.target(); tgt != nil {
			return tgt.Name
		}
		return ""
	}
	typeText := func(s string) { keyMsgs(t, m, s) }

	// Focus keys.
	for i := len(m.panes) - 1; i >= 0; i-- { // every pane, ending on the targets
		p := paneID(i)
		m.setFocus(pTrace) // not a pane that types (the composer takes every key)
		do(paneRegistry()[p].action)
		want("focus key of "+tabName(p), m.pc.focus == p)
	}
	// The old keys no longer act.
	run(t, m, m.update(press("2")[0]))
	want("2 no longer focuses caps", m.pc.focus == pTargets)
	if cmd := m.update(press("q")[0]); cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("q still quits")
		}
	}

	// Moving in the targets pane (beardog, lostprimal, nestgate, rhizocrypt, songbird).
	want("beardog first", cur() == "beardog")
	do("down")
	want("down", cur() == "lostprimal")
	do("up")
	want("up", cur() == "beardog")
	do("page_down")
	want("page down", cur() == "songbird")
	do("page_up")
	want("page up", cur() == "beardog")
	do("bottom")
	want("bottom", cur() == "songbird")
	do("top")
	want("top", cur() == "beardog")
	do("group")
	want("group", m.tp().groupBy == 1 && m.pc.status == "grouped by source")
	do("group")
	do("group")
	want("group back to none", m.tp().groupBy == 0)

	// The targets filter, and every text-field key in it.
	do("filter")
	want("filter", m.tp().filter.active)
	f := &m.tp().filter
	typeText("nest")
	do("accept")
	want("accept", !m.tp().filter.active && cur() == "nestgate" && len(m.tp().rows) == 1)
	do("filter")
	do("back")
	want("back clears the filter", !m.tp().filter.active && f.Empty() && len(m.tp().rows) == 5)
	do("filter")
	typeText("abc def")
	do("line_start")
	want("line start", f.pos == 0)
	do("delete_forward")
	want("delete forward", f.String() == "bc def")
	do("line_end")
	want("line end", f.pos == 6)
	do("delete_back")
	want("delete back", f.String() == "bc de")
	do("word_left")
	want("word left", f.pos == 3)
	do("delete_to_end")
	want("delete to end", f.String() == "bc ")
	typeText("xy")
	do("char_left")
	want("char left", f.pos == 4)
	do("delete_to_start")
	want("delete to start", f.String() == "y" && f.pos == 0)
	do("char_right")
	want("char right", f.pos == 1)
	typeText(" zz")
	do("delete_word")
	want("delete word", f.String() == "y ")
	do("line_start")
	do("word_right")
	want("word right", f.pos == 1)
	do("back")
	do("top")

	// The capability tree.
	do("select")
	want("select opens the target", m.pc.focus == pCaps && cur() == "beardog")
	want("a domain row first", len(m.cp().rows) > 0 && m.cp().rows[0].kind == rowDomain)
	do("unfold")
	want("unfold", m.cp().open["crypto"])
	do("fold")
	want("fold", !m.cp().open["crypto"])
	do("fold_all")
	want("fold all opens all", m.cp().open["crypto"] && m.cp().open["health"])
	do("fold_all")
	want("fold all closes all", !m.cp().open["crypto"])
	do("select")
	want("select unfolds a domain", m.cp().open["crypto"])
	do("down")
	do("select")
	want("select on a method composes it", m.pc.focus == pComposer && m.comp().method.String() == "crypto.sign_ed25519" && m.comp().field == fParams)

	// The composer.
	c := m.comp()
	do("prev_field")
	want("previous field", c.field == fMethod)
	do("next_field")
	want("next field", c.field == fParams)
	do("prev_field")
	do("delete_to_start")
	typeText("crypto.s")
	do("complete")
	want("complete", len(c.comps) == 1 && c.comps[0] == "crypto.sign_ed25519")
	do("accept")
	want("accept takes the completion", c.method.String() == "crypto.sign_ed25519" && c.field == fParams)
	do("delete_to_start")
	typeText(`{"m":[1,2]}`)
	want("params typed", c.params.String() == `{"m":[1,2]}` && c.paramsErr == "")
	editor := m.update(keyPress(t, keys["editor"]))
	driven["editor"] = true
	if editor == nil {
		t.Fatal("editor: no command")
	}
	if msg, ok := editor().(editorReadyMsg); !ok || msg.err != nil {
		t.Fatalf("editor: %#v", msg)
	} else {
		os.Remove(msg.path)
	}
	cancelled := false
	c.cancel = func() { cancelled = true }
	do("cancel")
	want("cancel", cancelled && m.pc.status == "cancelled")
	if cmd := m.update(press("enter")[0]); c.inflight || cmd != nil {
		t.Fatal("enter still sends")
	}
	do("send")
	want("send, the focus staying in the composer", m.resp().ans != nil && m.resp().ans.outcome == "ok" && m.pc.focus == pComposer)
	m.update(keyPress(t, keys["composer"]))
	do("back")
	want("back leaves the composer", m.pc.focus == pCaps)

	// The response viewer.
	do("response")
	r := m.resp()
	do("down")
	want("down in the answer", r.cur == 1)
	do("scroll_right")
	want("scroll right", r.xoff == 20)
	do("scroll_left")
	want("scroll left", r.xoff == 0)
	do("top")
	do("fold")
	want("fold the root", func() bool { _, ok := r.folds[r.current()].closeOf(0); return ok }())
	do("unfold")
	want("unfold the root", func() bool { _, ok := r.folds[r.current()].closeOf(0); return !ok }())
	do("fold_all")
	want("fold all", r.folds[r.current()] != nil && len(r.folds[r.current()].byOpen) > 0)
	do("fold_all")
	do("raw")
	want("raw", r.rawMode && r.env != nil)
	do("raw")
	do("search")
	want("search", r.search.active)
	typeText("e")
	do("accept")
	want("accept runs the search", !r.search.active && len(r.matches) > 1)
	do("next_match")
	want("next match", r.mi == 1)
	do("prev_match")
	want("previous match", r.mi == 0)
	do("copy")
	want("copy", strings.HasPrefix(m.pc.status, "copied answer"))
	do("copy_command")
	want("copy command", strings.HasPrefix(m.pc.status, "copied command"))
	do("jq")
	want("jq", r.jq.active)
	typeText(".signature")
	do("accept")
	want("accept leaves jq", !r.jq.active && r.jqDoc != nil)
	do("copy_filtered")
	want("copy filtered", strings.HasPrefix(m.pc.status, "copied filtered answer"))
	do("jq")
	do("back")
	want("back clears jq", r.jq.Empty() && r.jqDoc == nil)

	// The live panes.
	do("events")
	m.update(feedMsg{items: sampleEvents()})
	ev := m.events()
	do("pause")
	want("pause", ev.paused)
	do("pause")
	want("unpause", !ev.paused)
	do("kind")
	want("kind", ev.kind == EvHeartbeat)
	do("source")
	want("source", ev.source != "")
	do("select")
	want("select inspects", r.ans != nil && strings.HasPrefix(r.ans.title, "heartbeat"))
	do("clear")
	want("clear", ev.ring.Len() == 0)
	do("trace")
	m.update(feedMsg{items: sampleTrace()})
	do("clear")
	want("clear the trace", m.trace().ring.Len() == 0)

	// History.
	do("history")
	h := m.histp()
	want("history loads", len(h.entries) == 1)
	do("refresh")
	want("refresh", len(h.entries) == 1)
	do("export")
	want("export", strings.HasPrefix(m.pc.status, "copied command"))
	do("add_to_book")
	want("add to book", strings.Contains(m.pc.status, "added to /books/b.yaml as step crypto_sign") && len(books.added) == 1)
	do("composer")
	do("book_step")
	want("book step", strings.Contains(m.pc.status, "book step 1/1 (sign)") && m.comp().method.String() == "crypto.sign_ed25519")
	do("back") // out of the composer's fields: to the caps pane
	do("mock_faults")
	want("mock faults on a primal that is not a mock", strings.Contains(m.pc.status, "not a primalscope mock"))
	do("history")
	do("save")
	want("save asks a name", h.name.active)
	typeText("daily")
	do("accept")
	want("save", strings.Contains(m.pc.status, "saved call 1 as daily"))
	do("history")
	do("replay")
	want("replay", r.ans != nil && strings.HasPrefix(r.ans.title, "replay of 1"))

	// The composition map.
	do("map")
	mp := m.mapp()
	want("the map builds", mp.pic != nil && len(mp.pic.items) > 0)
	do("focus_node")
	want("focus node", mp.focus != "" && mp.hops == 1)
	do("more_hops")
	want("more hops", mp.hops == 2)
	do("fewer_hops")
	want("fewer hops", mp.hops == 1)
	do("back")
	want("back shows the whole map", mp.focus == "")

	// Server requests.
	req := tailLine(t0, "beardog", tg.ID, EvRequest, "client.confirm", nil, json.RawMessage(`7`))
	req.reply = func(context.Context, json.RawMessage, *ipc.RPCError) error { return nil } // the connection it came on
	m.update(feedMsg{items: []any{req}})
	do("requests")
	do("reply")
	want("reply", m.pc.focus == pComposer && c.reply != nil)
	do("back")
	want("back leaves reply mode", c.reply == nil && m.pc.focus == pComposer)

	// Everywhere.
	do("back") // out of the composer, which takes every key
	do("targets")
	do("next_pane")
	want("next pane", m.pc.focus == pCaps)
	do("prev_pane")
	want("previous pane", m.pc.focus == pTargets)
	do("zoom")
	want("zoom", m.zoom)
	do("zoom")
	do("theme")
	want("theme", strings.HasPrefix(m.pc.status, "theme "))

	// What the screen says: the status bar, the panes' notes, the tabs.
	for i := range m.panes {
		p := paneID(i)
		m.setFocus(p)
		bar := ansi.Strip(m.statusBar())
		for _, b := range m.panes[p].KeyMap().ShortHelp() {
			if k := keys[actionOf(t, m, b.Help().Desc)]; !strings.Contains(bar, k+" "+b.Help().Desc) {
				t.Errorf("%s: the status bar does not say %q: %s", tabName(p), k+" "+b.Help().Desc, bar)
			}
		}
	}
	m.setFocus(pComposer)
	scr := ansi.Strip(m.render())
	for _, s := range []string{keys["send"] + " send · " + keys["editor"] + " edit · " + keys["cancel"] + " cancel"} {
		if !strings.Contains(scr, s) {
			t.Errorf("the screen does not say %q:\n%s", s, scr)
		}
	}
	m.setFocus(pHistory)
	if s := keys["select"] + " load · " + keys["replay"] + " replay"; !strings.Contains(ansi.Strip(m.render()), s) {
		t.Errorf("the history pane does not say %q", s)
	}
	m.update(winSize(100, 30))
	for _, tb := range m.tabs() {
		if !strings.HasPrefix(tb.label, keys[paneRegistry()[tb.p].action]+" ") {
			t.Errorf("tab %q does not start with its new key", tb.label)
		}
	}
	m.update(winSize(240, 60))

	// The ? overlay lists every action with its new key.
	do("help")
	want("help", m.overlay.shown)
	help := ansi.Strip(m.render())
	kb := m.pc.keys.bindings()
	for _, n := range names {
		re := regexp.MustCompile(regexp.QuoteMeta(keys[n]) + ` +` + regexp.QuoteMeta(kb[n].Help().Desc))
		if !re.MatchString(help) {
			t.Errorf("the help does not list %s as %q", n, keys[n])
		}
	}
	run(t, m, m.update(press("x")[0]))
	want("any key closes the help", !m.overlay.shown)

	// The status line's message, whole.
	m.pc.setErr("a message too long for the status line")
	do("message")
	want("message", m.msgBox.shown)
	run(t, m, m.update(press("x")[0]))
	want("any key closes the message", !m.msgBox.shown)

	// Quitting, last: quit, and force_quit even while typing.
	m.setFocus(pTargets)
	driven["quit"] = true
	if cmd := m.update(keyPress(t, keys["quit"])); cmd == nil {
		t.Fatal("quit: no command")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("quit does not quit")
	}
	m.setFocus(pComposer)
	driven["force_quit"] = true
	if cmd := m.update(keyPress(t, keys["force_quit"])); cmd == nil {
		t.Fatal("force_quit: no command")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("force_quit does not quit while typing")
	}
	if cmd := m.update(press("q")[0]); cmd != nil {
		if _, ok := cmd().(tea.QuitMsg); ok {
			t.Fatal("q quits while typing in the composer")
		}
	}

	for _, n := range names {
		if !driven[n] {
			t.Errorf("action %s was not driven by its new key", n)
		}
	}
}

// actionOf finds the action whose binding has desc (the status bar's words).
func actionOf(t *testing.T, m *model, desc string) string {
	t.Helper()
	for n, b := range m.pc.keys.bindings() {
		if b.Help().Desc == desc {
			return n
		}
	}
	switch desc {
	case "inspect":
		return "select"
	case "whole map":
		return "back"
	}
	t.Fatalf("no action described %q", desc)
	return ""
}

// TestResponseKeysBeforeAnyAnswer: the response pane's keys before the
// first answer do nothing (Y used to dereference the missing answer and
// crash the TUI).
func TestResponseKeysBeforeAnyAnswer(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.setFocus(pResponse)
	for _, k := range []string{"Y", "y", "c", "r", "n", "N", "Z", "h", "l", "enter", "G", ">"} {
		if cmd := m.update(press(k)[0]); cmd != nil {
			t.Errorf("%s before any answer gave a command (%T)", k, cmd())
		}
		if m.pc.statusErr || strings.HasPrefix(m.pc.status, "copied") {
			t.Errorf("%s before any answer: status %q", k, m.pc.status)
		}
	}
	if s := ansi.Strip(m.render()); !strings.Contains(s, "No answer yet.") {
		t.Fatalf("the pane should still wait for an answer:\n%s", s)
	}
}

// fakeBooks stands in for the CLI's runbook file: it keeps what it is given.
type fakeBooks struct{ added []history.Entry }

func (f *fakeBooks) Steps(context.Context) (string, []BookStep, error) {
	return "/books/b.yaml", []BookStep{{Name: "sign", Target: "beardog", Method: "crypto.sign_ed25519", Params: `{"message":"aGk="}`}}, nil
}

func (f *fakeBooks) Add(_ context.Context, e history.Entry) (string, string, []string, error) {
	f.added = append(f.added, e)
	return "/books/b.yaml", "crypto_sign", nil, nil
}
