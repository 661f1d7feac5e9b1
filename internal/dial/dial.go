// Package dial is the one way primalscope reaches a target: it turns a
// TARGET (a discovered target, or a string as the user types it) and the
// run's security settings into an *ipc.Conn. The CLI (call, caps, tail,
// check, check --call-all, replay, completion) and the TUI all dial through
// it, so they cannot disagree about what a name means, whether a socket is
// family-scoped, which wire to speak, or how BTSP and the riboCipher prefix
// are handled.
package dial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// Settings are what a run says about reaching targets, the same for every
// target: where to look for names, the family, the BTSP and prefix
// settings, the wire, the frame limit and TLS verification.
type Settings struct {
	// Getenv reads the environment (os.Getenv in production); nil reads
	// nothing. It finds the default socket directories.
	Getenv func(string) string
	// SocketDirs are the explicit socket directories (--socket-dir); none
	// means the default ones (see discovery.SocketDirs).
	SocketDirs []string
	// Family is the family id in use (--family, else $FAMILY_ID); it is
	// also Security.Family when that is empty.
	Family string
	// Security is the BTSP and riboCipher settings: the family seed, the
	// cipher, the prefix mode, the endpoint memory and where warnings go.
	// Its FamilyScoped and RequireBTSP are decided per target on top.
	Security ipc.Security
	// Wire is --wire: "auto" (or "") speaks what the target is known to
	// speak (JSON-RPC unless discovery saw the lean wire; Holon-RPC on
	// ws://), "jsonrpc", "lean" or "holon" force one.
	Wire string
	// MaxFrame bounds one incoming message (0: ipc.DefaultMaxFrame).
	MaxFrame int64
	// ConnectTimeout bounds establishing a transport (0: ipc's default).
	ConnectTimeout time.Duration
	// Insecure skips TLS certificate verification of wss:// peers
	// (--insecure); the caller says so loudly.
	Insecure bool
	// Lookup finds a name that no socket file in SocketDirs carries in the
	// other sources (Songbird, env variables, manifests, the config file,
	// the process table); nil looks nowhere else. It must end when ctx does.
	Lookup func(ctx context.Context, name string) (*discovery.Target, error)
}

// Dialer resolves and dials targets with one run's Settings. It is safe for
// concurrent use.
type Dialer struct {
	s     Settings
	wire  ipc.Wire
	force bool // --wire named a wire: it wins over what a target is known to speak
	scope discovery.FamilyScope
}

// New returns a Dialer for s. A bad Wire is a *SettingsError.
func New(s Settings) (*Dialer, error) {
	d := &Dialer{s: s}
	w, err := ipc.ParseWire(s.Wire)
	if err != nil {
		return nil, &SettingsError{Err: fmt.Errorf("--wire: %w", err)}
	}
	d.wire, d.force = w, s.Wire != "" && s.Wire != "auto"
	if s.MaxFrame < 0 {
		return nil, &SettingsError{Err: errors.New("--max-frame must be positive")}
	}
	if d.s.Security.Family == "" {
		d.s.Security.Family = s.Family
	}
	if d.s.Getenv == nil {
		d.s.Getenv = func(string) string { return "" }
	}
	return d, nil
}

// Settings returns the settings the Dialer was made with (Security.Family
// filled in).
func (d *Dialer) Settings() Settings { return d.s }

// SettingsError says the settings themselves are wrong (a usage error).
type SettingsError struct{ Err error }

func (e *SettingsError) Error() string { return e.Err.Error() }
func (e *SettingsError) Unwrap() error { return e.Err }

