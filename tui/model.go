package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

type pane int

const (
	pTargets pane = iota
	pCaps
	pComposer
	pResponse
	pEvents
	pTrace
	pHistory
	pRequests
)

var tabNames = [...]string{"targets", "caps", "call", "resp", "events", "trace", "history", "requests"}

type rect struct{ x, y, w, h int }

func (r rect) contains(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// Messages the model receives from its commands.
type (
	callDoneMsg struct {
		ans *answer
		doc *doc
		// partial: doc is a preview of a large answer; the full document
		// follows in a fullDocMsg.
		partial bool
	}
	fullDocMsg struct {
		ans *answer
		doc *doc
	}
	envDoneMsg struct {
		ans *answer
		doc *doc
	}
	jqTickMsg struct{ seq int }
	jqDoneMsg struct {
		seq     int
		doc     *doc
		err     error
		input   any
		inputOf *answer
	}
	searchDoneMsg struct {
		d       *doc
		q       string
		matches []int
	}
	prefillMsg struct {
		method string
		params json.RawMessage
	}
	historyMsg struct {
		entries []CallRecord
		err     error
	}
	editorReadyMsg struct {
		path string
		err  error
	}
	editorDoneMsg struct {
		path string
		err  error
	}
	editorTextMsg struct {
		text string
		err  error
	}
	replyDoneMsg struct {
		idx int
		err error
	}
	statusMsg struct {
		text string
		err  bool
	}
	crashMsg     struct{ path string }
	describedMsg struct {
		key  string
		desc *discovery.Description
		err  error
		// session is what protected the connection, when BTSP was involved.
		session *ipc.SessionSecurity
	}
	listenFailedMsg struct {
		key, name string
		err       error
	}
)

// model is the one root model; the panes are plain structs beside it.
type model struct {
	ctx    context.Context
	cfg    Config
	feed   *feed
	client *client
	hist   History
	keys   KeyMap
	help   help.Model
	st     *styles
	theme  string
	fixed  bool // theme chosen by the user, not from the background
	now    func() time.Time

	w, h     int
	focus    pane
	side     pane
	zoom     bool
	showHelp bool
	rects    map[pane]rect

	targets targetsPane
	caps    capsPane
	comp    composer
	resp    responseView
	events  eventsPane
	trace   tracePane
	reqs    requestsPane
	histp   historyPane

	current string // key of the target the caps tree and composer use
	// listening marks targets whose pushes the events tail receives.
	listening map[string]bool
	// relistenAt and backoff pace listening again to a target whose
	// connection closed.
	relistenAt map[string]time.Time
	backoff    map[string]time.Duration
	// notListened counts the live targets left out by Config.MaxListen;
	// extraListen is the current target when it is listened to past that
	// bound (one at most: it is let go when another becomes current).
	notListened int
	extraListen string
	// listenNoted marks targets whose failure to be listened to was said.
	listenNoted map[string]bool
	// listenDirty says something that decides listening changed (targets,
	// the current one, a freed place); relistenNext is the earliest time a
	// target waiting out its backoff may be listened to again. Without
	// either, a frame skips the listening pass.
	listenDirty  bool
	relistenNext time.Time
	// described marks BTSP targets the TUI asked to describe itself.
	described map[string]bool
	cancel    context.CancelFunc

	status    string
	statusErr bool

	rateSec          int64
	rateCur, ratePrv int

	crashed string
	quit    func()
	// manualFeed: no command reads the feed; the caller does (tests).
	manualFeed bool
}

func newModel(ctx context.Context, cfg Config) *model {
	cfg.fill()
	m := &model{
		ctx:         ctx,
		cfg:         cfg,
		feed:        newFeed(65536, time.Second/time.Duration(cfg.FPS)),
		listening:   map[string]bool{},
		listenDirty: true,
		listenNoted: map[string]bool{},
		described:   map[string]bool{},
		relistenAt:  map[string]time.Time{},
		backoff:     map[string]time.Duration{},
		hist:        cfg.History,
		keys:        DefaultKeyMap(),
		help:        help.New(),
		now:         cfg.Now,
		focus:       pTargets,
		side:        pEvents,
		targets:     newTargetsPane(),
		caps:        newCapsPane(),
		comp:        newComposer(),
		events:      newEventsPane(cfg.EventBuffer),
		trace:       newTracePane(cfg.TraceBuffer),
	}
	if m.now == nil {
		m.now = time.Now
	}
	m.caps.canBTSP = cfg.CanBTSP
	m.client = newClient(ctx, cfg.Dial, m.feed, cfg.MaxFrame, cfg.Security)
	m.client.useDialer(cfg.Dialer)
	if cfg.Keys != nil {
		if err := m.keys.Remap(cfg.Keys); err != nil {
			m.setErr(err.Error())
		}
	}
	th := themes.Dark()
	m.theme = themes.DarkName
	if cfg.Theme != "" {
		t, err := lookupTheme(cfg.Catalog, cfg.Theme)
		if err != nil {
			m.setErr(err.Error())
		} else {
			th, m.theme, m.fixed = t, cfg.Theme, true
		}
	}
	m.setTheme(th)
	return m
}

func lookupTheme(c *themes.Catalog, name string) (themes.Theme, error) {
	if c != nil {
		return c.Lookup(name)
	}
	return themes.Lookup(name)
}

func (m *model) setTheme(t themes.Theme) {
	m.st = newStyles(t)
	m.resp.hl = nil
	m.help.Styles = help.Styles{
		ShortKey: m.st.HelpKey, ShortDesc: m.st.HelpDesc, ShortSeparator: m.st.HelpSep,
		FullKey: m.st.HelpKey, FullDesc: m.st.HelpDesc, FullSeparator: m.st.HelpSep, Ellipsis: m.st.HelpSep,
	}
}

func (m *model) setErr(s string)  { m.status, m.statusErr = s, true }
func (m *model) setInfo(s string) { m.status, m.statusErr = s, false }

// target returns the current target, or nil.
func (m *model) target() *Target { return m.targets.targets[m.current] }

// Init starts reading the live feed and asks for the terminal background.
func (m *model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.nextFeed(), m.loadHistory("")}
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
	return m.safe(m.feed.next(m.ctx))
}

// safe turns a panic in a command into a crash report.
func (m *model) safe(c tea.Cmd) tea.Cmd {
	if c == nil {
		return nil
	}
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				msg = crashMsg{path: writeCrash(m.cfg.CrashDir, r, debug.Stack())}
			}
		}()
		return c()
	}
}

// writeCrash writes a crash report and returns where it went.
func writeCrash(dir string, r any, stack []byte) string {
	if dir == "" {
		dir = os.TempDir()
	}
	_ = os.MkdirAll(dir, 0o700)
	f, err := os.CreateTemp(dir, "primalscope-crash-*.txt")
	if err != nil {
		return "(could not write a report: " + err.Error() + ")"
	}
	defer f.Close()
	fmt.Fprintf(f, "primalscope crashed at %s\npanic: %v\n\n%s", time.Now().Format(time.RFC3339), r, stack)
	return f.Name()
}

