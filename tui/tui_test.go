package tui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// run executes cmd (and the commands of a batch) with a bound, feeding
// every message back into m. Commands that wait on the live feed are left
// to end with the test's context.
func run(t *testing.T, m *model, cmd tea.Cmd) {
	t.Helper()
	if cmd == nil {
		return
	}
	ch := make(chan tea.Msg, 1)
	go func() { ch <- cmd() }()
	select {
	case msg := <-ch:
		switch x := msg.(type) {
		case nil:
		case tea.BatchMsg:
			for _, c := range x {
				run(t, m, c)
			}
		default:
			run(t, m, m.update(msg))
		}
	case <-time.After(5 * time.Second):
		// no command of a model with manualFeed waits this long; a loaded
		// machine may take a while to dial and answer
		t.Log("a command did not finish within 5 s")
	}
}

// drainFeed applies what the live feed holds, waiting up to d for the
// first item.
func drainFeed(t *testing.T, m *model, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for m.feed.waiting() == 0 {
		select {
		case <-m.feed.wake:
		case <-deadline:
			return
		}
	}
	run(t, m, m.update(feedTaken(m.feed)))
}

func keyMsgs(t *testing.T, m *model, keys ...string) {
	t.Helper()
	for _, k := range press(keys...) {
		run(t, m, m.update(k))
	}
}

func startPrimal(t *testing.T) (*ipctest.Server, *discovery.Target) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &ipctest.Primal{Name: "beardog", Version: "0.9.0", Domain: "crypto", Format: ipctest.FormatStandard,
		Groups: []ipctest.Group{{Type: "crypto", Methods: []string{"sign_ed25519", "verify_ed25519"}}},
		Handlers: map[string]ipctest.HandlerFunc{
			"crypto.sign_ed25519": func(ctx context.Context, params json.RawMessage) (any, error) {
				return map[string]any{"signature": "3J9xQw==", "echo": json.RawMessage(params)}, nil
			},
		}}
	path := filepath.Join(dir, "beardog.sock")
	s, err := ipctest.StartPrimal(path, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tg := discovered("unix://"+path, "beardog", "unix://"+path, discovery.StateLive)
	tg.Probe.Wire = "jsonrpc"
	return s, tg
}

func testModel(t *testing.T, cfg Config) (*model, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	m := newModel(ctx, cfg)
	m.manualFeed = true
	t.Cleanup(func() {
		cancel()
		m.listen.close()
		m.pc.client.close()
	})
	m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
	return m, cancel
}

// TestCallRoundTrip composes and sends a call to a fake primal, reads the
// answer, records it in history and prefills the next call of the method.
func TestCallRoundTrip(t *testing.T) {
	_, tg := startPrimal(t)
	hist := NewMemHistory(0)
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: added(tg)})
	if m.pc.current != tg.ID {
		t.Fatalf("current target %q, want %q", m.pc.current, tg.ID)
	}
	run(t, m, m.cp().pickMethod("crypto.sign_ed25519"))
	keyMsgs(t, m, "backspace", "backspace")
	keyMsgs(t, m, `{"message":"aGk="}`)
	if m.comp().paramsErr != "" {
		t.Fatalf("params error %q", m.comp().paramsErr)
	}
	run(t, m, m.update(press("enter")[0]))
	if m.resp().ans == nil || m.resp().ans.outcome != "ok" {
		t.Fatalf("no ok answer: %+v", m.resp().ans)
	}
	screen := ansi.Strip(m.render())
	for _, want := range []string{`"signature": "3J9xQw=="`, "Response · crypto.sign_ed25519 · ok", `"message": "aGk="`} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	es, _ := hist.Search(context.Background(), "sign", 10)
	if len(es) != 1 || es[0].Outcome != history.OutcomeOK || string(es[0].Params) != `{"message":"aGk="}` {
		t.Fatalf("history: %+v", es)
	}
	// Picking the method again prefills its last params.
	run(t, m, m.cp().pickMethod("crypto.sign_ed25519"))
	if got := m.comp().params.String(); got != `{"message":"aGk="}` {
		t.Fatalf("prefilled params %q", got)
	}
	// The trace saw the frames both ways.
	drainFeed(t, m, 100*time.Millisecond)
	if m.trace().ring.Len() < 2 {
		t.Fatalf("trace has %d frames, want both ways", m.trace().ring.Len())
	}
}

