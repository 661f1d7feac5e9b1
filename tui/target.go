package tui

import (
	"context"
	"strings"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
)

// target is a discovered target as the TUI works with it: discovery's
// snapshot (never modified, shared), and what the TUI learnt of it on its
// own. The model replaces a target with a new one when discovery says it
// changed; only the lazily computed capability tree is filled in later.
type target struct {
	*discovery.Target
	// learnt is what the target said through the TUI's own connection (a
	// BTSP target discovery could not describe); it wins over the probe.
	learnt learnt
	// tree is the capability tree of caps(), computed when first asked.
	tree   []capability.Domain
	treeOf *capability.Capabilities
	// stream is streamSpec(), worked out when first asked.
	stream    *events.Spec
	streamSet bool
	// gone marks the current target after discovery lost it.
	gone bool
	// h is health(), worked out once (the snapshot does not change): the
	// targets pane and the listener read it for every target each pass.
	h discovery.State
	// rowW is rowWant(t), worked out once (the targets pane sums it over
	// every target at every change).
	rowW int
	// refusal is the one dialer's judgement of a target that demands BTSP
	// (client.seedRefusal): the refusal its calls meet before anything is
	// sent, for want of a seed offered to it (none known for its family,
	// or one given with no family), nil when they get one. judged says it
	// was made; it is made off Update (judgedMsg), and until then nothing
	// is offered to the target (seeded).
	refusal *ipc.BTSPRequiredError
	judged  bool
	// fw is words(), worked out when first filtered. It is shared by the
	// snapshots of a target listed alike (sameListing), so that the
	// targets pane's sorted list, which outlives them, holds it and not
	// a snapshot.
	fw *filterWords
}

// filterWords is the text the targets pane's filter matches, lower case:
// the name, the aliases and family, and all (with the pool and kind).
type filterWords struct {
	name, aliasesFamily, all string
	set                      bool
}

// wordsRef is where words() is kept, worked out or not yet.
func (t *target) wordsRef() *filterWords {
	if t.fw == nil {
		t.fw = &filterWords{}
	}
	return t.fw
}

// words is what the filter matches against, lowered once for every
// keystroke after (the snapshot does not change).
func (t *target) words() *filterWords {
	if !t.wordsRef().set {
		name := strings.ToLower(t.Name)
		af := strings.ToLower(strings.Join(t.Aliases, " ")) + " " + strings.ToLower(t.Family)
		*t.fw = filterWords{name: name, aliasesFamily: af,
			all: name + " " + af + " " + strings.ToLower(t.Pool) + " " + strings.ToLower(string(t.Kind)), set: true}
	}
	return t.fw
}

// learnt is what describing a target through the TUI's own connection
// found.
type learnt struct {
	identity *capability.Identity
	caps     *capability.Capabilities
	session  *ipc.SessionSecurity
	err      string
}

// newTarget wraps a discovery snapshot; what the TUI learnt of the same
// target before (old, nil when new) is kept while discovery still cannot
// describe it.
func newTarget(d *discovery.Target, old *target) *target {
	t := &target{Target: d, h: healthOf(d)}
	if old != nil && sameListing(old.Target, d) {
		t.fw = old.wordsRef()
	}
	t.rowW = rowWant(t)
	if old != nil && old.judged && sameJudgement(old.Target, d) {
		t.refusal, t.judged = old.refusal, true
	}
	if old != nil && t.probeCaps() == nil && old.caps() != nil && t.BTSP() {
		// keep what the TUI learnt itself through the handshake
		t.learnt = learnt{identity: old.identityOf(), caps: old.caps(), session: old.learnt.session}
		t.tree, t.treeOf = old.tree, old.treeOf
	}
	return t
}

// sameJudgement reports whether the one dialer judges a and b alike (see
// target.refusal): the same address, family and BTSP demand.
func sameJudgement(a, b *discovery.Target) bool {
	return a.Address == b.Address && a.Family == b.Family && a.BTSP() == b.BTSP()
}

// seeded reports whether a call to t, which demands BTSP, is offered a
// family seed, as the one dialer judges it: false until the judgement is
// made, so nothing is asked of the target before.
func (t *target) seeded() bool { return t.judged && t.refusal == nil }

// streamSpec says how the events package would watch t when it is the
// biomeOS API's event stream (read as server-sent events), else nil.
func (t *target) streamSpec() *events.Spec {
	if !t.streamSet {
		if s, ok := events.SpecFor(t.Target); ok && s.BiomeOSAPI {
			t.stream = &s
		}
		t.streamSet = true
	}
	return t.stream
}