// Update handles one message. It never does I/O: that happens in commands.
func (m *model) Update(msg tea.Msg) (_ tea.Model, cmd tea.Cmd) {
	defer func() {
		if r := recover(); r != nil {
			m.crashed = writeCrash(m.cfg.CrashDir, r, debug.Stack())
			cmd = tea.Quit
		}
	}()
	return m, m.update(msg)
}

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
		cmd := m.absorb(msg.items)
		return tea.Batch(append(m.listen(), cmd, m.nextFeed())...)
	case callDoneMsg:
		return m.onCallDone(msg)
	case fullDocMsg:
		if msg.ans == m.resp.ans {
			m.resp.pretty, m.resp.partial = msg.doc, false
			m.resp.follow()
		}
		return nil
	case envDoneMsg:
		if msg.ans == m.resp.ans {
			m.resp.env = msg.doc
			m.resp.pending = false
		}
		return nil
	case jqTickMsg:
		if msg.seq == m.resp.jqSeq {
			return m.runJQ()
		}
		return nil
	case jqDoneMsg:
		if msg.seq != m.resp.jqSeq {
			return nil
		}
		m.resp.jqRunning = false
		if msg.input != nil {
			m.resp.jqInput, m.resp.jqInputOf = msg.input, msg.inputOf
		}
		if msg.err != nil {
			m.resp.jqErr = msg.err.Error()
			return nil
		}
		m.resp.jqErr = ""
		m.resp.jqDoc = msg.doc
		m.resp.resetView()
		return nil
	case searchDoneMsg:
		m.resp.matchDoc, m.resp.matches, m.resp.mi, m.resp.matchQ = msg.d, msg.matches, 0, msg.q
		if len(msg.matches) == 0 {
			m.setErr("no match")
			return nil
		}
		for i, l := range msg.matches {
			if l >= m.resp.cur {
				m.resp.mi = i
				break
			}
		}
		m.resp.jump(msg.matches[m.resp.mi])
		return nil
	case prefillMsg:
		if msg.method == m.comp.method.String() && msg.params != nil {
			m.comp.params.Set(string(msg.params))
			m.comp.checkParams()
		}
		return nil
	case historyMsg:
		m.histp.loaded = true
		if msg.err != nil {
			m.histp.err = msg.err.Error()
			return nil
		}
		m.histp.err = ""
		m.histp.entries = msg.entries
		m.histp.sel = min(m.histp.sel, len(msg.entries)-1)
		if m.histp.sel < 0 {
			m.histp.sel = 0
		}
		return nil
	case editorReadyMsg:
		if msg.err != nil {
			m.setErr("editor: " + msg.err.Error())
			return nil
		}
		ed := m.cfg.Getenv("VISUAL")
		if ed == "" {
			ed = m.cfg.Getenv("EDITOR")
		}
		if ed == "" {
			ed = "vi"
		}
		argv, err := ipc.SplitCommand(ed)
		if err != nil || len(argv) == 0 {
			m.setErr("editor: cannot read $EDITOR")
			return nil
		}
		c := exec.Command(argv[0], append(argv[1:], msg.path)...)
		path := msg.path
		return tea.ExecProcess(c, func(err error) tea.Msg { return editorDoneMsg{path: path, err: err} })
	case editorDoneMsg:
		path, eerr := msg.path, msg.err
		return m.safe(func() tea.Msg {
			defer os.Remove(path)
			if eerr != nil {
				return editorTextMsg{err: eerr}
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return editorTextMsg{err: err}
			}
			var c bytes.Buffer
			if json.Compact(&c, b) == nil {
				return editorTextMsg{text: c.String()}
			}
			return editorTextMsg{text: strings.Join(strings.Fields(string(b)), " ")}
		})
	case editorTextMsg:
		if msg.err != nil {
			m.setErr("editor: " + msg.err.Error())
			return nil
		}
		m.comp.params.Set(msg.text)
		m.comp.checkParams()
		return nil
	case replyDoneMsg:
		if msg.err != nil {
			m.setErr("reply: " + msg.err.Error())
			return nil
		}
		if msg.idx >= 0 && msg.idx < len(m.reqs.reqs) {
			m.reqs.reqs[msg.idx].Answered = true
		}
		m.setInfo("answered")
		return nil
	case statusMsg:
		m.status, m.statusErr = msg.text, msg.err
		return nil
	case describedMsg:
		t := m.targets.targets[msg.key]
		if t == nil {
			return nil
		}
		nt := *t
		if msg.err != nil {
			nt.Err = msg.err.Error()
		}
		if msg.session != nil {
			nt.Session = msg.session
		}
		if d := msg.desc; d != nil {
			if d.Identity != nil {
				nt.Identity = d.Identity
			}
			if d.Capabilities != nil {
				nt.Caps, nt.Tree = d.Capabilities, d.Tree
				nt.Err = ""
			}
		}
		m.targets.targets[msg.key] = &nt
		m.rebuildCaps()
		m.comp.complete(m.target())
		return nil
	case listenFailedMsg:
		if !m.listenNoted[msg.key] { // said once
			m.listenNoted[msg.key] = true
			m.events.Append(Event{Time: m.now(), Source: msg.name, TargetKey: msg.key, Kind: EvNote, Name: "cannot listen", Data: []byte(msg.err.Error() + " (trying again later)")})
		}
		m.listenEnded(msg.key)
		return nil
	case crashMsg:
		m.crashed = msg.path
		return tea.Quit
	case tea.PasteMsg:
		return m.onKey(msg)
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case tea.MouseClickMsg:
		return m.onClick(msg.Mouse())
	case tea.MouseWheelMsg:
		return m.onWheel(msg.Mouse())
	}
	return nil
}

// absorb applies a frame's worth of live items.
func (m *model) absorb(items []any) tea.Cmd {
	changed := false
	// Targets that came and went in this frame: one note each, or one note
	// for a burst (a registry of thousands would push every real event out
	// of the tail).
	var appeared, left []string
	var drops []tea.Cmd
	for _, it := range items {
		switch x := it.(type) {
		case TargetEvent:
			changed = true
			switch x.Kind {
			case TargetRemoved:
				k := x.Target.Key
				if _, had := m.targets.targets[k]; had {
					left = append(left, x.Target.Name)
				}
				delete(m.targets.targets, k)
				// Stop listening to it: its place goes to a listed target.
				if m.listening[k] {
					delete(m.listening, k)
					drops = append(drops, m.dropListener(k))
				}
				if m.extraListen == k {
					m.extraListen = ""
				}
				delete(m.relistenAt, k)
				delete(m.backoff, k)
				delete(m.listenNoted, k)
			default:
				t := x.Target
				if x.Kind == TargetAdded {
					if _, had := m.targets.targets[t.Key]; !had {
						appeared = append(appeared, t.Name)
					}
				}
				if old := m.targets.targets[t.Key]; old != nil && t.Caps == nil && old.Caps != nil && t.BTSP {
					// keep what the TUI learnt itself through the handshake
					t.Caps, t.Tree, t.Identity = old.Caps, old.Tree, old.Identity
					if t.Session == nil {
						t.Session = old.Session
					}
				}
				m.targets.targets[t.Key] = &t
			}
		case Event:
			if x.Kind == EvNote && x.Name == "connection closed" {
				m.listenEnded(x.TargetKey)
			}
			m.countRate()
			m.events.Append(x)
			if x.Kind == EvRequest {
				m.reqs.Append(x)
			}
		case TraceFrame:
			m.trace.Append(x)
		}
	}
	m.noteTargets(appeared, "target appeared", "targets appeared")
	m.noteTargets(left, "target left", "targets left")
	m.events.dropped = m.feed.dropped.Load()
	if changed {
		m.listenDirty = true
		m.targets.rebuild()
		if m.current == "" || m.targets.targets[m.current] == nil {
			if k := m.targets.selectedKey(); k != "" {
				return tea.Batch(append(drops, m.selectTarget(k))...)
			}
		}
		m.rebuildCaps()
	}
	return tea.Batch(drops...)
}

// listenEnded frees key's listening place after its connection ended or
// could not be made, and has it listened to again later, backing off while
// it keeps failing.
func (m *model) listenEnded(key string) {
	delete(m.listening, key)
	if m.extraListen == key {
		m.extraListen = ""
	}
	m.listenDirty = true
	b := min(max(2*m.backoff[key], time.Second), 30*time.Second)
	m.backoff[key] = b
	m.relistenAt[key] = m.now().Add(b)
}

// dropListener closes the TUI's connection to key (it is no longer
// listened to), off the update loop: calls still in flight on it finish
// first, and closing a stdio peer can wait.
func (m *model) dropListener(key string) tea.Cmd {
	cl, grace := m.client, m.callTimeout()
	return m.safe(func() tea.Msg {
		cl.drop(key, grace)
		return nil
	})
}

// callTimeout bounds one call (Config.Timeout, 30 s when zero).
func (m *model) callTimeout() time.Duration {
	if m.cfg.Timeout > 0 {
		return m.cfg.Timeout
	}
	return 30 * time.Second
}

// maxTargetNotes is how many targets coming or going in one frame get a
// note each; more get one note together.
const maxTargetNotes = 20

// noteTargets writes what happened to names on the events tail: a note per
// target, or one for a burst naming the first few.
func (m *model) noteTargets(names []string, one, many string) {
	if len(names) <= maxTargetNotes {
		for _, n := range names {
			m.events.Append(Event{Time: m.now(), Source: n, Kind: EvNote, Name: one})
		}
		return
	}
	m.events.Append(Event{Time: m.now(), Source: "discovery", Kind: EvNote,
		Name: fmt.Sprintf("%d %s", len(names), many), Data: []byte(strings.Join(names[:3], ", ") + ", …")}) // escaped where drawn
}

func (m *model) countRate() {
	sec := m.now().Unix()
	if sec != m.rateSec {
		if sec == m.rateSec+1 {
			m.ratePrv = m.rateCur
		} else {
			m.ratePrv = 0
		}
		m.rateSec, m.rateCur = sec, 0
	}
	m.rateCur++
}

func (m *model) rate() int {
	sec := m.now().Unix()
	switch {
	case sec == m.rateSec:
		return max(m.ratePrv, m.rateCur)
	case sec == m.rateSec+1:
		return m.rateCur
	}
	return 0
}