// TestUnknownMethodShowsMeaning shows a peer error with its code's meaning.
func TestUnknownMethodShowsMeaning(t *testing.T) {
	_, tg := startPrimal(t)
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: added(tg)})
	m.setFocus(pComposer)
	m.comp().field = fMethod
	keyMsgs(t, m, "crypto.nope")
	m.comp().field = fParams
	run(t, m, m.update(press("enter")[0]))
	screen := ansi.Strip(m.render())
	if !strings.Contains(screen, "error -32601 (method not found)") {
		t.Fatalf("no error meaning on screen:\n%s", screen)
	}
}

// TestServerRequestAnswered receives a server-initiated request and answers
// it from the composer.
func TestServerRequestAnswered(t *testing.T) {
	s, tg := startPrimal(t)
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	m, _ := testModel(t, cfg)
	run(t, m, m.update(feedMsg{items: added(tg)}))
	// wait for the listening connection
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Conns()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(s.Conns()) == 0 {
		t.Fatal("the TUI did not connect to listen")
	}
	answer := make(chan *ipc.Message, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		msg, err := s.Conns()[0].Ask(ctx, "client.confirm", map[string]any{"question": "sign?"})
		if err != nil {
			t.Error(err)
		}
		answer <- msg
	}()
	deadline = time.Now().Add(10 * time.Second)
	for m.reqs().pending() == 0 && time.Now().Before(deadline) {
		drainFeed(t, m, 100*time.Millisecond)
	}
	if m.reqs().pending() != 1 {
		t.Fatal("the request did not reach the requests pane")
	}
	keyMsgs(t, m, "R", "a")
	if m.pc.focus != pComposer || m.comp().reply == nil {
		t.Fatal("answering did not open the composer in reply mode")
	}
	keyMsgs(t, m, "backspace", "backspace", `{"ok":true}`)
	run(t, m, m.update(press("enter")[0]))
	select {
	case msg := <-answer:
		if msg == nil || string(msg.Result) != `{"ok":true}` {
			t.Fatalf("server got %+v", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server got no answer")
	}
	if m.reqs().pending() != 0 {
		t.Fatal("the request is still marked waiting")
	}
}

func TestParamsFaultPosition(t *testing.T) {
	c := newComposer(pComposer, testPC())
	for _, tc := range []struct {
		in   string
		at   int
		fail bool
	}{
		{`{}`, -1, false},
		{``, -1, false},
		{`{"a":1,}`, 7, true},
		{`{"a":`, 5, true},
		{`{"é":x}`, 5, true},
		{`"str"`, -1, true},
	} {
		c.params.Set(tc.in)
		c.checkParams()
		if (c.paramsErr != "") != tc.fail || c.paramsErrAt != tc.at {
			t.Errorf("%q: err %q at %d, want fail=%v at %d", tc.in, c.paramsErr, c.paramsErrAt, tc.fail, tc.at)
		}
	}
}

func TestResponseFoldAndScroll(t *testing.T) {
	var r responseView
	d := prettyDoc([]byte(`{"a":{"b":[1,2,3],"c":{"d":true}},"e":[{"f":null}],"g":"h"}`))
	r.ans = &answer{}
	r.pretty = d
	r.lastH = 5
	// cursor on "a": { → fold it, next visible line is "e"
	r.move(1)
	if !strings.Contains(d.line(r.cur), `"a"`) {
		t.Fatalf("cursor on %q", d.line(r.cur))
	}
	foldNow(&r, r.toggleFold(true))
	r.move(1)
	if !strings.Contains(d.line(r.cur), `"e"`) {
		t.Fatalf("after folding, next line is %q", d.line(r.cur))
	}
	r.move(-1)
	if !strings.Contains(d.line(r.cur), `"a"`) {
		t.Fatalf("moving back lands on %q, want the folded opener", d.line(r.cur))
	}
	r.end()
	if d.line(r.cur) != "}" {
		t.Fatalf("end is %q", d.line(r.cur))
	}
	cur, off := r.cur, r.off
	r.cur, r.off = 0, 0
	r.ScrollX(4)
	if rows := r.rows(newStyles(mustTheme(t, "dark")), 60, 3, false); ansi.Strip(rows[1]) != `  ": { … 8 lines },` {
		t.Fatalf("scrolled sideways: %q", ansi.Strip(rows[1]))
	}
	r.ScrollX(-10)
	if r.xoff != 0 {
		t.Fatalf("scrolled left past the start: %d", r.xoff)
	}
	r.cur, r.off = cur, off
	foldNow(&r, r.foldAll()) // unfolds "a"
	foldNow(&r, r.foldAll()) // folds every child of the root
	st := newStyles(mustTheme(t, "dark"))
	rows := r.rows(st, 60, 10, true)
	txt := ansi.Strip(strings.Join(rows, "\n"))
	if !strings.Contains(txt, "… 8 lines") || strings.Contains(txt, `"b"`) {
		t.Fatalf("fold all:\n%s", txt)
	}
}

func TestJQ(t *testing.T) {
	v, err := parseForJQ([]byte(`{"a":[1,2,3],"big":12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := jqRun(context.Background(), ".a | map(. * 2)", v)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.ReplaceAll(d.String(), "\n", ""); got != "[  2,  4,  6]" {
		t.Fatalf("jq output %q", got)
	}
	if _, err := jqRun(context.Background(), ".a[", v); err == nil {
		t.Fatal("a bad filter did not fail")
	}
	if _, err := jqRun(context.Background(), "def f: f; f", v); err == nil {
		t.Fatal("an endless filter did not stop")
	}
}

func TestKeysRemap(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	os.WriteFile(path, []byte("[discovery]\nfamily=\"x\"\n[keys]\nquit = [\"x\", \"ctrl+q\"]\nhelp = \"f1\"\ntrace = []\n"), 0o600)
	file, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string][]string(file.Keys)
	km := DefaultKeyMap()
	if err := km.Remap(keys); err != nil {
		t.Fatal(err)
	}
	if got := km.Quit.Keys(); len(got) != 2 || got[0] != "x" {
		t.Fatalf("quit keys %v", got)
	}
	if km.focusKey(pTrace).Enabled() {
		t.Fatal("an empty key list did not disable trace")
	}
	if err := km.Remap(map[string][]string{"nope": {"z"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown action: %v", err)
	}
	all := map[string][]string{}
	for _, a := range ActionNames() {
		all[a] = []string{"f12"}
	}
	km2 := DefaultKeyMap()
	if err := km2.Remap(all); err != nil || len(all) < 40 {
		t.Fatalf("every action name: %v (%d names)", err, len(all))
	}
	// The help overlay shows the remapped key.
	cfg := goldenConfig("dark")
	cfg.Keys = keys
	m, _ := testModel(t, cfg)
	m.overlay.shown = true
	if s := ansi.Strip(m.render()); !strings.Contains(s, "x/ctrl+q") {
		t.Fatalf("help does not show the remapped quit:\n%s", s)
	}
}

// TestPeerTextEscaped: control sequences in names and payloads are shown
// escaped, never sent to the terminal.
func TestPeerTextEscaped(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	evil := "evil\x1b[2J\x1b]52;c;aGk=\x07"
	m.update(feedMsg{items: []any{
		discovery.Event{Kind: discovery.Added, Target: &discovery.Target{ID: "k", Name: evil, Aliases: []string{"\x9b31m"}, Probe: &discovery.Probe{State: discovery.StateLive}}},
		tailLine(t0, evil, "", EvNotification, evil, []byte("\x1b[31mred"), nil),
		TraceFrame{Time: t0, Source: evil, Dir: ipc.In, Data: []byte("\x1b]0;title\x07")},
	}})
	for _, p := range []paneID{pTargets, pEvents, pTrace} {
		m.setFocus(p)
		out := m.render()
		for _, bad := range []string{"\x1b[2J", "\x1b]52", "\x1b]0;", "\x9b", "\x07", "\x1b[31mred"} {
			if strings.Contains(out, bad) {
				t.Fatalf("pane %d: raw %q reached the screen", p, bad)
			}
		}
		if !strings.Contains(ansi.Strip(out), `evil\x1b[2J`) {
			t.Fatalf("pane %d: the escaped name is not shown", p)
		}
	}
}

func TestEventsRingBounded(t *testing.T) {
	p := newEventsPane(pEvents, testPC(), 10)
	for i := 0; i < 25; i++ {
		p.Append(tailLine(t0, "s", "", EvHeartbeat, "hb", nil, nil))
	}
	if p.ring.Len() != 10 || p.ring.dropped != 15 {
		t.Fatalf("len %d dropped %d", p.ring.Len(), p.ring.dropped)
	}
	st := newStyles(mustTheme(t, "dark"))
	_, right := p.titles(st)
	if !strings.Contains(ansi.Strip(right), "last 10 of 25") || strings.Contains(ansi.Strip(right), "lost") {
		t.Fatalf("title %q does not say the window (and nothing was lost)", ansi.Strip(right))
	}
	p.paused = true
	p.Append(tailLine(t0, "s", "", EvEvent, "late", nil, nil))
	if rows := p.rows(st, 60, 5); strings.Contains(ansi.Strip(strings.Join(rows, "")), "late") {
		t.Fatal("a paused tail scrolled")
	}
	p.kind = EvEvent
	p.back, p.paused = 0, false
	rows := p.rows(st, 60, 5)
	if len(rows) != 1 || !strings.Contains(ansi.Strip(rows[0]), "late") {
		t.Fatalf("kind filter: %q", rows)
	}
}

// TestCallCommand: the copied command calls the target's endpoint with its
// family, and says that the family seed must be set (never copied).
func TestCallCommand(t *testing.T) {
	tg := locked(discovered("b1", "beardog", "/run/b/beardog-fam1.sock", discovery.StateLive))
	tg.Family = "fam1"
	req := ipc.Request{Method: "crypto.sign_ed25519", Params: []byte(` { "message" : "it's" } `), SessionID: "S1"}
	got, err := history.CommandFor(recordFor(tg, req, time.Time{}, nil, nil))
	want := `primalscope call --family fam1 --session S1 /run/b/beardog-fam1.sock crypto.sign_ed25519 '{"message":"it'\''s"}'`
	if err != nil || got.Line != want || len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "FAMILY_SEED") {
		t.Fatalf("got  %s %q\nwant %s", got.Line, got.Notes, want)
	}
}

// TestCrashRestores: a panic in Update writes a report and quits cleanly.
func TestCrashRestores(t *testing.T) {
	cfg := goldenConfig("dark")
	cfg.CrashDir = t.TempDir()
	m, _ := testModel(t, cfg)
	m.pc.targets = nil // the next target event panics
	_, cmd := m.Update(feedMsg{items: sampleTargets()})
	if cmd == nil {
		t.Fatal("no quit after a panic")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("the command after a panic is not quit")
	}
	b, err := os.ReadFile(m.crashed)
	if err != nil || !strings.Contains(string(b), "panic:") || !strings.Contains(string(b), "absorb") {
		t.Fatalf("crash report %q: %v\n%s", m.crashed, err, b)
	}
	// A panic inside a command becomes a crash message too.
	msg := m.pc.safe(func() tea.Msg { panic("boom") })()
	if cm, ok := msg.(crashMsg); !ok || cm.path == "" {
		t.Fatalf("command panic gave %#v", msg)
	}
}

// TestMouse: a click focuses a pane and selects a row; the wheel scrolls.
func TestMouse(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: sampleTargets()})
	r := m.rects[pTargets]
	m.update(tea.MouseClickMsg{X: r.x + 3, Y: r.y + 1 + 2, Button: tea.MouseLeft})
	if m.pc.focus != pTargets || m.tp().rows[m.tp().sel].key != m.pc.current || m.pc.target().Name != "nestgate" {
		t.Fatalf("click selected %q", m.pc.target().Name)
	}
	a := answerOf(0, named("x"), ipc.Request{Method: "m"}, t0, &ipc.Response{Result: genAnswer(20000)}, nil)
	m.update(answerMsg(a))
	rr := m.rects[pResponse]
	m.render()
	m.update(tea.MouseWheelMsg{X: rr.x + 5, Y: rr.y + 3, Button: tea.MouseWheelDown})
	if m.resp().off != 3 {
		t.Fatalf("wheel scrolled to %d, want 3", m.resp().off)
	}
}

// TestTabClick: on a narrow screen the header's tabs switch panes.
func TestTabClick(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(winSize(80, 24))
	header := ansi.Strip(m.render())
	for _, tb := range m.tabs() {
		if got := strings.Split(header, "\n")[0]; !strings.Contains(got[tb.x0:], tb.label) || strings.Index(got, tb.label) != tb.x0 {
			t.Fatalf("tab %q is not at column %d of %q", tb.label, tb.x0, got)
		}
		m.update(tea.MouseClickMsg{X: tb.x0 + 1, Y: 0, Button: tea.MouseLeft})
		if m.pc.focus != tb.p {
			t.Fatalf("clicking %q focused pane %d", tb.label, m.pc.focus)
		}
	}
}

// TestResize: every pane layout is exactly the terminal's size.
func TestResize(t *testing.T) {
	m, _ := testModel(t, goldenConfig("high-contrast"))
	m.update(feedMsg{items: append(sampleTargets(), sampleEvents()...)})
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {120, 40}, {200, 60}, {40, 12}, {20, 8}} {
		m.update(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		for _, p := range []paneID{pTargets, pCaps, pComposer, pResponse, pEvents, pTrace, pHistory, pRequests} {
			m.setFocus(p)
			checkScreen(t, m.render(), sz[0], sz[1])
			m.zoom = true
			m.layout()
			checkScreen(t, m.render(), sz[0], sz[1])
			m.zoom = false
			m.layout()
		}
	}
}

func TestTargetsFuzzyRanking(t *testing.T) {
	p := newTargetsPane(pTargets, testPC())
	for _, n := range []string{"neural-api", "nestgate", "beardog", "songbird"} {
		p.pc.targets[n] = newTarget(&discovery.Target{ID: n, Name: n}, nil)
	}
	p.filter.Set("nest")
	p.rebuild()
	if len(p.rows) != 1 || p.rows[0].key != "nestgate" || p.selectedKey() != "nestgate" {
		t.Fatalf("rows %+v, selected %q", p.rows, p.selectedKey())
	}
	p.filter.Set("bdg")
	p.rebuild()
	if len(p.rows) != 1 || p.rows[0].key != "beardog" {
		t.Fatalf("subsequence match: %+v", p.rows)
	}
	p.filter.Set("")
	p.groupBy = 2
	p.rebuild()
	if p.rows[0].header != "no family" || len(p.rows) != 5 {
		t.Fatalf("grouping: %+v", p.rows)
	}
}

// TestCancelInFlight: ^x cancels a call waiting for a slow peer.
func TestCancelInFlight(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slow.sock")
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
	tg := discovered("unix://"+path, "slow", "unix://"+path, discovery.StateLive)
	m.update(feedMsg{items: added(tg)})
	m.setFocus(pComposer)
	m.comp().method.Set("slow.wait")
	cmd := m.update(press("enter")[0])
	if !m.comp().inflight || cmd == nil {
		t.Fatal("the call is not in flight")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	m.update(press("ctrl+x")[0])
	select {
	case msg := <-done:
		m.update(msg)
	case <-time.After(5 * time.Second):
		t.Fatal("cancel did not end the call")
	}
	if m.comp().inflight || m.resp().ans == nil || m.resp().ans.outcome != "cancelled" {
		t.Fatalf("after cancel: inflight %v answer %+v", m.comp().inflight, m.resp().ans)
	}
}

// TestHistoryReplayDiff loads a past call, replays it and shows the diff.
func TestHistoryReplayDiff(t *testing.T) {
	_, tg := startPrimal(t)
	hist := NewMemHistory(0)
	hist.Record(history.Entry{Time: t0, Target: "beardog", Endpoint: tg.Address, Method: "crypto.sign_ed25519",
		Params: json.RawMessage(`{"message":"x"}`), Outcome: history.OutcomeOK, Result: json.RawMessage(`{"signature":"OLD","echo":{"message":"x"}}`)})
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: added(tg)})
	keyMsgs(t, m, "H")
	if len(m.histp().entries) != 1 {
		t.Fatalf("history pane has %d entries", len(m.histp().entries))
	}
	keyMsgs(t, m, "r")
	screen := ansi.Strip(m.render())
	if !strings.Contains(screen, "replay of 1") || !strings.Contains(screen, `"OLD"`) || !strings.Contains(screen, `"3J9xQw=="`) {
		t.Fatalf("no replay diff on screen:\n%s", screen)
	}
	// Saving names it: the cursor stayed on the call replayed.
	keyMsgs(t, m, "H", "s", "daily-sign", "enter")
	if !strings.Contains(m.pc.status, "saved call 1 as daily-sign") || hist.names["daily-sign"] != 1 {
		t.Fatalf("save: status %q, names %v", m.pc.status, hist.names)
	}
	// Loading the call puts it in the composer.
	keyMsgs(t, m, "H", "enter")
	if m.pc.focus != pComposer || m.comp().method.String() != "crypto.sign_ed25519" || m.comp().params.String() != `{"message":"x"}` {
		t.Fatalf("load: focus %d method %q params %q", m.pc.focus, m.comp().method.String(), m.comp().params.String())
	}
}

type oneTarget struct{ t *discovery.Target }

func (o oneTarget) Watch(ctx context.Context, out chan<- discovery.Event) error {
	select {
	case out <- discovery.Event{Kind: discovery.Added, Target: o.t}:
	case <-ctx.Done():
	}
	<-ctx.Done()
	return nil
}
func (oneTarget) Dirs() []string { return nil }

// TestRunCrashReport: a panic in a command ends Run with a CrashError that
// names the report, after the program has shut down normally.
func TestRunCrashReport(t *testing.T) {
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	cfg.CrashDir = t.TempDir()
	cfg.Input = strings.NewReader("")
	cfg.Output = io.Discard
	cfg.Discoverer = oneTarget{discovered("k", "boom", "unix:///nonexistent", discovery.StateLive)}
	cfg.Dial = func(context.Context, *discovery.Target, ipc.Options) (*ipc.Conn, error) { panic("dialer bug") }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Run(ctx, cfg)
	var ce *CrashError
	if !errors.As(err, &ce) {
		t.Fatalf("Run returned %v, want a CrashError", err)
	}
	b, rerr := os.ReadFile(ce.Report)
	if rerr != nil || !strings.Contains(string(b), "dialer bug") {
		t.Fatalf("report %s: %v\n%s", ce.Report, rerr, b)
	}
}

// TestInspectEvent opens the newest event's payload in the response viewer.
func TestInspectEvent(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: append(sampleTargets(), sampleEvents()...)})
	keyMsgs(t, m, "e", "K", "enter") // heartbeats only, the newest
	screen := ansi.Strip(m.render())
	if !strings.Contains(screen, "Response · heartbeat health.heartbeat · songbird") || !strings.Contains(screen, `"seq": 28`) {
		t.Fatalf("inspected event not shown:\n%s", screen)
	}
	keyMsgs(t, m, "t", "enter") // no frames: nothing happens
}

