package tui

import (
	"context"
	"runtime/debug"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/themes"
)

// model is the root model: it owns the layout, the focus and the zoom, the
// live feed and listening, and routes every message to the panes (see
// pane). It never does I/O in Update: that happens in commands.
type model struct {
	pc      *programContext
	specs   []paneSpec
	panes   []pane
	overlay *helpPane
	msgBox  *messagePane // the status line's message, whole
	bar     help.Model   // the status bar's key list
	feed    *feed
	listen  *listener
	theme   string
	fixed   bool // theme chosen by the user, not from the background

	w, h  int
	side  paneID // the side pane that shows (the last one focused)
	zoom  bool
	rects map[paneID]rect

	// described marks BTSP targets the TUI asked to describe itself.
	described map[string]bool
	// judging marks BTSP targets whose judgement (judge) is under way.
	judging map[string]bool
	// lineBuf and frameBuf carry a frame's lines and trace frames to the
	// panes (see liveMsg).
	lineBuf  []line
	frameBuf []TraceFrame
	// lastLines is how many events the last absorb handed the panes.
	lastLines int
	rate      rateMeter

	// quitting is set while the user is asked to confirm a quit that
	// would lose something (see quitGuard).
	quitting bool

	crashed string
	quit    func()
	// manualFeed: no command reads the feed; the caller does (tests).
	manualFeed bool
	// busy says the last feedMsg brought at least busyLines events: the
	// next one gathers for busyFrame (see feedCmd).
	busy bool
}

// busyLines is how many events (notifications, requests, the TUI's own
// notes) in one feedMsg make the stream busy: 50 in a frame is 1,500 a
// second; staying busy takes 50 in busyFrame, 500 a second.
const busyLines = 50

// busyFrame is how long the feed gathers while the stream is busy. Every
// message bubbletea hands the model is followed by a whole View and a
// flush of the renderer (which parses the whole frame again), so a flood
// handed over each frame cost 30 Views a second; at busyFrame it costs 5
// (at 100 ms, 10 of them were a third of the TUI's CPU under bench/flood).
// At thousands of events a second a View shows a pane's worth of the
// latest of a thousand or more new lines: no one reads them as they
// pass, and what is shown, counted and dropped is the same; the tail
// moves five times a second, the rate and counters with it. Keys do not
// come through the feed: they are never held back (key-to-screen is
// unchanged). Discovery's targets do, by at most this.
const busyFrame = 200 * time.Millisecond

type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

func newModel(ctx context.Context, cfg Config) *model {
	cfg.fill()
	specs := paneRegistry()
	keys := defaultKeyMap(specs)
	pc := &programContext{ctx: ctx, cfg: &cfg, keys: &keys, now: cfg.Now, hist: cfg.History, targets: map[string]*target{}, focus: pTargets}
	if pc.now == nil {
		pc.now = time.Now
	}
	m := &model{
		pc:        pc,
		specs:     specs,
		bar:       help.New(),
		feed:      newFeed(65536, time.Second/time.Duration(cfg.FPS)),
		side:      pEvents,
		described: map[string]bool{},
		judging:   map[string]bool{},
	}
	pc.do = m.update
	pc.ticks = func() bool { return !m.manualFeed }
	pc.visible = func(p paneID) bool { _, ok := m.rects[p]; return ok }
	pc.client = newClient(ctx, cfg.Dial, m.feed, cfg.MaxFrame, cfg.Security)
	pc.client.useDialer(cfg.Dialer)
	m.listen = newListener(pc, m.feed)
	if cfg.Keys != nil {
		if err := keys.Remap(cfg.Keys); err != nil {
			pc.setErr(err.Error())
		}
	}
	th := themes.Dark()
	m.theme = themes.DarkName
	if cfg.Theme != "" {
		t, err := lookupTheme(cfg.Catalog, cfg.Theme)
		if err != nil {
			pc.setErr(err.Error())
		} else {
			th, m.theme, m.fixed = t, cfg.Theme, true
		}
	}
	m.setTheme(th)
	for i, s := range specs {
		m.panes = append(m.panes, s.make(paneID(i), pc))
	}
	m.overlay = newHelpPane(pc)
	m.msgBox = newMessagePane(pc)
	return m
}