// listen opens a connection to every live target not yet listened to, so
// that what it pushes (heartbeats, notifications, events, requests) reaches
// the events tail. Targets that demand BTSP or are never spoken to are left.
// At most Config.MaxListen are listened to at once: the current target
// first, then in the order the targets pane lists them; the events tail
// says when live targets are left out.
func (m *model) listen() []tea.Cmd {
	if m.cfg.NoListen {
		return nil
	}
	if !m.listenDirty && (m.relistenNext.IsZero() || m.now().Before(m.relistenNext)) {
		return nil
	}
	m.listenDirty, m.relistenNext = false, time.Time{}
	var cmds []tea.Cmd
	if m.extraListen != "" && m.extraListen != m.current {
		// The target listened to past the bound is no longer current: let
		// it go if the bound is still full (else it keeps its place).
		if len(m.listening) > m.cfg.MaxListen && m.listening[m.extraListen] {
			delete(m.listening, m.extraListen)
			cmds = append(cmds, m.dropListener(m.extraListen))
		}
		m.extraListen = ""
	}
	order := make([]string, 0, len(m.targets.targets)+1)
	if m.current != "" {
		order = append(order, m.current)
	}
	for _, r := range m.targets.rows {
		if r.key != "" && r.key != m.current {
			order = append(order, r.key)
		}
	}
	if len(order) < len(m.targets.targets) { // some are filtered out of the pane
		listed := make(map[string]bool, len(order))
		for _, k := range order {
			listed[k] = true
		}
		for k := range m.targets.targets {
			if !listed[k] {
				order = append(order, k)
			}
		}
	}
	left := 0
	for _, k := range order {
		t := m.targets.targets[k]
		if t == nil || m.listening[k] || t.Kind == "tarpc" || t.Endpoint == "" || (t.BTSP && !m.cfg.CanBTSP) {
			continue
		}
		if at, ok := m.relistenAt[k]; ok && m.now().Before(at) {
			if m.relistenNext.IsZero() || at.Before(m.relistenNext) {
				m.relistenNext = at
			}
			continue
		}
		holon := strings.HasPrefix(t.Endpoint, "ws://") || strings.HasPrefix(t.Endpoint, "wss://")
		if !(t.hasStream && t.stream.BiomeOSAPI) && t.Health != HealthLive && !holon {
			continue
		}
		if len(m.listening) >= m.cfg.MaxListen {
			if k != m.current {
				left++
				continue
			}
			if !(t.hasStream && t.stream.BiomeOSAPI) {
				// The current target is heard past the bound, until another
				// becomes current. (An event stream cannot be let go early;
				// there are a handful, one a family.)
				m.extraListen = k
			}
		}
		if t.hasStream && t.stream.BiomeOSAPI {
			// The biomeOS API speaks HTTP: read its event stream (the
			// client owns the goroutine; it ends with the program).
			m.listening[k] = true
			m.client.watchStream(m.ctx, *t, events.Config{}.Source(t.stream))
			continue
		}
		m.listening[k] = true
		tgt, cl := *t, m.client
		cmds = append(cmds, m.safe(func() tea.Msg {
			ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
			defer cancel()
			if _, err := cl.conn(ctx, tgt); err != nil {
				return listenFailedMsg{key: tgt.Key, name: tgt.Name, err: err}
			}
			return nil
		}))
	}
	if (left > 0) != (m.notListened > 0) {
		text := fmt.Sprintf("listening to %d targets; %d more live targets are not listened to (select one and press ⏎ to hear it)", len(m.listening), left)
		if left == 0 {
			text = fmt.Sprintf("listening to every live target (%d)", len(m.listening))
		}
		m.events.Append(Event{Time: m.now(), Source: "primalscope", Kind: EvNote, Name: "listening", Data: []byte(text)})
	}
	m.notListened = left
	return cmds
}

// providers names the targets that offer method (for consumed capabilities).
func (m *model) providers(method string) []string {
	var out []string
	for _, t := range m.targets.targets {
		if t.Caps == nil || t.Key == m.current {
			continue
		}
		for _, mm := range t.Caps.Methods {
			if mm == method || strings.HasPrefix(mm, method+".") {
				out = append(out, t.Name)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

func (m *model) rebuildCaps() {
	t := m.target()
	if m.caps.key != m.current {
		m.caps.key = m.current
		m.caps.sel, m.caps.off = 0, 0
	}
	m.caps.rebuild(t, m.providers)
}

// selectTarget makes key the current target.
func (m *model) selectTarget(key string) tea.Cmd {
	if key == "" || key == m.current {
		return nil
	}
	m.current = key
	m.listenDirty = true
	m.rebuildCaps()
	defer m.comp.complete(m.target())
	if t := m.target(); t != nil && t.Bus && t.Pool != "" {
		m.comp.pool.Set(t.Pool)
	}
	if t := m.target(); t != nil && t.BTSP && t.Tree == nil && m.cfg.CanBTSP && !m.described[key] {
		m.described[key] = true
		return m.describe(*t)
	}
	return nil
}

// describe asks a target for its identity and capabilities through the
// TUI's own connection (which can do the BTSP handshake discovery cannot).
func (m *model) describe(t Target) tea.Cmd {
	cl := m.client
	return m.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
		defer cancel()
		c, err := cl.conn(ctx, t)
		if err != nil {
			return describedMsg{key: t.Key, err: err}
		}
		d, err := discovery.Describe(ctx, c)
		msg := describedMsg{key: t.Key, desc: d, err: err}
		// Read after the answers: a refusal may have made it a BTSP session.
		if ss, ok := c.Session(); ok {
			msg.session = &ss
		}
		return msg
	})
}

// ---- keys ----

func (m *model) inputActive() bool {
	switch m.focus {
	case pTargets:
		return m.targets.filtering
	case pCaps:
		return m.caps.filtering
	case pComposer:
		return true
	case pResponse:
		return m.resp.jqEditing || m.resp.searching
	case pEvents:
		return m.events.filtering
	case pTrace:
		return m.trace.filtering
	case pHistory:
		return m.histp.searching || m.histp.naming
	}
	return false
}

func (m *model) setFocus(p pane) {
	m.focus = p
	if p >= pEvents {
		m.side = p
	}
	if p == pComposer {
		m.comp.complete(m.target())
	}
	m.layout()
}

func (m *model) cycleFocus(d int) {
	order := []pane{pTargets, pCaps, pComposer, pResponse, m.side}
	i := 0
	for j, p := range order {
		if p == m.focus {
			i = j
		}
	}
	m.setFocus(order[(i+d+len(order))%len(order)])
}

func (m *model) onKey(msg tea.Msg) tea.Cmd {
	kp, isKey := msg.(tea.KeyPressMsg)
	if isKey && kp.String() == "ctrl+c" {
		return tea.Quit
	}
	if m.showHelp {
		if isKey {
			m.showHelp = false
		}
		return nil
	}
	if isKey && !m.statusErr {
		m.status = "" // an info message lasts until the next key; errors stay
	}
	if m.inputActive() {
		return m.onInput(msg)
	}
	if !isKey {
		return nil
	}
	k := m.keys
	switch {
	case key.Matches(kp, k.Quit):
		return tea.Quit
	case key.Matches(kp, k.Help):
		m.showHelp = true
		return nil
	case key.Matches(kp, k.NextPane):
		m.cycleFocus(1)
		return nil
	case key.Matches(kp, k.PrevPane):
		m.cycleFocus(-1)
		return nil
	case key.Matches(kp, k.Zoom):
		m.zoom = !m.zoom
		m.layout()
		return nil
	case key.Matches(kp, k.Targets):
		m.setFocus(pTargets)
		return nil
	case key.Matches(kp, k.Caps):
		m.setFocus(pCaps)
		return nil
	case key.Matches(kp, k.Composer):
		m.setFocus(pComposer)
		return nil
	case key.Matches(kp, k.Response):
		m.setFocus(pResponse)
		return nil
	case key.Matches(kp, k.Events):
		m.setFocus(pEvents)
		return nil
	case key.Matches(kp, k.Trace):
		m.setFocus(pTrace)
		return nil
	case key.Matches(kp, k.History):
		m.setFocus(pHistory)
		return m.loadHistory(m.histp.search.String())
	case key.Matches(kp, k.Requests):
		m.setFocus(pRequests)
		return nil
	case key.Matches(kp, k.Theme):
		return m.nextTheme()
	case key.Matches(kp, k.Cancel):
		m.cancelCall()
		return nil
	}
	switch m.focus {
	case pTargets:
		return m.keyTargets(kp)
	case pCaps:
		return m.keyCaps(kp)
	case pResponse:
		return m.keyResponse(kp)
	case pEvents:
		return m.keyTail(kp, &m.events.tail, true)
	case pTrace:
		return m.keyTail(kp, &m.trace.tail, false)
	case pHistory:
		return m.keyHistory(kp)
	case pRequests:
		return m.keyRequests(kp)
	}
	return nil
}

func (m *model) nextTheme() tea.Cmd {
	names := themes.Names()
	if m.cfg.Catalog != nil {
		names = m.cfg.Catalog.Names()
	}
	i := 0
	for j, n := range names {
		if n == m.theme {
			i = j + 1
		}
	}
	name := names[i%len(names)]
	t, err := lookupTheme(m.cfg.Catalog, name)
	if err != nil {
		m.setErr(err.Error())
		return nil
	}
	m.theme, m.fixed = name, true
	m.setTheme(t)
	m.setInfo("theme " + name)
	return nil
}

func (m *model) cancelCall() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
		m.setInfo("cancelled")
	}
}