// TestClientCloseWithDialInFlight: a connection that finishes dialling after
// close is closed at once, and close does not wait for it.
func TestClientCloseWithDialInFlight(t *testing.T) {
	_, tg := startPrimal(t)
	release := make(chan struct{})
	dial := func(ctx context.Context, t *discovery.Target, o ipc.Options) (*ipc.Conn, error) {
		<-release
		return defaultDialer(ctx, t, o)
	}
	c := newClient(context.Background(), dial, newFeed(16, time.Millisecond), 0, ipc.Security{})
	errc := make(chan error, 1)
	go func() { _, err := c.conn(context.Background(), tg); errc <- err }()
	c.close()
	close(release)
	if err := <-errc; err == nil {
		t.Fatal("a connection was kept after close")
	}
	c.close() // no pump goroutine is left to wait for
}

// TestDescribedBTSPTargetKept: capabilities the TUI fetched itself through a
// BTSP handshake survive discovery's later updates of the target.
func TestDescribedBTSPTargetKept(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	tg := locked(discovered("k", "beardog", "", discovery.StateLocked))
	m.update(feedMsg{items: added(tg)})
	caps := sampleTarget(0).Probe
	m.update(describedMsg{key: "k", desc: &discovery.Description{Capabilities: caps.Capabilities, Tree: caps.Capabilities.Tree(), Identity: caps.Identity}})
	again := locked(discovered("k", "beardog", "", discovery.StateLocked))
	again.Probe.Latency = time.Millisecond
	m.update(feedMsg{items: []any{changed(again)}})
	if got := m.pc.targets["k"]; got.caps() == nil || len(got.capTree()) == 0 || got.Latency() != time.Millisecond {
		t.Fatalf("after a change: caps %v tree %d latency %v", got.caps() != nil, len(got.capTree()), got.Latency())
	}
}

