package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// listener decides which targets the TUI listens to: it holds a connection
// open to each so that what it pushes (heartbeats, notifications, events,
// requests) reaches the events tail. At most Config.MaxListen are heard at
// once: the current target first, then in the order the targets pane lists
// them; the current target is heard past the bound until another becomes
// current. A target whose connection ends (or cannot be made) is listened
// to again later, backing off while it keeps failing. The root model calls
// it from Update only; the dialling happens in commands.
type listener struct {
	pc *programContext
	// listening marks targets whose pushes the events tail receives.
	listening map[string]bool
	// relistenAt and backoff pace listening again to a target whose
	// connection closed.
	relistenAt map[string]time.Time
	backoff    map[string]time.Duration
	// notListened counts the live targets left out by Config.MaxListen;
	// extra is the current target when it is listened to past that bound
	// (one at most: it is let go when another becomes current).
	notListened int
	extra       string
	// noted marks targets whose failure to be listened to was said.
	noted map[string]bool
	// dirty says something that decides listening changed (targets, the
	// current one, a freed place); next is the earliest time a target
	// waiting out its backoff may be listened to again. Without either, a
	// pass does nothing.
	dirty bool
	next  time.Time
}

// listenFailedMsg says a target could not be listened to.
type listenFailedMsg struct {
	key, name string
	err       error
}

func newListener(pc *programContext) *listener {
	return &listener{pc: pc, listening: map[string]bool{}, relistenAt: map[string]time.Time{},
		backoff: map[string]time.Duration{}, noted: map[string]bool{}, dirty: true}
}

// ended frees key's listening place after its connection ended or could
// not be made, and has it listened to again later, backing off while it
// keeps failing.
func (l *listener) ended(key string) {
	delete(l.listening, key)
	if l.extra == key {
		l.extra = ""
	}
	l.dirty = true
	b := min(max(2*l.backoff[key], time.Second), 30*time.Second)
	l.backoff[key] = b
	l.relistenAt[key] = l.pc.now().Add(b)
}

// failed frees key's place and returns the note saying so, the first time.
func (l *listener) failed(msg listenFailedMsg) *Event {
	var note *Event
	if !l.noted[msg.key] {
		l.noted[msg.key] = true
		note = &Event{Time: l.pc.now(), Source: msg.name, TargetKey: msg.key, Kind: EvNote, Name: "cannot listen", Data: []byte(msg.err.Error() + " (trying again later)")}
	}
	l.ended(msg.key)
	return note
}

// removed forgets a target that left, and closes its connection.
func (l *listener) removed(key string) tea.Cmd {
	var cmd tea.Cmd
	if l.listening[key] {
		delete(l.listening, key)
		cmd = l.drop(key)
	}
	if l.extra == key {
		l.extra = ""
	}
	delete(l.relistenAt, key)
	delete(l.backoff, key)
	delete(l.noted, key)
	return cmd
}

// drop closes the TUI's connection to key (it is no longer listened to),
// off the update loop: calls still in flight on it finish first, and
// closing a stdio peer can wait.
func (l *listener) drop(key string) tea.Cmd {
	cl, grace := l.pc.client, l.pc.callTimeout()
	return l.pc.safe(func() tea.Msg {
		cl.drop(key, grace)
		return nil
	})
}

// pass opens a connection to every live target not yet listened to, in
// order (the current one, then the targets pane's order), up to the bound.
// Targets that demand BTSP without a seed, or are never spoken to, are
// left. It returns the commands that dial, and a note for the events tail
// when whether live targets are left out changed.
func (l *listener) pass(current string, targets map[string]*target, listed func(yield func(string) bool)) ([]tea.Cmd, *Event) {
	cfg := l.pc.cfg
	if cfg.NoListen {
		return nil, nil
	}
	now := l.pc.now()
	if !l.dirty && (l.next.IsZero() || now.Before(l.next)) {
		return nil, nil
	}
	l.dirty, l.next = false, time.Time{}
	var cmds []tea.Cmd
	if l.extra != "" && l.extra != current {
		// The target listened to past the bound is no longer current: let
		// it go if the bound is still full (else it keeps its place).
		if len(l.listening) > cfg.MaxListen && l.listening[l.extra] {
			delete(l.listening, l.extra)
			cmds = append(cmds, l.drop(l.extra))
		}
		l.extra = ""
	}
	order := make([]string, 0, len(targets)+1)
	if current != "" {
		order = append(order, current)
	}
	listed(func(k string) bool {
		if k != current {
			order = append(order, k)
		}
		return true
	})
	if len(order) < len(targets) { // some are filtered out of the pane
		seen := make(map[string]bool, len(order))
		for _, k := range order {
			seen[k] = true
		}
		for k := range targets {
			if !seen[k] {
				order = append(order, k)
			}
		}
	}
	left := 0
	for _, k := range order {
		t := targets[k]
		if t == nil || l.listening[k] || t.Kind == discovery.KindTarpc || t.endpoint() == "" || (t.BTSP() && !cfg.CanBTSP) {
			continue
		}
		if at, ok := l.relistenAt[k]; ok && now.Before(at) {
			if l.next.IsZero() || at.Before(l.next) {
				l.next = at
			}
			continue
		}
		holon := t.Endpoint.Transport == ipc.WS || t.Endpoint.Transport == ipc.WSS
		sse := t.hasStream && t.stream.BiomeOSAPI
		if !sse && t.health() != discovery.StateLive && !holon {
			continue
		}
		if len(l.listening) >= cfg.MaxListen {
			if k != current {
				left++
				continue
			}
			if !sse {
				// The current target is heard past the bound, until another
				// becomes current. (An event stream cannot be let go early;
				// there are a handful, one a family.)
				l.extra = k
			}
		}
		l.listening[k] = true
		if sse {
			// The biomeOS API speaks HTTP: read its event stream (the
			// client owns the goroutine; it ends with the program).
			l.pc.client.watchStream(l.pc.ctx, t.Target, events.Config{}.Source(t.stream))
			continue
		}
		tgt, cl, ctx := t.Target, l.pc.client, l.pc.ctx
		cmds = append(cmds, l.pc.safe(func() tea.Msg {
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if _, err := cl.conn(ctx, tgt); err != nil {
				return listenFailedMsg{key: tgt.ID, name: tgt.Name, err: err}
			}
			return nil
		}))
	}
	var note *Event
	if (left > 0) != (l.notListened > 0) {
		text := fmt.Sprintf("listening to %d targets; %d more live targets are not listened to (select one and press %s to hear it)", len(l.listening), left, helpKey(l.pc.keys.Select))
		if left == 0 {
			text = fmt.Sprintf("listening to every live target (%d)", len(l.listening))
		}
		note = &Event{Time: now, Source: "primalscope", Kind: EvNote, Name: "listening", Data: []byte(text)}
	}
	l.notListened = left
	return cmds, note
}
