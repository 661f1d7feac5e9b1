package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// target is a TARGET argument resolved to an endpoint.
type target struct {
	Arg      string       // as the user typed it
	Name     string       // the name it was resolved by, or the endpoint
	Endpoint ipc.Endpoint // where it lives
	// Family is the family id the name was resolved with (Arg-<family>.sock)
	// or that discovery split from it: it says the socket is family-scoped.
	Family string
}

// familyID is --family, else $FAMILY_ID / $BIOMEOS_FAMILY_ID.
func (a *app) familyID() string {
	if a.family != "" {
		return a.family
	}
	return discovery.Family(a.getenv)
}

// dirs lists the socket directories that exist.
func (a *app) dirs() []string { return discovery.SocketDirs(a.getenv, a.socketDirs) }

// resolve turns a TARGET into an endpoint: an address is parsed; a name is
// looked up in the socket directories.
func (a *app) resolve(arg string) (target, error) {
	ep, err := ipc.ParseEndpoint(arg)
	if err == nil {
		return target{Arg: arg, Name: ep.String(), Endpoint: ep}, nil
	}
	if !errors.Is(err, ipc.ErrNotAddress) {
		return target{}, usageErr(err)
	}
	dirs := a.dirs()
	path, err := discovery.ResolveName(dirs, arg, a.familyID())
	if err != nil {
		var nf *discovery.NotFoundError
		if errors.As(err, &nf) {
			if t, ok := a.lookupWide(arg); ok { // Songbird, env, manifests, config
				return t, nil
			}
		}
		if errors.As(err, &nf) && len(nf.Dirs) == 0 {
			nf.Dirs = nil
		}
		return target{}, err
	}
	t := target{Arg: arg, Name: arg, Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}}
	// NAME resolved to NAME-<family>.sock: split as discovery does, with
	// NAME as one more known primal (a longer known name still wins:
	// "neural" finding neural-api.sock is no family "api").
	_, t.Family = discovery.NewFamilyMatcher([]string{arg}).Split(strings.TrimSuffix(filepath.Base(path), ".sock"))
	return t, nil
}

// options returns the ipc options the global flags ask for.
func (a *app) options(t target) (ipc.Options, error) {
	w, err := ipc.ParseWire(a.wire)
	if err != nil {
		return ipc.Options{}, usageErr(err)
	}
	if a.maxFrame <= 0 {
		return ipc.Options{}, usageErr(fmt.Errorf("--max-frame must be positive"))
	}
	sec, err := a.security()
	if err != nil {
		return ipc.Options{}, err
	}
	sec.FamilyScoped = sec.FamilyScoped || a.familyScoped(t.Endpoint, t.Family)
	return ipc.Options{Wire: w, MaxFrame: a.maxFrame, Endpoint: t.Name, Security: sec}, nil
}

// dial resolves and connects a TARGET.
func (a *app) dial(ctx context.Context, arg string, trace func(ipc.TraceEvent)) (*ipc.Conn, target, error) {
	t, err := a.resolve(arg)
	if err != nil {
		return nil, t, err
	}
	opts, err := a.options(t)
	if err != nil {
		return nil, t, err
	}
	opts.Trace = trace
	// A holon that speaks first waits for an answer to its Hello; a
	// one-shot command answers it (and "method not found" to anything else
	// a peer asks) so the peer never waits on us.
	opts.Handler = func(_ context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
		res, rerr := events.DefaultAnswer(m)
		return res, rerr, true
	}
	c, err := ipc.Dial(ctx, t.Endpoint, opts)
	if err != nil {
		return nil, t, err
	}
	return c, t, nil
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