// TestHistoryReplayRefusals: a call recorded over BTSP is not replayed to a
// target that would take it in cleartext (an impostor at the name), and a
// call whose params were stored "[redacted]" is not replayed with the
// placeholder; neither reaches the peer.
func TestHistoryReplayRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		entry func(addr string) history.Entry
		want  string
	}{
		{"btsp call, cleartext target", func(addr string) history.Entry {
			return history.Entry{Time: t0, Target: "beardog", Endpoint: addr, Transport: "unix+btsp(chacha20-poly1305)",
				Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"message":"x"}`), Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)}
		}, "not replayed in cleartext"},
		{"redacted params", func(addr string) history.Entry {
			return history.Entry{Time: t0, Target: "beardog", Endpoint: addr, Transport: "unix",
				Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"password":"[redacted]"}`), Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)}
		}, "cannot be replayed as it was"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, tg := startPrimal(t)
			hist := NewMemHistory(0)
			hist.Record(c.entry(tg.Address))
			cfg := goldenConfig("dark")
			cfg.History = hist
			var dials atomic.Int32
			cfg.Dial = func(context.Context, *discovery.Target, ipc.Options) (*ipc.Conn, error) {
				dials.Add(1)
				return nil, errors.New("no dial expected")
			}
			m, _ := testModel(t, cfg)
			m.update(feedMsg{items: added(tg)})
			keyMsgs(t, m, "H", "r")
			if !strings.Contains(m.pc.status, c.want) {
				t.Fatalf("status %q, want %q", m.pc.status, c.want)
			}
			if m.histp().replaying != 0 || dials.Load() != 0 {
				t.Fatalf("a replay went out (replaying %d, dials %d)", m.histp().replaying, dials.Load())
			}
		})
	}
}