// onInput routes keys to the text field that has focus.
func (m *model) onInput(msg tea.Msg) tea.Cmd {
	kp, isKey := msg.(tea.KeyPressMsg)
	ks := ""
	if isKey {
		ks = kp.String()
	}
	switch m.focus {
	case pTargets:
		cmd := m.editFilter(msg, ks, &m.targets.filter, &m.targets.filtering, func() { m.targets.rebuild() })
		if ks == "enter" || ks == "tab" {
			// The filter is done: the target under the cursor becomes the
			// current one, as after a move (not on every keystroke, which
			// would describe targets the user is only typing past).
			return tea.Batch(cmd, m.selectTarget(m.targets.selectedKey()))
		}
		return cmd
	case pCaps:
		return m.editFilter(msg, ks, &m.caps.filter, &m.caps.filtering, func() { m.caps.sel = 0; m.rebuildCaps() })
	case pEvents:
		return m.editFilter(msg, ks, &m.events.filter, &m.events.filtering, func() { m.events.back = 0 })
	case pTrace:
		return m.editFilter(msg, ks, &m.trace.filter, &m.trace.filtering, func() { m.trace.back = 0 })
	case pComposer:
		return m.keyComposer(msg, ks)
	case pResponse:
		r := &m.resp
		if r.searching {
			switch ks {
			case "esc":
				r.searching = false
				return nil
			case "enter":
				r.searching = false
				return m.runSearch()
			}
			r.search.Update(msg)
			return nil
		}
		switch ks {
		case "esc":
			r.jqEditing = false
			r.jq.Set("")
			r.jqDoc, r.jqErr = nil, ""
			r.resetView()
			return nil
		case "enter", "tab":
			r.jqEditing = false
			return nil
		}
		if r.jq.Update(msg) {
			r.jqSeq++
			seq := r.jqSeq
			if r.jq.Empty() {
				r.jqDoc, r.jqErr = nil, ""
				r.resetView()
				return nil
			}
			return tea.Tick(120*time.Millisecond, func(time.Time) tea.Msg { return jqTickMsg{seq: seq} })
		}
		return nil
	case pHistory:
		h := &m.histp
		if h.naming {
			switch ks {
			case "esc":
				h.naming = false
			case "enter":
				h.naming = false
				if e := h.selected(); e != nil && m.hist != nil {
					id, name, hs := e.ID, h.name.String(), m.hist
					return m.safe(func() tea.Msg {
						if err := hs.Save(m.ctx, id, name); err != nil {
							return statusMsg{text: "save: " + err.Error(), err: true}
						}
						return statusMsg{text: fmt.Sprintf("saved call %d as %s: primalscope replay %s", id, name, name)}
					})
				}
			default:
				h.name.Update(msg)
			}
			return nil
		}
		switch ks {
		case "esc":
			h.searching = false
			return nil
		case "enter":
			h.searching = false
			return m.loadHistory(h.search.String())
		}
		h.search.Update(msg)
		return nil
	}
	return nil
}

func (m *model) editFilter(msg tea.Msg, ks string, f *lineEdit, on *bool, changed func()) tea.Cmd {
	switch ks {
	case "esc":
		*on = false
		f.Set("")
		changed()
		return nil
	case "enter", "tab":
		*on = false
		return nil
	}
	if f.Update(msg) {
		changed()
	}
	return nil
}

func (m *model) keyTargets(kp tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	p := &m.targets
	switch {
	case key.Matches(kp, k.Up):
		p.move(-1)
	case key.Matches(kp, k.Down):
		p.move(1)
	case key.Matches(kp, k.PageUp):
		p.move(-10)
	case key.Matches(kp, k.PageDown):
		p.move(10)
	case key.Matches(kp, k.Top):
		p.move(-len(p.rows))
	case key.Matches(kp, k.Bottom):
		p.move(len(p.rows))
	case key.Matches(kp, k.Select), key.Matches(kp, k.Unfold):
		cmd := m.selectTarget(p.selectedKey())
		m.setFocus(pCaps)
		return tea.Batch(append(m.listen(), cmd)...)
	case key.Matches(kp, k.Filter):
		p.filtering = true
		return nil
	case key.Matches(kp, k.Group):
		p.groupBy = (p.groupBy + 1) % len(groupNames)
		p.rebuild()
		if p.groupBy > 0 {
			m.setInfo("grouped by " + groupNames[p.groupBy])
		} else {
			m.setInfo("not grouped")
		}
		return nil
	default:
		return nil
	}
	return m.selectTarget(p.selectedKey())
}

func (m *model) keyCaps(kp tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	p := &m.caps
	t := m.target()
	if t == nil {
		if key.Matches(kp, k.Filter) {
			p.filtering = true
		}
		return nil
	}
	row := func() *capRow {
		if p.sel >= 0 && p.sel < len(p.rows) {
			return &p.rows[p.sel]
		}
		return nil
	}
	switch {
	case key.Matches(kp, k.Up):
		p.move(-1)
	case key.Matches(kp, k.Down):
		p.move(1)
	case key.Matches(kp, k.PageUp):
		p.move(-10)
	case key.Matches(kp, k.PageDown):
		p.move(10)
	case key.Matches(kp, k.Top):
		p.move(-len(p.rows))
	case key.Matches(kp, k.Bottom):
		p.move(len(p.rows))
	case key.Matches(kp, k.Filter):
		p.filtering = true
	case key.Matches(kp, k.FoldAll):
		anyOpen := false
		for _, v := range p.open {
			anyOpen = anyOpen || v
		}
		p.open = map[string]bool{}
		if !anyOpen {
			for _, d := range t.Tree {
				p.open[d.Name] = true
			}
		}
		m.rebuildCaps()
	case key.Matches(kp, k.Fold):
		r := row()
		if r == nil {
			return nil
		}
		switch r.kind {
		case rowDomain:
			p.open[t.Tree[r.domain].Name] = false
		case rowMethod:
			p.open[t.Tree[r.domain].Name] = false
			for i, rr := range p.rows {
				if rr.kind == rowDomain && rr.domain == r.domain {
					p.sel = i
				}
			}
		case rowConsumedHeader, rowConsumed:
			p.consumed = false
		}
		m.rebuildCaps()
	case key.Matches(kp, k.Select), key.Matches(kp, k.Unfold):
		r := row()
		if r == nil {
			return nil
		}
		switch r.kind {
		case rowDomain:
			name := t.Tree[r.domain].Name
			if key.Matches(kp, k.Unfold) {
				p.open[name] = true
			} else {
				p.open[name] = !p.open[name]
			}
			m.rebuildCaps()
		case rowConsumedHeader:
			p.consumed = !p.consumed
			m.rebuildCaps()
		case rowMethod:
			if key.Matches(kp, k.Select) {
				return m.pickMethod(t.Tree[r.domain].Methods[r.method].Name)
			}
		}
	}
	return nil
}

// pickMethod puts method in the composer and prefills its params from the
// last call of it in history (or {}).
func (m *model) pickMethod(method string) tea.Cmd {
	m.comp.reply = nil
	m.comp.method.Set(method)
	m.comp.params.Set("{}")
	m.comp.checkParams()
	m.comp.field = fParams
	m.setFocus(pComposer)
	m.comp.comps = nil
	if m.hist == nil {
		return nil
	}
	hs, tname := m.hist, ""
	if t := m.target(); t != nil {
		tname = t.Name
	}
	return m.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
		defer cancel()
		p, ok, err := hs.LastParams(ctx, tname, method)
		if err != nil || !ok || !json.Valid(p) {
			return nil
		}
		return prefillMsg{method: method, params: p}
	})
}

func (m *model) keyComposer(msg tea.Msg, ks string) tea.Cmd {
	c := &m.comp
	k := m.keys
	kp, _ := msg.(tea.KeyPressMsg)
	nfields := 2
	if t := m.target(); t != nil && t.Bus && c.reply == nil {
		nfields = 4
	}
	switch {
	case ks == "esc":
		if c.reply != nil {
			c.reply = nil
			c.params.Set("{}")
			c.checkParams()
			return nil
		}
		m.setFocus(pCaps)
		return nil
	case ks == "tab" && c.field == fMethod && len(c.comps) > 0:
		c.method.Set(c.comps[c.compIdx])
		c.comps = nil
		c.field = fParams
		return nil
	case ks == "tab":
		m.cycleFocus(1)
		return nil
	case ks == "shift+tab":
		m.cycleFocus(-1)
		return nil
	case ks == "up":
		c.field = (c.field - 1 + nfields) % nfields
		return nil
	case ks == "down":
		c.field = (c.field + 1) % nfields
		return nil
	case key.Matches(kp, k.Complete) && c.field == fMethod:
		if len(c.comps) > 0 {
			c.compIdx = (c.compIdx + 1) % len(c.comps)
		} else {
			c.complete(m.target())
		}
		return nil
	case key.Matches(kp, k.Cancel):
		m.cancelCall()
		return nil
	case key.Matches(kp, k.Editor):
		text := c.params.String()
		return m.safe(func() tea.Msg {
			f, err := os.CreateTemp("", "primalscope-params-*.json")
			if err != nil {
				return editorReadyMsg{err: err}
			}
			defer f.Close()
			pretty, perr := render.Format([]byte(text), render.Options{Indent: 2})
			if perr != nil || strings.TrimSpace(text) == "" {
				pretty = []byte(text + "\n")
			}
			if _, err := f.Write(pretty); err != nil {
				return editorReadyMsg{err: err}
			}
			return editorReadyMsg{path: f.Name()}
		})
	case key.Matches(kp, k.Send) && (ks == "enter" || ks == "ctrl+s"):
		if c.field == fMethod && len(c.comps) > 0 && ks == "enter" && c.method.String() != c.comps[c.compIdx] && !m.methodKnown(c.method.String()) {
			c.method.Set(c.comps[c.compIdx])
			c.comps = nil
			c.field = fParams
			return nil
		}
		return m.send()
	}
	f := c.fieldEdit()
	if f.Update(msg) {
		switch c.field {
		case fParams:
			c.checkParams()
		case fMethod:
			c.complete(m.target())
		}
	}
	return nil
}