func lookupTheme(c *themes.Catalog, name string) (themes.Theme, error) {
	if c != nil {
		return c.Lookup(name)
	}
	return themes.Lookup(name)
}

func (m *model) setTheme(t themes.Theme) {
	st := newStyles(t)
	m.pc.st = st
	m.bar.Styles = help.Styles{
		ShortKey: st.HelpKey, ShortDesc: st.HelpDesc, ShortSeparator: st.HelpSep,
		FullKey: st.HelpKey, FullDesc: st.HelpDesc, FullSeparator: st.HelpSep, Ellipsis: st.HelpSep,
	}
}

// initer is a pane with work to start with the program.
type initer interface{ Init() tea.Cmd }

// Init starts reading the live feed, starts the panes, and asks for the
// terminal background.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.nextFeed()}
	for _, p := range m.panes {
		if i, ok := p.(initer); ok {
			cmds = append(cmds, i.Init())
		}
	}
	if !m.fixed {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// nextFeed is the one outstanding command reading the live feed (tests
// that drive the model by hand read the feed themselves).
func (m *model) nextFeed() tea.Cmd {
	if m.manualFeed {
		return nil
	}
	return m.pc.safe(m.feedCmd())
}

// feedCmd reads the live feed's next batch: one frame's worth, or
// busyFrame's while the stream is busy.
func (m *model) feedCmd() tea.Cmd {
	if m.busy {
		return m.feed.nextIn(m.pc.ctx, max(busyFrame, m.feed.frame))
	}
	return m.feed.next(m.pc.ctx)
}

// Update handles one message. A panic is written to a crash report and
// quits (the terminal is restored by the program).
func (m *model) Update(msg tea.Msg) (_ tea.Model, cmd tea.Cmd) {
	defer func() {
		if r := recover(); r != nil {
			m.crashed = writeCrash(m.pc.cfg.CrashDir, r, debug.Stack())
			cmd = tea.Quit
		}
	}()
	return m, m.update(msg)
}

// update routes msg: the root's own messages and the intents panes ask
// for, keys and the mouse to the pane they are for, the rest to every pane.
func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.w, m.h = msg.Width, msg.Height
		m.layout()
		return nil
	case tea.BackgroundColorMsg:
		if !m.fixed {
			t := themes.Default(msg.IsDark())
			m.theme = t.Name
			m.setTheme(t)
		}
		return nil
	case feedMsg:
		cmd := m.absorbBatch(msg)
		m.busy = m.lastLines >= busyLines
		if msg.fromFeed {
			m.feed.giveBack(msg)
		}
		return tea.Batch(m.listenPass(), cmd, m.nextFeed())
	case describedMsg:
		return m.onDescribed(msg)
	case judgedMsg:
		return m.onJudged(msg)
	case statusMsg:
		if msg.err {
			m.pc.setErr(msg.text)
		} else {
			m.pc.setInfo(msg.text)
		}
		return nil
	case crashMsg:
		m.crashed = msg.path
		return tea.Quit
	case focusMsg:
		return m.setFocus(msg.id)
	case cycleMsg:
		return m.cycleFocus(msg.delta)
	case selectMsg:
		cmd := m.selectTarget(msg.key)
		if msg.listen {
			return tea.Batch(m.listenPass(), cmd)
		}
		return cmd
	case tea.KeyPressMsg, tea.PasteMsg:
		return m.onKey(msg)
	case tea.MouseClickMsg:
		return m.onClick(msg.Mouse())
	case tea.MouseWheelMsg:
		return m.onWheel(msg.Mouse())
	}
	return m.broadcast(msg)
}

// send hands msg to one pane.
func (m *model) send(id paneID, msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	m.panes[id], cmd = m.panes[id].Update(msg)
	return cmd
}