// TestCallRecordsItsTransport: a call the TUI makes is recorded with what
// its connection needed (here the riboCipher prefix a peer demands), as
// the CLI records it, so a replay or a copied command makes the same call.
func TestCallRecordsItsTransport(t *testing.T) {
	dir, err := os.MkdirTemp("", "pst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &ipctest.Primal{Name: "rhizocrypt", Version: "1.0", Domain: "dag", Format: ipctest.FormatStandard,
		Groups: []ipctest.Group{{Type: "dag", Methods: []string{"put"}}}}
	cfg := p.Config()
	cfg.Accept = ipctest.RiboCipher(ipctest.PrefixRequired, "rhizocrypt", nil)
	path := filepath.Join(dir, "rhizocrypt.sock")
	s, err := ipctest.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	tg := discovered("unix://"+path, "rhizocrypt", "unix://"+path, discovery.StateLive)
	tg.Probe.Wire = "jsonrpc"
	hist := NewMemHistory(0)
	mc := goldenConfig("dark")
	mc.History = hist
	mc.Security = ipc.Security{Prefix: ipc.PrefixAuto}
	m, _ := testModel(t, mc)
	m.update(feedMsg{items: added(tg)})
	run(t, m, m.cp().pickMethod("health.liveness"))
	run(t, m, m.update(press("enter")[0]))
	if m.resp().ans == nil || m.resp().ans.outcome != "ok" {
		t.Fatalf("no ok answer: %+v", m.resp().ans)
	}
	es, _ := hist.Search(context.Background(), "", 10)
	if len(es) != 1 || !es[0].Prefix || !strings.Contains(es[0].Transport, "ribocipher") {
		t.Fatalf("recorded %+v, want the prefix and its transport", es)
	}
	c, err := history.CommandFor(es[0])
	if err != nil || !strings.Contains(c.Line, "--prefix on") {
		t.Fatalf("copied command %q (%v) lacks --prefix on", c.Line, err)
	}
}