func (m *model) methodKnown(name string) bool {
	t := m.target()
	if t == nil || t.Caps == nil {
		return false
	}
	for _, mm := range t.Caps.Methods {
		if mm == name {
			return true
		}
	}
	return false
}

// send starts the composed call (or the reply) in a command.
func (m *model) send() tea.Cmd {
	c := &m.comp
	if c.paramsErr != "" && c.paramsErrAt >= 0 {
		m.setErr("params are not valid JSON: " + c.paramsErr)
		return nil
	}
	params := json.RawMessage(strings.TrimSpace(c.params.String()))
	if len(params) == 0 {
		params = nil
	}
	if c.reply != nil {
		r := *c.reply
		idx := -1
		for i := range m.reqs.reqs {
			if m.reqs.reqs[i].TargetKey == r.TargetKey && bytes.Equal(m.reqs.reqs[i].ID, r.ID) {
				idx = i
			}
		}
		c.reply = nil
		c.params.Set("{}")
		c.checkParams()
		m.setFocus(pRequests)
		cl := m.client
		return m.safe(func() tea.Msg {
			ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
			defer cancel()
			res := params
			if res == nil {
				res = json.RawMessage("null")
			}
			return replyDoneMsg{idx: idx, err: cl.reply(ctx, r.TargetKey, r.ID, res, nil)}
		})
	}
	t := m.target()
	if t == nil {
		m.setErr("no target selected: pick one in Targets (1)")
		return nil
	}
	method := strings.TrimSpace(c.method.String())
	if method == "" {
		m.setErr("no method: type one or pick it in Capabilities (2)")
		return nil
	}
	if c.inflight {
		m.setErr("a call is in flight: ^x cancels it")
		return nil
	}
	req := ipc.Request{Method: method, Params: params, SessionID: c.session.String(), Pool: c.pool.String()}
	ctx, cancel := context.WithTimeout(m.ctx, m.callTimeout())
	m.cancel = cancel
	c.inflight, c.inflightAt = true, method
	c.seq++
	seq := c.seq
	tgt := *t
	cl, hs := m.client, m.hist
	m.setInfo("")
	return m.safe(func() tea.Msg {
		defer cancel()
		start := time.Now()
		if len(req.Params) > maxLiveCheck && !json.Valid(req.Params) {
			return callDoneMsg{ans: &answer{seq: seq, target: tgt, req: req, outcome: "not sent", errText: "params are not valid JSON", noResult: true}, doc: textDoc(nil)}
		}
		resp, err := cl.send(ctx, tgt, req)
		if hs != nil {
			hs.Record(recordFor(tgt, req, start, resp, err))
		}
		return answerMsg(answerOf(seq, tgt, req, start, resp, err))
	})
}

// previewAbove is the answer size above which a preview of the first
// previewBytes is shown while the whole answer is formatted.
const (
	previewAbove = 1 << 20
	previewBytes = 128 << 10
)

// answerMsg formats an answer for the viewer: whole when small, else a
// preview of its beginning (the rest follows in a fullDocMsg).
func answerMsg(a *answer) callDoneMsg {
	if len(a.result) > previewAbove {
		out, _ := render.Format(a.result[:previewBytes], render.Options{Indent: render.DefaultIndent})
		if i := bytes.LastIndexByte(out, '\n'); i > 0 {
			out = out[:i]
		}
		return callDoneMsg{ans: a, doc: newDoc(string(out), true), partial: true}
	}
	return callDoneMsg{ans: a, doc: prettyDoc(a.result)}
}

// answerOf turns a finished call into what the response viewer shows.
func answerOf(seq int, t Target, req ipc.Request, start time.Time, resp *ipc.Response, err error) *answer {
	a := &answer{seq: seq, target: t, req: req, outcome: "ok"}
	if resp != nil {
		a.elapsed, a.size, a.raw, a.sent = resp.Elapsed, len(resp.Raw), resp.Raw, resp.Sent
		a.result = resp.Result
		if resp.Error != nil {
			a.rpcErr = resp.Error
			a.outcome = "error"
			a.result, _ = json.Marshal(resp.Error)
		}
	} else {
		a.elapsed = time.Since(start)
	}
	if err != nil && a.rpcErr == nil {
		var re *ipc.RPCError
		var te *ipc.TimeoutError
		var be *ipc.BTSPRequiredError
		switch {
		case errors.As(err, &re):
			a.rpcErr, a.outcome = re, "error"
		case errors.As(err, &te), errors.Is(err, context.DeadlineExceeded):
			a.outcome = "timeout"
		case errors.Is(err, context.Canceled):
			a.outcome = "cancelled"
		case errors.As(err, &be):
			a.outcome = "refused"
		default:
			a.outcome = "failed"
		}
		a.errText = err.Error()
		a.noResult = a.result == nil
	}
	return a
}

func (m *model) onCallDone(msg callDoneMsg) tea.Cmd {
	a := msg.ans
	if a.seq == m.comp.seq {
		m.comp.inflight = false
		m.cancel = nil
	}
	r := &m.resp
	r.ans, r.pretty, r.env = a, msg.doc, nil
	if a.noResult {
		r.pretty = textDoc(nil)
	}
	r.rawMode, r.pending = false, false
	r.folds, r.hl, r.hlN = nil, nil, 0
	r.jqDoc, r.jqErr, r.jqInput, r.jqInputOf = nil, "", nil, nil
	r.resetView()
	r.partial = msg.partial
	if a.outcome != "ok" && a.outcome != "error" {
		m.setErr(a.outcome + ": " + a.errText)
	}
	if m.focus == pComposer || m.focus == pCaps {
		m.setFocus(pResponse)
	}
	var cmds []tea.Cmd
	if msg.partial {
		cmds = append(cmds, m.safe(func() tea.Msg { return fullDocMsg{ans: a, doc: prettyDoc(a.result)} }))
	}
	if !r.jq.Empty() {
		r.jqSeq++
		cmds = append(cmds, m.runJQ())
	}
	if m.focus == pHistory || m.histp.loaded {
		cmds = append(cmds, m.loadHistoryAfter(m.histp.search.String(), 100*time.Millisecond))
	}
	return tea.Batch(cmds...)
}

func (m *model) runJQ() tea.Cmd {
	r := &m.resp
	if r.ans == nil || r.jq.Empty() {
		return nil
	}
	seq, filter, a := r.jqSeq, r.jq.String(), r.ans
	input := r.jqInput
	if r.jqInputOf != a {
		input = nil
	}
	r.jqRunning = true
	return m.safe(func() tea.Msg {
		var newInput any
		if input == nil {
			v, err := parseForJQ(a.result)
			if err != nil {
				return jqDoneMsg{seq: seq, err: err}
			}
			input, newInput = v, v
		}
		d, err := jqRun(m.ctx, filter, input)
		return jqDoneMsg{seq: seq, doc: d, err: err, input: newInput, inputOf: a}
	})
}

func (m *model) runSearch() tea.Cmd {
	d := m.resp.current()
	q := m.resp.search.String()
	if d == nil || q == "" {
		m.resp.matches, m.resp.matchDoc = nil, nil
		return nil
	}
	return m.safe(func() tea.Msg { return searchDoneMsg{d: d, q: q, matches: searchDoc(m.ctx, d, q)} })
}

