package tui

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// holonBuiltins are the methods every Holon-RPC server has
// (ECOSYSTEM-FACTS: rpc.heartbeat; rpc.peers and rpc.discover reserved).
var holonBuiltins = []string{"rpc.discover", "rpc.heartbeat", "rpc.peers"}

// Bounds of what is remembered of methods seen.
const (
	maxSeenTargets = 64
	maxSeenMethods = 256
)

// Marks of the methods of a known tree.
const (
	markBuiltin = "built-in"
	markSeen    = "seen"
)

// knownMethods is what is known of the methods of targets without a
// capability list (Holon-RPC servers): their built-ins, and the methods
// seen called on them, in history and in traffic, that were not answered
// "method not found". None of it is advertised by the target.
type knownMethods struct {
	// seen maps a target key to its methods: true when seen working (or
	// not known not to), false when answered "method not found".
	seen map[string]map[string]bool
	// holons maps the name of each Holon-RPC target without a capability
	// list to its key (trace frames carry the name); worked out when
	// traffic needs it after the targets changed (holonsOK false), not
	// on every change of 2,000 targets.
	holons   map[string]string
	holonsOK bool
	// the tree of key, kept until what is seen of it changes
	treeKey string
	tree    []capability.Domain
	dirty   bool
}

// seenHistoryMsg is what history holds of the calls to a target.
type seenHistoryMsg struct {
	key     string
	methods map[string]bool
}

// wanted reports whether t's methods are known only this way.
func (k *knownMethods) wanted(t *target) bool {
	if t == nil || t.caps() != nil {
		return false
	}
	tr := t.Endpoint.Transport
	return tr == ipc.WS || tr == ipc.WSS
}

// note records that method was called on key: ok false when the target
// answered that it has no such method. An answer seen in this run wins;
// a weak sighting (history, a request in the trace, whose answer is not
// known there) only adds a method not known yet.
func (k *knownMethods) note(key, method string, ok, weak bool) {
	if key == "" || method == "" {
		return
	}
	if k.seen == nil {
		k.seen = map[string]map[string]bool{}
	}
	m := k.seen[key]
	if m == nil {
		if len(k.seen) >= maxSeenTargets {
			return
		}
		m = map[string]bool{}
		k.seen[key] = m
	}
	old, had := m[method]
	switch {
	case had && (weak || old == ok):
		return
	case !had && len(m) >= maxSeenMethods:
		return
	}
	m[method] = ok
	if key == k.treeKey {
		k.dirty = true
	}
}

// targetsChanged says the targets changed: which are known this way is
// worked out again when next needed.
func (k *knownMethods) targetsChanged() { k.holonsOK = false }

// holonsOf is which targets are known this way, by name.
func (k *knownMethods) holonsOf(ts map[string]*target) map[string]string {
	if !k.holonsOK {
		k.holons = map[string]string{}
		for key, t := range ts {
			if k.wanted(t) {
				k.holons[t.Name] = key
			}
		}
		k.holonsOK = true
	}
	return k.holons
}

// traffic records the methods of requests sent to those targets.
func (k *knownMethods) traffic(frames []TraceFrame, ts map[string]*target) {
	if len(frames) == 0 || len(k.holonsOf(ts)) == 0 {
		return
	}
	for _, f := range frames {
		key, ok := k.holons[f.Source]
		if !ok || f.Dir != ipc.Out {
			continue
		}
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.Unmarshal(f.Data, &m) == nil && m.Method != "" && len(m.ID) > 0 {
			k.note(key, m.Method, true, true)
		}
	}
}

// answered records a call the user made.
func (k *knownMethods) answered(a *answer) {
	if a == nil || a.target == nil || a.target.ID == "" {
		return
	}
	switch {
	case a.outcome == "ok":
		k.note(a.target.ID, a.req.Method, true, false)
	case a.rpcErr != nil:
		k.note(a.target.ID, a.req.Method, !isNotFound(a.rpcErr.Code), false)
	}
}

// isNotFound reports whether an error code says the method does not
// exist (-32601, or 12 on Holon-RPC).
func isNotFound(code int64) bool { return code == -32601 || code == 12 }

// fromHistory looks up, in a command, the calls history holds to t.
func (k *knownMethods) fromHistory(pc *programContext, t *target) tea.Cmd {
	hs := pc.hist
	if hs == nil || !k.wanted(t) {
		return nil
	}
	key, name, addr, ctx := t.ID, t.Name, t.Address, pc.ctx
	return pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		es, err := hs.Search(ctx, name, 500)
		if err != nil {
			return nil
		}
		methods := map[string]bool{}
		for i := len(es) - 1; i >= 0; i-- { // oldest first: the newest wins
			e := es[i]
			if e.Target != name && e.Endpoint != addr {
				continue
			}
			switch {
			case e.Outcome == history.OutcomeOK:
				methods[e.Method] = true
			case e.Outcome == history.OutcomeError && e.Error != nil:
				methods[e.Method] = !isNotFound(e.Error.Code)
			}
		}
		return seenHistoryMsg{key: key, methods: methods}
	})
}

// treeOf is the tree of t's known methods (nil when t has a capability
// list, or is not a Holon-RPC server).
func (k *knownMethods) treeOf(t *target) []capability.Domain {
	if !k.wanted(t) {
		if k.dirty {
			// What changed is of a tree not shown: drawn anew when it is.
			k.tree, k.dirty = nil, false
		}
		return nil
	}
	if k.treeKey == t.ID && k.tree != nil && !k.dirty {
		return k.tree
	}
	set := map[string]bool{}
	for _, m := range holonBuiltins {
		set[m] = true
	}
	for m, ok := range k.seen[t.ID] {
		if ok {
			set[m] = true
		}
	}
	methods := make([]string, 0, len(set))
	for m := range set {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	k.treeKey, k.tree, k.dirty = t.ID, (&capability.Capabilities{Methods: methods}).Tree(), false
	return k.tree
}

// shown says t's rows were drawn: a change to another target's tree is
// drawn when that tree is next asked for, and stops marking this one.
func (k *knownMethods) shown(t *target) {
	if k.dirty && (t == nil || t.ID != k.treeKey) {
		k.tree, k.dirty = nil, false
	}
}

// mark says how method of t is known ("" when t has a capability list).
func (k *knownMethods) mark(t *target, method string) string {
	if !k.wanted(t) {
		return ""
	}
	for _, b := range holonBuiltins {
		if b == method {
			return markBuiltin
		}
	}
	return markSeen
}
