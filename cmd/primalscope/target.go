package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// target is a TARGET argument resolved to an endpoint, by the one dialer
// the TUI shares (internal/dial).
type target = dial.Target

// familyID is --family, else $FAMILY_ID / $BIOMEOS_FAMILY_ID.
func (a *app) familyID() string {
	if a.family != "" {
		return a.family
	}
	return discovery.Family(a.getenv)
}

// dirs lists the socket directories that exist.
func (a *app) dirs() []string { return discovery.SocketDirs(a.getenv, a.socketDirs) }

// dialer returns the run's one dialer (internal/dial), made on first use
// from the global flags: the socket directories, the family, the BTSP and
// prefix settings, --wire, --max-frame and --insecure. The CLI's commands
// and the TUI all reach targets through it.
func (a *app) dialer() (*dial.Dialer, error) {
	if a.dl != nil {
		return a.dl, nil
	}
	if a.maxFrame <= 0 {
		return nil, usageErr(fmt.Errorf("--max-frame must be positive"))
	}
	sec, err := a.security()
	if err != nil {
		return nil, err
	}
	d, err := dial.New(dial.Settings{
		Getenv: a.getenv, SocketDirs: a.socketDirs, Family: a.familyID(), Security: sec,
		Wire: a.wire, MaxFrame: a.maxFrame, Insecure: a.insecure, Lookup: a.lookupWide,
	})
	if err != nil {
		return nil, usageErr(err)
	}
	a.dl = d
	return d, nil
}

// resolve turns a TARGET into an endpoint, as dial.Dialer.Resolve does.
func (a *app) resolve(ctx context.Context, arg string) (target, error) {
	d, err := a.dialer()
	if err != nil {
		return target{}, err
	}
	t, err := d.Resolve(ctx, arg)
	var bad *dial.BadTargetError
	if errors.As(err, &bad) {
		return t, usageErr(err)
	}
	return t, err
}

// dial resolves and connects a TARGET through the one dialer.
func (a *app) dial(ctx context.Context, arg string, trace func(ipc.TraceEvent)) (*ipc.Conn, target, error) {
	t, err := a.resolve(ctx, arg)
	if err != nil {
		return nil, t, err
	}
	c, err := a.dialTarget(ctx, t, trace)
	return c, t, err
}

// dialTarget connects a target already resolved (a.resolve) through the
// one dialer, with everything its resolution found (the family its name
// carries, a BTSP demand, its pool and wire): a command that resolved a
// name dials what it resolved, never the endpoint's string again, which
// would lose what the name said.
func (a *app) dialTarget(ctx context.Context, t target, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
	return a.dialTargetWith(ctx, t, dial.Options{Trace: trace})
}

// dialTargetWith is dialTarget with more dial options (o.Handler is set here).
func (a *app) dialTargetWith(ctx context.Context, t target, o dial.Options) (*ipc.Conn, error) {
	d, err := a.dialer()
	if err != nil {
		return nil, err
	}
	// A holon that speaks first waits for an answer to its Hello; a
	// one-shot command answers it (and "method not found" to anything else
	// a peer asks, naming the command) so the peer never waits on us.
	answer := events.NotServing(a.runningName() + " does not serve requests")
	o.Handler = func(_ context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
		res, rerr := answer(m)
		return res, rerr, true
	}
	return d.Dial(ctx, t, o)
}

// dialProbe resolves and connects a TARGET to probe it (health, identity,
// capabilities, as caps does): a socket another local user serves is
// reached rather than refused, and owner says who serves it (nil when it
// is the user, root or a trusted user). Nothing but the probe's own calls
// may go over such a connection.
func (a *app) dialProbe(ctx context.Context, arg string) (c *ipc.Conn, t target, owner *ipc.PeerIdentity, err error) {
	t, err = a.resolve(ctx, arg)
	if err != nil {
		return nil, t, nil, err
	}
	var mu sync.Mutex
	c, err = a.dialTargetWith(ctx, t, dial.Options{Observe: func(id ipc.PeerIdentity) {
		if id.Foreign {
			mu.Lock()
			owner = &id
			mu.Unlock()
		}
	}})
	mu.Lock()
	defer mu.Unlock()
	return c, t, owner, err
}

// colorProfile decides how w gets colour, by the one rule the TUI shares
// (render.DecideColor): --no-color and --color never mean none, --color
// always means colour (even with NO_COLOR set), auto asks NO_COLOR and the
// terminal.
func (a *app) colorProfile(w io.Writer) (colorprofile.Profile, error) {
	w = stream(w)
	c, err := a.colorChoice()
	if err != nil {
		return colorprofile.NoTTY, err
	}
	if a.io.terminal != nil && c == render.ColorAuto { // a test's stand-in terminal
		if !a.io.terminal(w) {
			return colorprofile.NoTTY, nil
		}
		return colorprofile.Env(a.environ), nil
	}
	return c.Profile(w, a.environ), nil
}

// themeFor returns the --theme theme (built in or from the user theme
// directory), or the default for a dark background.
func (a *app) themeFor() (themes.Theme, error) {
	if a.theme == "" {
		return themes.Default(true), nil
	}
	cat := a.themeCatalog()
	t, err := cat.Lookup(a.theme)
	if err != nil {
		return themes.Theme{}, usageErr(fmt.Errorf("unknown theme %q (there are: %v)", a.theme, cat.Names()))
	}
	return t, nil
}