func (m *model) keyResponse(kp tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	r := &m.resp
	page := max(r.lastH-1, 1)
	switch {
	case key.Matches(kp, k.Up):
		r.move(-1)
	case key.Matches(kp, k.Down):
		r.move(1)
	case key.Matches(kp, k.PageUp):
		r.move(-page)
	case key.Matches(kp, k.PageDown):
		r.move(page)
	case key.Matches(kp, k.Top):
		r.home()
	case key.Matches(kp, k.Bottom):
		r.end()
	case key.Matches(kp, k.Fold):
		r.toggleFold(true)
	case key.Matches(kp, k.Unfold), key.Matches(kp, k.Select):
		d := r.current()
		if d != nil && key.Matches(kp, k.Select) && r.folds[d][r.cur] {
			r.toggleFold(false)
		} else if key.Matches(kp, k.Select) && d != nil && d.close[r.cur] >= 0 {
			r.toggleFold(true)
		} else {
			r.toggleFold(false)
		}
	case key.Matches(kp, k.FoldAll):
		r.foldAll()
	case key.Matches(kp, k.Left):
		r.ScrollX(-20)
	case key.Matches(kp, k.Right):
		r.ScrollX(20)
	case key.Matches(kp, k.Jq):
		if r.ans != nil {
			r.jqEditing = true
		}
	case key.Matches(kp, k.Search):
		r.searching = true
		r.search.Set("")
	case key.Matches(kp, k.NextMatch), key.Matches(kp, k.PrevMatch):
		if len(r.matches) == 0 || r.matchDoc != r.current() {
			return nil
		}
		if key.Matches(kp, k.NextMatch) {
			r.mi = (r.mi + 1) % len(r.matches)
		} else {
			r.mi = (r.mi - 1 + len(r.matches)) % len(r.matches)
		}
		r.jump(r.matches[r.mi])
	case key.Matches(kp, k.RawToggle):
		if r.ans == nil {
			return nil
		}
		r.rawMode = !r.rawMode
		r.cur, r.off = 0, 0
		if r.rawMode && r.env == nil {
			r.pending = true
			a := r.ans
			return m.safe(func() tea.Msg { return envDoneMsg{ans: a, doc: prettyDoc(envelopeOf(a))} })
		}
	case key.Matches(kp, k.Copy):
		if r.ans == nil {
			return nil
		}
		return m.copyText("answer", string(r.ans.result))
	case key.Matches(kp, k.CopyPart):
		if r.jqDoc == nil {
			return m.copyText("answer", string(r.ans.result))
		}
		return m.copyText("filtered answer", r.jqDoc.text)
	case key.Matches(kp, k.CopyCmd):
		if r.ans == nil {
			return nil
		}
		if r.ans.req.Method == "" {
			m.setErr("this answer is not a call: nothing to copy as a command")
			return nil
		}
		a := r.ans
		return m.copyCommand(callCommand(recordFor(a.target, a.req, time.Time{}, nil, nil), a.target.Family))
	}
	return nil
}

// maxClipboard bounds what is sent through OSC 52 (terminals drop more).
const maxClipboard = 1 << 20

// copyCommand copies a call's command line, or says why there is none.
func (m *model) copyCommand(c history.Command, err error) tea.Cmd {
	if err != nil {
		m.setErr("cannot copy the call as a command: " + render.Sanitize(err.Error()))
		return nil
	}
	cmd := m.copyText("command", c.Line)
	if len(c.Notes) > 0 && cmd != nil {
		m.setInfo(m.status + " · " + render.Sanitize(strings.Join(c.Notes, "; ")))
	}
	return cmd
}

func (m *model) copyText(what, s string) tea.Cmd {
	if len(s) > maxClipboard {
		m.setErr(fmt.Sprintf("%s is %s: too large for the terminal clipboard (limit %s)", what, ipc.FormatBytes(int64(len(s))), ipc.FormatBytes(maxClipboard)))
		return nil
	}
	m.setInfo(fmt.Sprintf("copied %s (%s)", what, ipc.FormatBytes(int64(len(s)))))
	return tea.SetClipboard(s)
}

func (m *model) keyTail(kp tea.KeyPressMsg, t *tail, isEvents bool) tea.Cmd {
	k := m.keys
	total := func() uint64 {
		if isEvents {
			return m.events.ring.total
		}
		return m.trace.ring.total
	}
	n := m.events.ring.Len()
	if !isEvents {
		n = m.trace.ring.Len()
	}
	switch {
	case key.Matches(kp, k.Up):
		t.back = min(t.back+1, n)
	case key.Matches(kp, k.Down):
		tailScroll(t, 1)
	case key.Matches(kp, k.PageUp):
		t.back = min(t.back+10, n)
	case key.Matches(kp, k.PageDown):
		tailScroll(t, 10)
	case key.Matches(kp, k.Top):
		t.back = n
	case key.Matches(kp, k.Bottom):
		t.back = 0
		t.paused = false
	case key.Matches(kp, k.Pause):
		t.paused = !t.paused
		if t.paused {
			t.pauseMark = total()
		} else {
			t.back = 0
		}
	case key.Matches(kp, k.Filter):
		t.filtering = true
	case key.Matches(kp, k.Clear):
		if isEvents {
			m.events.ring.Clear()
		} else {
			m.trace.ring.Clear()
		}
		t.back = 0
	case key.Matches(kp, k.Select):
		return m.inspect(isEvents)
	case isEvents && key.Matches(kp, k.KindCycle):
		m.events.cycleKind()
	case isEvents && key.Matches(kp, k.SrcCycle):
		m.events.cycleSource()
	}
	return nil
}

// inspect opens the bottom row of the events or trace tail (the newest, or
// the one scrolled to) in the response viewer.
func (m *model) inspect(isEvents bool) tea.Cmd {
	var a *answer
	if isEvents {
		e := m.events.at(m.events.back)
		if e == nil {
			return nil
		}
		a = &answer{title: fmt.Sprintf("%s %s · %s · %s", e.Kind, e.Name, e.Source, e.Time.Format("15:04:05.000")), result: e.Data, outcome: "ok", size: len(e.Data)}
	} else {
		f := m.trace.at(m.trace.back)
		if f == nil {
			return nil
		}
		a = &answer{title: fmt.Sprintf("frame %s %s · %s · %s", f.Dir, f.Source, ipc.FormatBytes(int64(f.Size)), f.Time.Format("15:04:05.000")), result: f.Data, outcome: "ok", size: f.Size}
		if f.Size > len(f.Data) {
			a.title += fmt.Sprintf(" (first %s)", ipc.FormatBytes(int64(len(f.Data))))
		}
		switch {
		case len(f.Data) == 0 && f.Warning != "":
			// A note (dial, handshake step, close) says it all in its text.
			a.result, a.size = []byte(f.Warning), len(f.Warning)
		case f.Warning != "":
			a.title += " · ⚠ " + f.Warning
		}
	}
	m.comp.seq++
	a.seq = m.comp.seq
	if m.narrow() {
		m.setFocus(pResponse)
	}
	return m.safe(func() tea.Msg { return answerMsg(a) })
}

func (m *model) keyRequests(kp tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	p := &m.reqs
	switch {
	case key.Matches(kp, k.Up):
		p.sel = max(p.sel-1, 0)
	case key.Matches(kp, k.Down):
		p.sel = min(p.sel+1, len(p.reqs)-1)
	case key.Matches(kp, k.Reply), key.Matches(kp, k.Select):
		if p.sel < 0 || p.sel >= len(p.reqs) {
			return nil
		}
		r := p.reqs[p.sel]
		m.comp.reply = &r
		m.comp.params.Set("{}")
		m.comp.checkParams()
		m.comp.field = fParams
		m.setFocus(pComposer)
	}
	return nil
}

func (m *model) loadHistory(q string) tea.Cmd { return m.loadHistoryAfter(q, 0) }

func (m *model) loadHistoryAfter(q string, d time.Duration) tea.Cmd {
	hs := m.hist
	if hs == nil {
		m.histp.loaded = true
		m.histp.err = "history is off"
		return nil
	}
	return m.safe(func() tea.Msg {
		if d > 0 {
			time.Sleep(d)
		}
		ctx, cancel := context.WithTimeout(m.ctx, 3*time.Second)
		defer cancel()
		es, err := hs.Search(ctx, q, 500)
		return historyMsg{entries: es, err: err}
	})
}

// targetFor finds the live target a history entry was sent to.
func (m *model) targetFor(name, endpoint string) *Target {
	for _, t := range m.targets.targets {
		if t.Endpoint == endpoint {
			return t
		}
	}
	for _, t := range m.targets.targets {
		if t.Name == name {
			return t
		}
		for _, a := range t.Aliases {
			if a == name {
				return t
			}
		}
	}
	return nil
}

func (m *model) keyHistory(kp tea.KeyPressMsg) tea.Cmd {
	k := m.keys
	h := &m.histp
	switch {
	case key.Matches(kp, k.Up):
		h.sel = max(h.sel-1, 0)
	case key.Matches(kp, k.Down):
		h.sel = min(h.sel+1, len(h.entries)-1)
	case key.Matches(kp, k.PageUp):
		h.sel = max(h.sel-10, 0)
	case key.Matches(kp, k.PageDown):
		h.sel = min(h.sel+10, len(h.entries)-1)
	case key.Matches(kp, k.Top):
		h.sel = 0
	case key.Matches(kp, k.Bottom):
		h.sel = len(h.entries) - 1
	case key.Matches(kp, k.Filter):
		h.searching = true
	case key.Matches(kp, k.Refresh):
		return m.loadHistory(h.search.String())
	case key.Matches(kp, k.Save):
		if h.selected() != nil {
			h.naming = true
			h.name.Set("")
		}
	case key.Matches(kp, k.Export), key.Matches(kp, k.CopyCmd):
		if e := h.selected(); e != nil {
			return m.copyCommand(callCommand(*e, ""))
		}
	case key.Matches(kp, k.Select):
		e := h.selected()
		if e == nil {
			return nil
		}
		var cmd tea.Cmd
		if t := m.targetFor(e.Target, e.Endpoint); t != nil {
			cmd = m.selectTarget(t.Key)
		}
		m.comp.reply = nil
		m.comp.method.Set(e.Method)
		m.comp.params.Set(string(e.Params))
		m.comp.session.Set(e.Session)
		m.comp.pool.Set(e.Pool)
		m.comp.checkParams()
		m.comp.field = fParams
		m.setFocus(pComposer)
		return cmd
	case key.Matches(kp, k.Replay):
		e := h.selected()
		if e == nil || m.hist == nil {
			return nil
		}
		if e.ParamsTruncated {
			m.setErr("this call's params were stored cut: it cannot be replayed")
			return nil
		}
		t := m.targetFor(e.Target, e.Endpoint)
		if t == nil {
			m.setErr("replay: target " + render.Sanitize(e.Target) + " is not live")
			return nil
		}
		return m.replay(*e, *t)
	}
	return nil
}