// endpoint is the address to dial ("" when there is nothing to dial).
func (t *target) endpoint() string { return t.Address }

func (t *target) probeCaps() *capability.Capabilities {
	if t.Probe == nil {
		return nil
	}
	return t.Probe.Capabilities
}

// caps are the target's capabilities: learnt, else the probe's.
func (t *target) caps() *capability.Capabilities {
	if t.learnt.caps != nil {
		return t.learnt.caps
	}
	return t.probeCaps()
}

// identityOf is the target's identity: learnt, else the probe's.
func (t *target) identityOf() *capability.Identity {
	if t.learnt.identity != nil {
		return t.learnt.identity
	}
	if t.Probe == nil {
		return nil
	}
	return t.Probe.Identity
}

// session says what protected the connection the target was last reached
// through (the TUI's own, else discovery's probe) when BTSP was involved.
func (t *target) session() *ipc.SessionSecurity {
	if t.learnt.session != nil {
		return t.learnt.session
	}
	if t.Probe == nil {
		return nil
	}
	return t.Probe.Session
}

// errText is what went wrong last reaching it ("" when nothing did).
func (t *target) errText() string {
	if t.learnt.err != "" {
		return t.learnt.err
	}
	if t.learnt.caps != nil || t.Probe == nil {
		return ""
	}
	return t.Probe.Err
}

// capTree is the capability tree (nil without capabilities).
func (t *target) capTree() []capability.Domain {
	c := t.caps()
	if c != t.treeOf {
		t.tree, t.treeOf = c.Tree(), c
	}
	return t.tree
}

// bus reports whether it is a stdio Bus pool (calls may carry a session and
// a pool).
func (t *target) bus() bool { return t.Kind == discovery.KindBus }

// health buckets discovery's states as the TUI draws them: live (also a
// live peer that demands BTSP), stale, dead (also one that answered
// nonsense), or unknown (not probed yet, or never).
func (t *target) health() discovery.State { return t.h }

func healthOf(d *discovery.Target) discovery.State {
	switch d.State() {
	case discovery.StateLive, discovery.StateLocked:
		return discovery.StateLive
	case discovery.StateStale:
		return discovery.StateStale
	case discovery.StateDead, discovery.StateError:
		return discovery.StateDead
	}
	return discovery.StateUnknown
}

// healthWord names a health bucket.
func healthWord(s discovery.State) string {
	switch s {
	case discovery.StateLive:
		return "live"
	case discovery.StateStale:
		return "stale"
	case discovery.StateDead:
		return "down"
	}
	return "probing"
}

// weakSession says what the target's BTSP session does not guarantee
// ("unauthenticated", "cleartext", ...); "" when it is authenticated and
// encrypted, or unknown.
func (t *target) weakSession() string {
	if s := t.session(); s != nil {
		return s.Weakness()
	}
	return ""
}

// version is the best version string known for t.
func (t *target) version() string {
	if id := t.identityOf(); id != nil && id.Version != "" {
		return id.Version
	}
	if c := t.caps(); c != nil {
		return c.Version
	}
	return ""
}

// firstSource names the first source that found it ("" when none).
func (t *target) firstSource() string {
	if len(t.Sources) > 0 {
		return t.Sources[0].Source
	}
	return ""
}

// Discoverer keeps the picture of targets live. Watch sends discovery's
// Added, Changed and Removed events on out until ctx ends, then returns; it
// must not close out.
type Discoverer interface {
	Watch(ctx context.Context, out chan<- discovery.Event) error
	// Dirs is where it looks for sockets (for the empty state and status bar).
	Dirs() []string
}

// Dialer stands in for the connection step (tests): it gets the ipc
// options the one dialer (internal/dial) decided for the target, its trace
// hook included. nil connects as dial.Connect does.
type Dialer func(ctx context.Context, t *discovery.Target, opts ipc.Options) (*ipc.Conn, error)

// defaultDialer connects t with exactly opts, as the client does without a
// Dialer.
func defaultDialer(ctx context.Context, t *discovery.Target, opts ipc.Options) (*ipc.Conn, error) {
	ep, err := ipc.ParseEndpoint(t.Address)
	if err != nil {
		return nil, err
	}
	return dial.Connect(ctx, ep, opts, true)
}