// Target is a target resolved to where it lives, with what is known about
// how to speak to it.
type Target struct {
	// Arg is the TARGET as the user typed it ("" for a discovered target).
	Arg string
	// Name is what to call it: the name it was resolved by, or the endpoint.
	Name string
	// Endpoint is where it lives.
	Endpoint ipc.Endpoint
	// Family is the family id its name carries (NAME-<family>.sock), as
	// discovery splits it, or, for a discovered target, one a peer claims
	// (identity.get, a manifest, a registry): it says the socket is
	// family-scoped, but only a family its socket's name carries picks the
	// seed (see Security).
	Family string
	// Pool is the stdio Bus pool the target is ("stdiobus/echo" is pool
	// "echo" of stdiobus.sock); calls without a pool of their own go there.
	Pool string
	// Wire is what the target is known to speak ("jsonrpc", "lean",
	// "holon"; "" unknown).
	Wire string
	// BTSPRequired says the target announced (transport_security) or
	// demanded a BTSP handshake: it gets nothing in cleartext.
	BTSPRequired bool
	// Via says how a name was found: "address" (the TARGET was one),
	// "socket-dir", "pool" (NAME/POOL), or the discovery source that knew
	// it ("songbird", "env", "config", ...).
	Via string
}

// FromDiscovery is the Target for a discovered target.
func FromDiscovery(t *discovery.Target) Target {
	via := ""
	if len(t.Sources) > 0 {
		via = t.Sources[0].Source
	}
	return Target{Name: t.Name, Endpoint: t.Endpoint, Family: t.Family, Pool: t.Pool, Wire: t.Wire(), BTSPRequired: t.BTSP(), Via: via}
}

// Label is how errors and traces name the target: its name, else its
// endpoint.
func (t Target) Label() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Endpoint.String()
}

// Security is the security the Dialer uses for t: the run's settings, with
// FamilyScoped set when t's name, family or directory says it is
// family-scoped (discovery.FamilyScope, the decision the prober makes too),
// TargetFamily to the family t's socket NAME carries (which alone picks the
// seed), ClaimedFamily to a family t has only by a peer's own word
// (identity.get, a manifest, a registry's answer: it never picks a seed),
// and RequireBTSP when t announced or demanded BTSP.
func (d *Dialer) Security(t Target) ipc.Security {
	sec := d.s.Security
	sec.RequireBTSP = sec.RequireBTSP || t.BTSPRequired
	claim := t.Family
	if claim == "default" {
		claim = "" // standalone
	}
	// The family the socket's name carries (the claim only helps split the
	// name), else one the name shows beside a known primal's socket in the
	// same directory (the decision FamilyScoped makes).
	named := d.scope.Family(t.Endpoint, claim, sec.Family)
	if !sec.FamilyScoped {
		sec.FamilyScoped = named != "" || claim != ""
	}
	if sec.TargetFamily == "" {
		// The family t's name says it belongs to picks the seed
		// (ipc.Security.SeedFor): the user's own family's seed never goes
		// to another family, nor to a peer that only says it is of it.
		sec.TargetFamily = named
		if named == "" {
			sec.ClaimedFamily = claim
		}
	}
	return sec
}

// SeedRefusal is the refusal a call to t meets before anything is sent
// because t requires BTSP and no seed is offered to it (a seed given with
// no family goes to no family's socket), the *ipc.BTSPRequiredError Dial
// returns, saying how to give or bind the seed (--family, FAMILY_ID,
// [families.<id>] in the config); nil when a call gets a seed, asks for
// cleartext by name, or nothing known yet says t requires BTSP. It reads
// t's directory (which families its name may carry): not for a UI's
// update loop.
func (d *Dialer) SeedRefusal(t Target) *ipc.BTSPRequiredError {
	sec := d.Security(t)
	return sec.SeedRefusal(t.Endpoint, t.Label())
}

// Wire is the wire the Dialer speaks to t: --wire when it names one, else
// what t is known to speak, else JSON-RPC (Holon-RPC on ws://).
func (d *Dialer) Wire(t Target) ipc.Wire {
	if d.force || t.Wire == "" {
		return d.wire
	}
	w, err := ipc.ParseWire(t.Wire)
	if err != nil {
		return d.wire // "tarpc" and other wires it cannot speak
	}
	return w
}