// replay sends a stored call again and shows the diff against its answer.
func (m *model) replay(e CallRecord, t Target) tea.Cmd {
	cl, hs, timeout := m.client, m.hist, m.callTimeout()
	m.setInfo(fmt.Sprintf("replaying call %d…", e.ID))
	m.comp.seq++
	seq := m.comp.seq
	return m.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(m.ctx, timeout)
		defer cancel()
		old, err := hs.Get(ctx, e.ID)
		if err != nil {
			return statusMsg{text: "replay: " + err.Error(), err: true}
		}
		req := ipc.Request{Method: e.Method, Params: e.Params, SessionID: e.Session, Pool: e.Pool}
		start := time.Now()
		resp, err := cl.send(ctx, t, req)
		hs.Record(recordFor(t, req, start, resp, err))
		a := answerOf(seq, t, req, start, resp, err)
		a.title = fmt.Sprintf("replay of %d · %s · %s · %s", e.ID, e.Method, a.outcome, fmtDur(a.elapsed))
		oldDoc := old.Result
		if old.Err != nil {
			oldDoc, _ = json.Marshal(old.Err)
		}
		var lines []string
		if old.Truncated {
			lines = append(lines, "(the stored answer was cut; the diff covers what was kept)")
		}
		dl, derr := hs.Diff(oldDoc, a.result)
		if derr != nil {
			lines = append(lines, "cannot diff: "+render.Sanitize(derr.Error()))
		}
		lines = append(lines, dl...)
		return callDoneMsg{ans: a, doc: textDoc(lines)}
	})
}

// ---- mouse ----

func (m *model) paneAt(x, y int) (pane, rect, bool) {
	for p, r := range m.rects {
		if r.contains(x, y) {
			return p, r, true
		}
	}
	return 0, rect{}, false
}

func (m *model) onClick(ms tea.Mouse) tea.Cmd {
	if m.showHelp {
		m.showHelp = false
		return nil
	}
	if ms.Y == 0 && m.narrow() && !m.zoom {
		for _, tb := range m.tabs() {
			if ms.X >= tb.x0 && ms.X < tb.x1 {
				m.setFocus(tb.p)
			}
		}
		return nil
	}
	p, r, ok := m.paneAt(ms.X, ms.Y)
	if !ok {
		return nil
	}
	if p != m.focus {
		m.setFocus(p)
	}
	row := ms.Y - r.y - 1
	if ms.Button != tea.MouseLeft || row < 0 {
		return nil
	}
	switch p {
	case pTargets:
		if m.targets.filtering || !m.targets.filter.Empty() {
			row--
		}
		i := m.targets.off + row
		if i >= 0 && i < len(m.targets.rows) && m.targets.rows[i].key != "" {
			m.targets.sel = i
			return m.selectTarget(m.targets.rows[i].key)
		}
	case pCaps:
		if m.caps.filtering || !m.caps.filter.Empty() {
			row--
		}
		i := m.caps.off + row
		if i >= 0 && i < len(m.caps.rows) {
			m.caps.sel = i
		}
	case pHistory:
		i := m.histp.off + row
		if i >= 0 && i < len(m.histp.entries) {
			m.histp.sel = i
		}
	case pRequests:
		i := m.reqs.off + row
		if i >= 0 && i < len(m.reqs.reqs) {
			m.reqs.sel = i
		}
	case pComposer:
		if row <= 2 {
			m.comp.field = []int{fMethod, fParams, fParams}[row]
		}
	}
	return nil
}

func (m *model) onWheel(ms tea.Mouse) tea.Cmd {
	p, _, ok := m.paneAt(ms.X, ms.Y)
	if !ok {
		return nil
	}
	d := 0
	switch ms.Button {
	case tea.MouseWheelUp:
		d = -3
	case tea.MouseWheelDown:
		d = 3
	default:
		return nil
	}
	switch p {
	case pTargets:
		m.targets.move(d)
		return m.selectTarget(m.targets.selectedKey())
	case pCaps:
		m.caps.move(d)
	case pResponse:
		m.resp.ScrollBy(d)
	case pEvents:
		if d < 0 {
			m.events.back = min(m.events.back-d, m.events.ring.Len())
		} else {
			tailScroll(&m.events.tail, d)
		}
	case pTrace:
		if d < 0 {
			m.trace.back = min(m.trace.back-d, m.trace.ring.Len())
		} else {
			tailScroll(&m.trace.tail, d)
		}
	case pHistory:
		m.histp.sel = min(max(m.histp.sel+d, 0), len(m.histp.entries)-1)
	}
	return nil
}

// ---- layout and view ----

// narrow reports whether only one pane (and the composer) fit.
func (m *model) narrow() bool { return m.w < 110 || m.h < 30 }

const composerH = 5

// layout computes where each visible pane is drawn.
func (m *model) layout() {
	m.rects = map[pane]rect{}
	w, h := m.w, m.h
	if w < 20 || h < 8 {
		return
	}
	bodyY, bodyH := 1, h-2
	full := rect{0, bodyY, w, bodyH}
	if m.zoom {
		m.rects[m.focus] = full
		return
	}
	if m.narrow() {
		switch m.focus {
		case pComposer, pResponse:
			m.rects[pComposer] = rect{0, bodyY, w, composerH}
			m.rects[pResponse] = rect{0, bodyY + composerH, w, bodyH - composerH}
		default:
			m.rects[m.focus] = full
		}
		return
	}
	topH := max((bodyH-composerH)*45/100, 8)
	respH := bodyH - composerH - topH
	tw := min(max(w/5, 24), 36)
	sw := min(max(w/4, 28), 56)
	cw := w - tw - sw
	m.rects[pTargets] = rect{0, bodyY, tw, topH}
	m.rects[pCaps] = rect{tw, bodyY, cw, topH}
	m.rects[m.side] = rect{tw + cw, bodyY, sw, topH}
	m.rects[pComposer] = rect{0, bodyY + topH, w, composerH}
	m.rects[pResponse] = rect{0, bodyY + topH + composerH, w, respH}
}

// View draws the screen.
func (m *model) View() (v tea.View) {
	defer func() {
		if r := recover(); r != nil {
			m.crashed = writeCrash(m.cfg.CrashDir, r, debug.Stack())
			if m.quit != nil {
				go m.quit()
			}
			v = tea.NewView("primalscope crashed; report: " + m.crashed)
		}
	}()
	v = tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "primalscope"
	return v
}

// render draws the whole screen as a string (View wraps it).
func (m *model) render() string {
	if m.w <= 0 || m.h <= 0 {
		return ""
	}
	if m.w < 20 || m.h < 8 {
		return fit("primalscope: terminal too small", m.w)
	}
	if m.rects == nil {
		m.layout()
	}
	lines := make([]string, m.h)
	lines[0] = m.header()
	lines[m.h-1] = m.statusBar()
	if m.showHelp {
		body := m.helpView(m.w, m.h-2)
		copy(lines[1:], body)
		return strings.Join(lines, "\n")
	}
	// Draw each pane into its rectangle; panes never overlap.
	type drawn struct {
		r     rect
		lines []string
	}
	var ds []drawn
	for p, r := range m.rects {
		ds = append(ds, drawn{r, m.drawPane(p, r)})
	}
	for y := 1; y < m.h-1; y++ {
		var row []drawn
		for _, d := range ds {
			if y >= d.r.y && y < d.r.y+d.r.h {
				row = append(row, d)
			}
		}
		// sort by x
		for i := 1; i < len(row); i++ {
			for j := i; j > 0 && row[j].r.x < row[j-1].r.x; j-- {
				row[j], row[j-1] = row[j-1], row[j]
			}
		}
		var sb strings.Builder
		x := 0
		for _, d := range row {
			if d.r.x > x {
				sb.WriteString(strings.Repeat(" ", d.r.x-x))
			}
			sb.WriteString(d.lines[y-d.r.y])
			x = d.r.x + d.r.w
		}
		if x < m.w {
			sb.WriteString(strings.Repeat(" ", m.w-x))
		}
		lines[y] = sb.String()
	}
	return strings.Join(lines, "\n")
}

