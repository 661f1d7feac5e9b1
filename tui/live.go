package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// targetList is the targets pane as the root sees it: the targets in the
// pane's order, the one under its cursor, and the health counts.
type targetList interface {
	selectedKey() string
	order(yield func(string) bool)
	counts() (live, stale, down int)
	wantWidth() int
}

func (m *model) list() targetList { return m.panes[pTargets].(targetList) }

// describedMsg is what a BTSP target said of itself through the TUI's own
// connection.
type describedMsg struct {
	key  string
	desc *discovery.Description
	err  error
	// session is what protected the connection, when BTSP was involved.
	session *ipc.SessionSecurity
}

// judgedMsg is the one dialer's judgement of targets that demand BTSP
// (see target.refusal), by target key.
type judgedMsg map[string]judgement

type judgement struct {
	of      *discovery.Target // the snapshot judged
	refusal *ipc.BTSPRequiredError
}

// judge has the targets that demand BTSP and were not judged yet judged
// off Update (the judgement reads their directories): the seed their
// calls get, or the refusal they meet. With no seed known at all
// (Config.CanBTSP false) none is offered to any of them, and none is
// judged: the caps pane says to set one.
func (m *model) judge() tea.Cmd {
	if !m.pc.cfg.CanBTSP {
		return nil
	}
	var ts []*discovery.Target
	for k, t := range m.pc.targets {
		if t.BTSP() && !t.judged && !m.judging[k] {
			m.judging[k] = true
			ts = append(ts, t.Target)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	cl := m.pc.client
	return m.pc.safe(func() tea.Msg {
		out := make(judgedMsg, len(ts))
		for _, t := range ts {
			out[t.ID] = judgement{of: t, refusal: cl.seedRefusal(t)}
		}
		return out
	})
}

// onJudged keeps the judgements of targets still as they were judged
// (the others are judged again), then lets the listener and the current
// target's description use them.
func (m *model) onJudged(msg judgedMsg) tea.Cmd {
	for k, j := range msg {
		delete(m.judging, k)
		t := m.pc.targets[k]
		if t == nil || !sameJudgement(t.Target, j.of) {
			continue
		}
		nt := *t
		nt.refusal, nt.judged = j.refusal, true
		m.pc.targets[k] = &nt
	}
	m.listen.dirty = true
	cmds := []tea.Cmd{m.broadcast(targetsMsg{}), m.broadcast(currentMsg{}), m.listenPass(), m.judge()}
	if t := m.pc.target(); t != nil && msg[t.ID].of != nil {
		cmds = append(cmds, m.describeLocked(t))
	}
	return tea.Batch(cmds...)
}

// describeLocked asks t, which demands BTSP, to describe itself through
// the TUI's own connection, once, when the one dialer judged that its
// calls get a seed.
func (m *model) describeLocked(t *target) tea.Cmd {
	if !t.BTSP() || t.caps() != nil || !t.seeded() || m.described[t.ID] {
		return nil
	}
	m.described[t.ID] = true
	return m.describe(t.Target)
}

// absorb applies a frame's worth of live items: targets that came, changed
// and went (programContext.targets), and what live targets pushed (handed
// to the panes in one liveMsg).
func (m *model) absorb(items []any) tea.Cmd { return m.absorbBatch(feedMsg{items: items}) }

// absorbBatch is absorb for a batch from the feed: its items first, then
// its lines (after the items' lines), then its trace frames.
func (m *model) absorbBatch(msg feedMsg) tea.Cmd {
	items := msg.items
	pc := m.pc
	changed, reorder := false, false
	// Targets that came and went in this frame: one note each, or one note
	// for a burst (a registry of thousands would push every real event out
	// of the tail).
	var appeared, left []string
	var cmds []tea.Cmd
	// The lines and trace frames go out in buffers the model reuses frame
	// after frame (10,000 events a second would allocate them 30 times a
	// second, growing each: 480 bytes a notification for the frames).
	// A batch from the feed lends its own buffers when the items bring no
	// lines or frames of their own (a flood: no copy of either, and no
	// third buffer of a batch's size kept).
	live := liveMsg{lines: m.lineBuf[:0], frames: m.frameBuf[:0]}
	lentLines, lentFrames := false, false
	defer func() {
		// What they hold is let go (the panes copied what they keep).
		clear(live.lines)
		clear(live.frames)
		if !lentLines {
			m.lineBuf = live.lines[:0]
		}
		if !lentFrames {
			m.frameBuf = live.frames[:0]
		}
	}()
	now := pc.now()
	for _, it := range items {
		switch x := it.(type) {
		case discovery.Event:
			changed = true
			d := x.Target
			switch x.Kind {
			case discovery.Removed:
				reorder = true
				if old, had := pc.targets[d.ID]; had {
					left = append(left, d.Name)
					if d.ID == pc.current {
						// The user was working on it: it keeps its place.
						g := *old
						g.gone = true
						pc.gone = &g
					}
				}
				delete(pc.targets, d.ID)
				// Stop listening to it: its place goes to a listed target.
				m.listen.removed(d.ID)
			default:
				old, had := pc.targets[d.ID]
				if x.Kind == discovery.Added && !had {
					appeared = append(appeared, d.Name)
				}
				reorder = reorder || old == nil || !sameListing(old.Target, d)
				if old == nil && pc.gone != nil && pc.gone.ID == d.ID {
					old = pc.gone
				}
				pc.targets[d.ID] = newTarget(d, old)
				if pc.gone != nil && pc.gone.ID == d.ID {
					pc.gone = nil // it came back
				}
			}
		case line:
			m.rate.count(x.Time, now)
			live.lines = append(live.lines, x)
		case streamMsg:
			l := newLine(x.key, x.ev)
			l.reply, l.conn = x.reply, x.conn
			m.rate.count(l.Time, now)
			live.lines = append(live.lines, l)
		case listenEndedMsg:
			m.listen.ended(x.key)
		case crashMsg:
			m.crashed = x.path
			return tea.Quit
		case TraceFrame:
			live.frames = append(live.frames, x)
			m.frameWarning(&x)
		}
	}
	if len(msg.lines) > 0 {
		for i := range msg.lines {
			m.rate.count(msg.lines[i].Time, now)
		}
		if len(live.lines) == 0 && msg.fromFeed {
			live.lines, lentLines = msg.lines, true
		} else {
			live.lines = append(live.lines, msg.lines...)
		}
	}
	if len(msg.frames) > 0 {
		if len(live.frames) == 0 && msg.fromFeed {
			live.frames, lentFrames = msg.frames, true
		} else {
			live.frames = append(live.frames, msg.frames...)
		}
	}
	for i := range msg.frames {
		m.frameWarning(&msg.frames[i])
	}
	m.lastLines = len(live.lines)
	live.lines = append(live.lines, m.targetNotes(appeared, "target appeared", "targets appeared")...)
	live.lines = append(live.lines, m.targetNotes(left, "target left", "targets left")...)
	live.feedDropped = m.feed.droppedEvents.Load()
	cmds = append(cmds, m.broadcast(live))
	if changed {
		m.listen.dirty = true
		cmds = append(cmds, m.broadcast(targetsMsg{reorder: reorder}), m.judge())
		// The targets pane's width follows its names.
		m.layout()
		if pc.target() == nil { // none yet (a target that left stays current)
			if k := m.list().selectedKey(); k != "" {
				cmds = append(cmds, m.selectTarget(k))
			}
		}
	}
	return tea.Batch(cmds...)
}

// frameWarning puts what the CLI prints on stderr for a call (a security
// check not made, a cipher asked for by name) on the status line, not only
// in the trace pane.
func (m *model) frameWarning(x *TraceFrame) {
	if w, ok := strings.CutPrefix(x.Warning, "WARNING: "); ok {
		m.pc.setErr(x.Source + ": " + w)
	}
}

// sameListing reports whether a and b are listed alike: the same name,
// aliases, family, pool, kind and first source (what the targets pane sorts,
// groups and filters by).
func sameListing(a, b *discovery.Target) bool {
	if a.Name != b.Name || a.Family != b.Family || a.Pool != b.Pool || a.Kind != b.Kind || !slices.Equal(a.Aliases, b.Aliases) {
		return false
	}
	first := func(t *discovery.Target) string {
		if len(t.Sources) > 0 {
			return t.Sources[0].Source
		}
		return ""
	}
	return first(a) == first(b)
}

// maxTargetNotes is how many targets coming or going in one frame get a
// note each; more get one note together.
const maxTargetNotes = 20

// targetNotes says on the events tail what happened to names: a note per
// target, or one for a burst naming the first few.
func (m *model) targetNotes(names []string, one, many string) []line {
	now := m.pc.now()
	if len(names) <= maxTargetNotes {
		out := make([]line, 0, len(names))
		for _, n := range names {
			out = append(out, noteLine(now, n, one, ""))
		}
		return out
	}
	return []line{noteLine(now, "discovery", fmt.Sprintf("%d %s", len(names), many), strings.Join(names[:3], ", ")+", …")} // escaped where drawn
}

// note puts one line of the TUI's own on the events tail.
func (m *model) note(l line) tea.Cmd {
	return m.broadcast(liveMsg{lines: []line{l}, feedDropped: m.feed.droppedEvents.Load()})
}

// listenPass has the listener claim or let go of listening places, and
// says on the events tail when live targets are left out.
func (m *model) listenPass() tea.Cmd {
	if note := m.listen.pass(m.pc.current, m.pc.targets, m.list().order); note != nil {
		return m.note(*note)
	}
	return nil
}

// selectTarget makes key the current target.
func (m *model) selectTarget(key string) tea.Cmd {
	if key == "" || key == m.pc.current {
		return nil
	}
	m.pc.current, m.pc.gone = key, nil
	m.listen.dirty = true
	cmd := m.broadcast(currentMsg{changed: true})
	if t := m.pc.target(); t != nil {
		if d := m.describeLocked(t); d != nil {
			return tea.Batch(cmd, d)
		}
	}
	return cmd
}

// describe asks a target for its identity and capabilities through the
// TUI's own connection (which can do the BTSP handshake discovery cannot).
func (m *model) describe(t *discovery.Target) tea.Cmd {
	cl, ctx := m.pc.client, m.pc.ctx
	return m.pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := cl.conn(ctx, t)
		if err != nil {
			return describedMsg{key: t.ID, err: err}
		}
		d, err := discovery.Describe(ctx, c)
		msg := describedMsg{key: t.ID, desc: d, err: err}
		// Read after the answers: a refusal may have made it a BTSP session.
		if ss, ok := c.Session(); ok {
			msg.session = &ss
		}
		return msg
	})
}