// broadcast hands msg to every pane.
func (m *model) broadcast(msg tea.Msg) tea.Cmd {
	var cmds []tea.Cmd
	for i := range m.panes {
		if cmd := m.send(paneID(i), msg); cmd != nil {
			cmds = append(cmds, cmd)
		}
	}
	return tea.Batch(cmds...)
}

// cycleMsg asks the root to move the focus by delta panes.
type cycleMsg struct{ delta int }

// setFocus gives pane p the keyboard (a side pane also takes the side's
// place) and tells it so.
func (m *model) setFocus(p paneID) tea.Cmd {
	if p < 0 || int(p) >= len(m.panes) {
		return nil
	}
	var settled tea.Cmd
	if m.pc.focus == pTargets && p != pTargets {
		// A cursor still settling in the targets pane: its target is
		// the one the user goes on with.
		if s, ok := m.panes[pTargets].(interface{ settleNow() string }); ok {
			if k := s.settleNow(); k != "" {
				settled = m.selectTarget(k)
			}
		}
	}
	m.pc.focus = p
	if p > pResponse {
		m.side = p
	}
	m.layout()
	return tea.Batch(settled, m.send(p, focusedMsg{}))
}

// tabOrder is the panes focus cycles through: the four fixed ones and the
// side pane showing.
func (m *model) tabOrder() []paneID { return []paneID{pTargets, pCaps, pComposer, pResponse, m.side} }

func (m *model) cycleFocus(d int) tea.Cmd {
	order := m.tabOrder()
	i := 0
	for j, p := range order {
		if p == m.pc.focus {
			i = j
		}
	}
	return m.setFocus(order[(i+d+len(order))%len(order)])
}

// typing reports whether the focused pane holds the keyboard for a field.
func (m *model) typing() bool {
	t, ok := m.panes[m.pc.focus].(typist)
	return ok && t.Typing()
}

// onKey routes a key: ForceQuit always quits; the help overlay takes any
// key; a pane typing in a field gets every key; otherwise the global keys
// come first and the focused pane gets the rest.
func (m *model) onKey(msg tea.Msg) tea.Cmd {
	kp, isKey := msg.(tea.KeyPressMsg)
	k := m.pc.keys
	if isKey && key.Matches(kp, k.ForceQuit) {
		return tea.Quit
	}
	if m.overlay.shown {
		_, cmd := m.overlay.Update(msg)
		return cmd
	}
	if m.msgBox.shown {
		_, cmd := m.msgBox.Update(msg)
		return cmd
	}
	if m.quitting {
		return m.confirmQuit(msg)
	}
	if isKey && !m.pc.statusErr {
		m.pc.status = "" // an info message lasts until the next key; errors stay
	}
	if !m.typing() {
		if !isKey {
			return nil // a paste outside a field
		}
		if cmd, ok := m.globalKey(kp); ok {
			return cmd
		}
	}
	return m.send(m.pc.focus, msg)
}

// globalKey handles the keys that work in every pane; ok is false for the
// others.
func (m *model) globalKey(kp tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	k := m.pc.keys
	switch {
	case key.Matches(kp, k.Quit):
		return m.askQuit(), true
	case key.Matches(kp, k.Help):
		m.overlay.shown = true
		return nil, true
	case key.Matches(kp, k.NextPane):
		return m.cycleFocus(1), true
	case key.Matches(kp, k.PrevPane):
		return m.cycleFocus(-1), true
	case key.Matches(kp, k.Zoom):
		m.zoom = !m.zoom
		m.layout()
		return nil, true
	case key.Matches(kp, k.Message):
		if !m.msgBox.open() {
			m.pc.setInfo("no message to show")
		}
		return nil, true
	}
	for i, p := range k.Panes {
		if key.Matches(kp, p.Binding) {
			return m.setFocus(paneID(i)), true
		}
	}
	switch {
	case key.Matches(kp, k.Theme):
		return m.nextTheme(), true
	case key.Matches(kp, k.Cancel):
		return m.broadcast(cancelMsg{}), true
	}
	return nil, false
}

// quitGuard is a pane holding something a quit would lose (a call in
// flight, edits not sent): unsaved says what, "" when nothing.
type quitGuard interface{ unsaved() string }