func (m *model) drawPane(p pane, r rect) []string {
	st := m.st
	focused := p == m.focus
	iw, ih := r.w-2, r.h-2
	var title, right string
	var body []string
	switch p {
	case pTargets:
		live, stale, down := m.targets.counts()
		title = "Targets"
		if m.targets.groupBy > 0 {
			title += " · by " + groupNames[m.targets.groupBy]
		}
		right = st.Dim.Render(fmt.Sprintf("%d", live+stale+down+len(m.targets.targets)-live-stale-down))
		body = m.targets.View(st, iw, ih, focused, m.cfg.LookedIn)
	case pCaps:
		title, right = capsTitle(st, m.target())
		body = m.caps.View(st, m.target(), iw, ih, focused)
	case pComposer:
		title = "Call"
		if m.comp.reply != nil {
			title = "Reply"
		}
		right = st.Dim.Render("⏎ send · ^e edit · ^x cancel")
		body = m.comp.View(st, m.target(), iw, focused)
	case pResponse:
		title, right = m.resp.titles(st)
		body = m.resp.View(st, iw, ih, focused)
	case pEvents:
		title, right = m.events.titles(st)
		body = m.events.View(st, iw, ih)
	case pTrace:
		title, right = m.trace.titles(st)
		body = m.trace.View(st, iw, ih)
	case pHistory:
		title = "History"
		if !m.histp.search.Empty() {
			title += " · " + render.Sanitize(m.histp.search.String())
		}
		right = st.Dim.Render("⏎ load · r replay · s save · x export")
		body = m.histp.View(st, iw, ih, focused, m.now())
	case pRequests:
		title = "Server requests"
		if n := m.reqs.pending(); n > 0 {
			right = st.Warn.Render(fmt.Sprintf("%d waiting", n))
		}
		body = m.reqs.View(st, iw, ih, focused)
	}
	return st.box(r.w, r.h, title, right, focused, body)
}

type tab struct {
	p      pane
	label  string
	x0, x1 int // columns on the header line
}

// tabs are the pane tabs the header shows on narrow screens, with where
// they are drawn (for mouse clicks).
func (m *model) tabs() []tab {
	x := 1 + len("primalscope")
	if m.cfg.Title != "" {
		x += 1 + ansi.StringWidth(m.st.InfoBadge.Render(render.Sanitize(m.cfg.Title)))
	}
	x++ // the space before the first tab
	var out []tab
	for i, p := range []pane{pTargets, pCaps, pComposer, pResponse, m.side} {
		n := fmt.Sprint(i + 1)
		if p >= pEvents {
			n = []string{"e", "t", "H", "R"}[p-pEvents]
		}
		label := n + " " + tabNames[p]
		out = append(out, tab{p: p, label: label, x0: x, x1: x + len(label)})
		x += len(label) + 1
	}
	return out
}

func (m *model) header() string {
	st := m.st
	live, stale, down := m.targets.counts()
	compact := m.narrow() && !m.zoom && m.w < 100
	sep := st.Dim.Render(" · ")
	words := [...]string{"live", "stale", "down", "asking"}
	if compact { // ● 13 ◌ 2 ✕ 1 ? 1
		sep = " "
		words = [...]string{"●", "◌", "✕", "?"}
	}
	count := func(n int, w string) string {
		if compact {
			return w + fmt.Sprint(n)
		}
		return fmt.Sprintf("%d %s", n, w)
	}
	right := st.OK.Render(count(live, words[0]))
	if stale > 0 {
		right += sep + st.Warn.Render(count(stale, words[1]))
	}
	if down > 0 {
		right += sep + st.Err.Render(count(down, words[2]))
	}
	if !compact {
		right += st.Dim.Render(fmt.Sprintf(" · %d ev/s", m.rate()))
	}
	if n := m.reqs.pending(); n > 0 {
		right += sep + st.Warn.Render(count(n, words[3]))
	}
	right += " "
	left := " " + st.Header.Render("primalscope")
	if m.cfg.Title != "" {
		left += " " + st.InfoBadge.Render(render.Sanitize(m.cfg.Title))
	}
	if m.narrow() && !m.zoom {
		var tabs []string
		for _, tb := range m.tabs() {
			p, label := tb.p, tb.label
			if p == m.focus || (p == pResponse && m.focus == pComposer) {
				tabs = append(tabs, st.Selected.Render(label))
			} else {
				tabs = append(tabs, st.Dim.Render(label))
			}
		}
		left += " " + strings.Join(tabs, " ")
	} else {
		dirs := m.cfg.SocketDirsShown
		if len(dirs) == 0 {
			dirs = []string{"(none)"}
		}
		left += st.Dim.Render(" · sockets: ") + render.Sanitize(strings.Join(dirs, ", "))
		fam := m.cfg.Family
		if fam == "" {
			fam = "default"
		}
		left += st.Dim.Render(" · family: ") + render.Sanitize(fam)
	}
	rw := ansi.StringWidth(right)
	if rw > m.w/2 {
		return fit(left, m.w)
	}
	return fit(left, m.w-rw) + right
}

func (m *model) statusBar() string {
	st := m.st
	left := ""
	if m.status != "" {
		if m.statusErr {
			left = st.Err.Render(" ✗ "+render.Sanitize(m.status)) + " "
		} else {
			left = st.OK.Render(" "+render.Sanitize(m.status)) + " "
		}
	}
	m.help.SetWidth(max(m.w-ansi.StringWidth(left)-1, 10))
	return fit(left+" "+m.help.ShortHelpView(m.contextHelp()), m.w)
}

// contextHelp is the status bar's keys for the focused pane.
func (m *model) contextHelp() []key.Binding {
	k := m.keys
	switch m.focus {
	case pTargets:
		return []key.Binding{k.Help, k.Select, k.Filter, k.Group, k.NextPane, k.Events, k.Quit}
	case pCaps:
		return []key.Binding{k.Help, k.Select, k.Fold, k.Unfold, k.Filter, k.NextPane, k.Quit}
	case pComposer:
		return []key.Binding{k.Send, k.Editor, k.Complete, k.Cancel, k.Back, k.NextPane}
	case pResponse:
		return []key.Binding{k.Help, k.Jq, k.Search, k.RawToggle, k.Fold, k.Copy, k.CopyCmd, k.Quit}
	case pEvents:
		return []key.Binding{k.Help, k.Pause, k.KindCycle, k.SrcCycle, k.Filter, inspectKey(k), k.Trace, k.Quit}
	case pTrace:
		return []key.Binding{k.Help, k.Pause, k.Filter, inspectKey(k), k.Clear, k.Events, k.Quit}
	case pHistory:
		return []key.Binding{k.Help, k.Select, k.Replay, k.Save, k.Export, k.Filter, k.Quit}
	case pRequests:
		return []key.Binding{k.Help, k.Reply, k.Events, k.Quit}
	}
	return m.keys.ShortHelp()
}

// inspectKey is Select as the tails describe it.
func inspectKey(k KeyMap) key.Binding {
	b := k.Select
	b.SetHelp(b.Help().Key, "inspect")
	return b
}

// helpView is the ? overlay, generated from the keymap: the groups flow
// down and across as many columns as fit; on small screens the spacing and
// footer shrink first.
func (m *model) helpView(w, h int) []string {
	st := m.st
	build := func(sep bool) []string {
		var items []string
		for g, group := range m.keys.FullHelp() {
			if g > 0 && sep {
				items = append(items, "")
			}
			items = append(items, st.TitleFocus.Render(helpGroupTitles[g]))
			for _, b := range group {
				if b.Enabled() {
					items = append(items, st.HelpKey.Render(fmt.Sprintf("%-8s", b.Help().Key))+" "+st.HelpDesc.Render(b.Help().Desc))
				}
			}
		}
		return items
	}
	cp := m.cfg.ConfigPath
	if cp == "" {
		cp = "~/.config/primalscope/config.toml"
	}
	footer := []string{"", st.Dim.Render("Keys are remappable in " + render.Sanitize(cp) + " under [keys], e.g. quit = [\"q\"]."),
		st.Dim.Render("Mouse: click to focus and select, wheel to scroll. Any key closes this help.")}
	const colW = 26
	maxCol := max((w-2)/colW, 1)
	avail := h - 2
	items := build(true)
	ceil := func(n, d int) int { return (n + d - 1) / d }
	for _, try := range []struct {
		sep    bool
		footer int
	}{{true, 3}, {false, 3}, {false, 2}} {
		items = build(try.sep)
		if ceil(len(items), maxCol)+try.footer <= avail {
			footer = footer[:try.footer]
			break
		}
	}
	ncol := maxCol
	for ncol > 1 && ceil(len(items), ncol-1)+len(footer) <= avail {
		ncol--
	}
	rows := ceil(len(items), ncol)
	var body []string
	for r := 0; r < rows; r++ {
		var sb strings.Builder
		for c := 0; c < ncol; c++ {
			if i := c*rows + r; i < len(items) {
				sb.WriteString(fit(items[i], colW))
			}
		}
		body = append(body, sb.String())
	}
	body = append(body, footer...)
	return st.box(w, h, "Help · keys", "", true, body)
}