// TestReplayOnceAtATime: a second replay key while a replay is in flight
// sends nothing (a key press is not a second call).
func TestReplayOnceAtATime(t *testing.T) {
	_, tg := startPrimal(t)
	hist := NewMemHistory(0)
	hist.Record(history.Entry{Time: t0, Target: "beardog", Endpoint: tg.Address, Method: "crypto.sign_ed25519",
		Params: json.RawMessage(`{"message":"x"}`), Outcome: history.OutcomeOK, Result: json.RawMessage(`{}`)})
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: added(tg)})
	keyMsgs(t, m, "H")
	first := m.update(press("r")[0])
	if first == nil || m.histp().replaying == 0 {
		t.Fatal("the first replay did not start")
	}
	if second := m.update(press("r")[0]); second != nil {
		t.Fatal("a second replay started while the first was in flight")
	}
	if !strings.Contains(m.pc.status, "a replay is in flight") {
		t.Fatalf("status %q", m.pc.status)
	}
}

// TestRequestAnsweredOnce: the answer to a peer's request goes out once,
// on the connection it came on; a second answer (a key pressed again while
// the first was on its way) sends nothing.
func TestRequestAnsweredOnce(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	c := ipc.NewConn(ipc.NewLineFramer(a, a, a, 1<<20), ipc.Options{})
	defer c.Close()
	got := make(chan string, 4)
	go func() {
		r := bufio.NewReader(b)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- l
		}
	}()
	_, reply := requestOn(c, json.RawMessage(`7`))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := reply(ctx, json.RawMessage(`{"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}
	if err := reply(ctx, json.RawMessage(`{"ok":true}`), nil); !errors.Is(err, errCannotAnswer) {
		t.Fatalf("a second answer: %v", err)
	}
	select {
	case l := <-got:
		if !strings.Contains(l, `"id":7`) {
			t.Fatalf("the answer %q", l)
		}
	case <-ctx.Done():
		t.Fatal("no answer reached the peer")
	}
	select {
	case l := <-got:
		t.Fatalf("a second answer reached the peer: %q", l)
	case <-time.After(100 * time.Millisecond):
	}
}