// Options is what one dial adds to the run's settings.
type Options struct {
	// Trace receives every frame and note (see ipc.Options.Trace).
	Trace func(ipc.TraceEvent)
	// Handler answers requests the peer sends (nil: they arrive on
	// Incoming for the caller to answer).
	Handler ipc.Handler
	// IncomingBuffer is how many pushed messages wait unread (0: ipc's
	// default).
	IncomingBuffer int
	// ReadPace is ipc.Options.ReadPace: a connection that only listens
	// reads at most once per ReadPace while the peer sends little.
	ReadPace time.Duration
	// Push is ipc.Options.Push: what the peer pushes is handed to it on
	// the reading goroutine rather than queued on Incoming.
	Push func(*ipc.Message)
	// Reader is ipc.Options.Reader: the owner runs the reading loop.
	Reader func(read func())
	// Persistent asks for a connection that outlives hiccups where the
	// transport allows it: a ws:// target gets a Holon-RPC session that
	// reconnects with backoff and keeps its heartbeat (the TUI's listeners).
	// Such a session lives until ctx ends or it is closed, so ctx must be
	// the owner's, not one call's.
	Persistent bool
	// Observe, when set, makes the dial a probe's (health, identity,
	// capabilities: caps): a Unix socket another local user serves is
	// reached, not refused, and who serves each connection is handed to
	// Observe before anything is sent (see ipc.PeerPolicy). Calls leave it
	// nil, and such a socket is then an *ipc.ForeignPeerError.
	Observe func(ipc.PeerIdentity)
}

// IPCOptions are the ipc options the Dialer uses for t.
func (d *Dialer) IPCOptions(t Target, o Options) ipc.Options {
	return ipc.Options{
		Wire: d.Wire(t), MaxFrame: d.s.MaxFrame, Endpoint: t.Label(), ConnectTimeout: d.s.ConnectTimeout,
		Security: d.Security(t), Insecure: d.s.Insecure,
		Trace: o.Trace, Handler: o.Handler, IncomingBuffer: o.IncomingBuffer, ReadPace: o.ReadPace, Push: o.Push, Reader: o.Reader,
		Peer: ipc.PeerPolicy{Observe: o.Observe != nil, Seen: o.Observe},
	}
}

// Dial connects t. ctx bounds the dialling (the BTSP handshake included),
// except for a Persistent ws:// session, which lives as long as ctx. A
// family-scoped or BTSP-requiring target without a seed is an
// *ipc.BTSPRequiredError before anything is sent; a failed handshake an
// error wrapping *btsp.HandshakeError; nothing is ever sent in cleartext to
// such a target unless Security asks for the null cipher by name.
func (d *Dialer) Dial(ctx context.Context, t Target, o Options) (*ipc.Conn, error) {
	return Connect(ctx, t.Endpoint, d.IPCOptions(t, o), o.Persistent)
}

// Connect opens ep with exactly opts, which IPCOptions made: the
// mechanics under Dial, for a caller that must see (or stand in for) the
// connection step, such as the TUI's tests. persistent is Options.Persistent.
func Connect(ctx context.Context, ep ipc.Endpoint, opts ipc.Options, persistent bool) (*ipc.Conn, error) {
	if persistent && (ep.Transport == ipc.WS || ep.Transport == ipc.WSS) {
		return holonSession(ctx, ep, opts)
	}
	return ipc.Dial(ctx, ep, opts)
}

// holonSession opens a Holon-RPC session (heartbeats, reconnects) as a Conn.
func holonSession(ctx context.Context, ep ipc.Endpoint, opts ipc.Options) (*ipc.Conn, error) {
	ho := holon.SessionOptions{}
	ho.Insecure = opts.Insecure
	if opts.MaxFrame > 0 && opts.MaxFrame != ipc.DefaultMaxFrame {
		ho.MaxMessage = opts.MaxFrame
	}
	if opts.Trace != nil {
		ho.Trace = ipc.HolonTrace(opts.Trace)
	}
	s, err := holon.NewSession(ctx, ep.URL, ho)
	if err != nil {
		return nil, &ipc.DialError{Endpoint: opts.Endpoint, Err: err}
	}
	opts.Wire = ipc.WireHolon
	if opts.IncomingBuffer == 0 {
		opts.IncomingBuffer = 256
	}
	return ipc.NewConn(s, opts), nil
}