// askQuit quits, unless a pane holds something a quit would lose: then it
// asks first (Quit again quits, any other key stays). ForceQuit never asks.
func (m *model) askQuit() tea.Cmd {
	var why []string
	for _, p := range m.panes {
		if g, ok := p.(quitGuard); ok {
			if s := g.unsaved(); s != "" {
				why = append(why, s)
			}
		}
	}
	if len(why) == 0 {
		return tea.Quit
	}
	k := m.pc.keys
	m.quitting = true
	m.pc.setErr(strings.Join(why, "; ") + ": " + joinHints(", ", hint(k.Quit, "quits anyway"), hint(k.Back, "stays")) + " (any other key stays)")
	return nil
}

// confirmQuit answers the question askQuit asked: Quit quits; any other
// key (or a paste) stays and is not used for anything else.
func (m *model) confirmQuit(msg tea.Msg) tea.Cmd {
	m.quitting = false
	if kp, ok := msg.(tea.KeyPressMsg); ok && key.Matches(kp, m.pc.keys.Quit) {
		return tea.Quit
	}
	m.pc.setInfo("not quitting")
	return nil
}

func (m *model) nextTheme() tea.Cmd {
	names := themes.Names()
	if m.pc.cfg.Catalog != nil {
		names = m.pc.cfg.Catalog.Names()
	}
	i := 0
	for j, n := range names {
		if n == m.theme {
			i = j + 1
		}
	}
	name := names[i%len(names)]
	t, err := lookupTheme(m.pc.cfg.Catalog, name)
	if err != nil {
		m.pc.setErr(err.Error())
		return nil
	}
	m.theme, m.fixed = name, true
	m.setTheme(t)
	m.pc.setInfo("theme " + name)
	return nil
}

// ---- mouse ----

func (m *model) paneAt(x, y int) (paneID, rect, bool) {
	for p, r := range m.rects {
		if r.contains(x, y) {
			return p, r, true
		}
	}
	return 0, rect{}, false
}

// onClick focuses the pane clicked (or the tab, on narrow screens) and
// hands it a left click inside its border.
func (m *model) onClick(ms tea.Mouse) tea.Cmd {
	if m.quitting { // a click answers "stay" too
		m.quitting = false
		m.pc.setInfo("not quitting")
	}
	if m.overlay.shown {
		_, cmd := m.overlay.Update(clickMsg{})
		return cmd
	}
	if m.msgBox.shown {
		_, cmd := m.msgBox.Update(clickMsg{})
		return cmd
	}
	if ms.Y == m.h-1 && ms.Button == tea.MouseLeft {
		m.msgBox.open() // the status line opens its message whole
		return nil
	}
	if ms.Y == 0 && m.pc.narrow() && !m.zoom {
		var cmd tea.Cmd
		for _, tb := range m.tabs() {
			if ms.X >= tb.x0 && ms.X < tb.x1 {
				cmd = m.setFocus(tb.p)
			}
		}
		return cmd
	}
	p, r, ok := m.paneAt(ms.X, ms.Y)
	if !ok {
		return nil
	}
	var cmd tea.Cmd
	if p != m.pc.focus {
		cmd = m.setFocus(p)
	}
	row := ms.Y - r.y - 1
	if ms.Button != tea.MouseLeft || row < 0 {
		return cmd
	}
	return tea.Batch(cmd, m.send(p, clickMsg{x: ms.X - r.x - 1, y: row, button: ms.Button}))
}

// onWheel scrolls the pane under the pointer.
func (m *model) onWheel(ms tea.Mouse) tea.Cmd {
	d := 0
	switch ms.Button {
	case tea.MouseWheelUp:
		d = -3
	case tea.MouseWheelDown:
		d = 3
	}
	if d == 0 {
		return nil
	}
	if m.msgBox.shown {
		_, cmd := m.msgBox.Update(wheelMsg{delta: d})
		return cmd
	}
	p, _, ok := m.paneAt(ms.X, ms.Y)
	if !ok {
		return nil
	}
	return m.send(p, wheelMsg{delta: d})
}