// onDescribed keeps what a target said of itself.
func (m *model) onDescribed(msg describedMsg) tea.Cmd {
	t := m.pc.targets[msg.key]
	if t == nil {
		return nil
	}
	nt := *t
	if msg.err != nil {
		nt.learnt.err = msg.err.Error()
	}
	if msg.session != nil {
		nt.learnt.session = msg.session
	}
	if d := msg.desc; d != nil {
		if d.Identity != nil {
			nt.learnt.identity = d.Identity
		}
		if d.Capabilities != nil {
			nt.learnt.caps, nt.tree, nt.treeOf = d.Capabilities, d.Tree, d.Capabilities
			nt.learnt.err = ""
		}
	}
	m.pc.targets[msg.key] = &nt
	return m.broadcast(currentMsg{})
}

// rateMeter counts events a second for the header.
type rateMeter struct {
	sec      int64
	cur, prv int
}

// count counts an event that arrived at (its line's time), applied at
// now. It is counted in the second it arrived in, not the one its batch
// was applied in: a busy stream's batches (busyFrame) fall four, five or
// six to a second, and counting them when applied made a steady 10,000 a
// second read 8,000 to 12,000. A time past now, or more than a second
// before it (a peer's own clock, in an event stream), counts at now.
func (r *rateMeter) count(at, now time.Time) {
	if at.After(now) || now.Sub(at) > time.Second {
		at = now
	}
	sec := at.Unix()
	switch {
	case sec == r.sec:
		r.cur++
	case sec == r.sec-1:
		r.prv++ // arrived in the second before, applied in this one
	case sec > r.sec:
		if sec == r.sec+1 {
			r.prv = r.cur
		} else {
			r.prv = 0
		}
		r.sec, r.cur = sec, 1
	}
}

// rate is the events of the last whole second (or this one, when more).
func (r *rateMeter) rate(now time.Time) int {
	sec := now.Unix()
	switch {
	case sec == r.sec:
		return max(r.prv, r.cur)
	case sec == r.sec+1:
		return r.cur
	}
	return 0
}
