package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// discoverFlags are the flags ls and check share.
type discoverFlags struct {
	stale  time.Duration
	noProc bool
}

// config is the user's configuration file, read once (internal/config is
// its one reader): discovery, the TUI's keys and the history take their
// sections from it. A broken file is reported once and ignored, so that
// discovery and calls still work (the TUI refuses to start on it, see
// configErr); what the file has that this version does not read is said
// once on stderr.
func (a *app) config() *config.Config {
	a.cfgOnce.Do(func() {
		c, err := config.LoadDefault(a.getenv)
		if err != nil {
			a.cfgErr = err
			fmt.Fprintln(a.io.err, "primalscope: "+render.Sanitize(err.Error())+" (ignored)")
			c = &config.Config{}
		}
		for _, w := range c.Warnings() {
			fmt.Fprintln(a.io.err, "primalscope: warning: config: "+render.Sanitize(w))
		}
		if a.cfgErr == nil {
			config.SaveHistoryCache(a.getenv, c)
		}
		a.cfg = c
		a.cfgDone.Store(true)
	})
	return a.cfg
}

// cfgLoaded says whether the config file has been read whole.
func (a *app) cfgLoaded() bool { return a.cfgDone.Load() }

// configErr is why the config file could not be used (nil when it was,
// or when there is none).
func (a *app) configErr() error {
	a.config()
	return a.cfgErr
}

// discoverer builds a Discoverer from the global flags (the BTSP and
// prefix ones included: with a family seed, family-scoped sockets are
// probed through the handshake), the environment and the config file.
// extra are TARGET arguments that name addresses.
func (a *app) discoverer(f discoverFlags, extra []discovery.Found) (*discovery.Discoverer, error) {
	sec, err := a.security()
	if err != nil {
		return nil, err
	}
	environ := a.environ
	opts := discovery.Options{
		Getenv:     a.getenv,
		Environ:    func() []string { return environ },
		SocketDirs: a.socketDirs,
		Family:     a.familyID(),
		Config:     a.config(),
		Probe:      discovery.ProbeOptions{StaleTimeout: f.stale, Security: sec, MaxFrame: a.maxFrame},
		NoProc:     f.noProc,
		Federation: a.federation(), // trust.go
	}
	if len(extra) > 0 {
		opts.Extra = []discovery.Source{&discovery.StaticSource{Found: extra}}
	}
	if a.scope != nil {
		a.scope(&opts)
	}
	return discovery.New(opts), nil
}

func addDiscoverFlags(fs interface {
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}, f *discoverFlags) {
	fs.DurationVar(&f.stale, "stale", 0, "how long a target has to answer health.liveness before it is stale (default 2s, or stale_timeout in the config file)")
	fs.BoolVar(&f.noProc, "no-proc", false, "do not look for stdio Bus daemons in the process table")
}

// addressArgs turns the TARGET arguments that are addresses into sightings
// (names are looked up among discovered targets instead).
func addressArgs(args []string) ([]discovery.Found, error) {
	var out []discovery.Found
	for _, arg := range args {
		ep, err := ipc.ParseEndpoint(arg)
		if errors.Is(err, ipc.ErrNotAddress) {
			continue
		}
		if err != nil {
			return nil, usageErr(err)
		}
		out = append(out, discovery.Found{Endpoint: ep, Name: arg})
	}
	return out, nil
}

// termWidth is the width to fit tables to: the terminal's, else $COLUMNS,
// else 0 (no limit: output to a pipe is not cut).
func (a *app) termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && term.IsTerminal(f.Fd()) {
		if wd, _, err := term.GetSize(f.Fd()); err == nil && wd > 0 {
			return wd
		}
	}
	if c, err := strconv.Atoi(a.getenv("COLUMNS")); err == nil && c > 0 {
		return c
	}
	return 0
}

// styler colours cells when the output takes colour.
type styler struct{ on bool }

func (a *app) styler(w io.Writer) styler {
	p, err := a.colorProfile(w)
	return styler{on: err == nil && p > colorprofile.Ascii}
}

func (s styler) paint(code, text string) string {
	if !s.on || text == "" {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

// stateText is a health state for people, without colour.
func stateText(st discovery.State) string {
	switch st {
	case discovery.StateLive:
		return "● live"
	case discovery.StateStale:
		return "◌ stale"
	case discovery.StateDead:
		return "✕ dead"
	case discovery.StateLocked:
		return "■ btsp"
	case discovery.StateError:
		return "! error"
	case discovery.StateUnprobed:
		return "· unprobed"
	}
	return "? " + string(st)
}

// stateColor is the SGR colour of a health state.
func stateColor(st discovery.State) string {
	switch st {
	case discovery.StateLive:
		return "32"
	case discovery.StateStale:
		return "33"
	case discovery.StateDead, discovery.StateError:
		return "31"
	case discovery.StateLocked:
		return "35"
	}
	return "2"
}

func (s styler) state(st discovery.State) string { return s.paint(stateColor(st), stateText(st)) }

// table lays out rows to fit width (0 = no limit). Columns are cut from the
// flexible ones first (with an ellipsis), then dropped from the right end of
// the drop order. Cells must already be sanitized; colour is applied by the
// paint function after fitting.
type table struct {
	head []string
	rows [][]string
	flex []bool // may be cut
	left []bool // cut from the left (keep the end: socket file names)
	drop []int  // columns to drop, in order, when cutting is not enough
	// (the first half before flexible columns go below 14 cells)
	paint func(col int, cell string) string
}

func (t *table) render(w io.Writer, width int) {
	n := len(t.head)
	widths := make([]int, n)
	for i, h := range t.head {
		widths[i] = ansi.StringWidth(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if cw := ansi.StringWidth(c); cw > widths[i] {
				widths[i] = cw
			}
		}
	}
	shown := make([]bool, n)
	for i := range shown {
		shown[i] = true
	}
	total := func() int {
		s := 0
		for i, w := range widths {
			if shown[i] {
				s += w + 2
			}
		}
		return s - 2
	}
	if width > 0 {
		// First cut flexible columns to a comfortable width, then drop
		// columns in the drop order, then cut down to a floor.
		cut := func(floor int) {
			for total() > width {
				best := -1
				for i := range widths {
					if shown[i] && t.flex[i] && widths[i] > floor && (best < 0 || widths[i] > widths[best]) {
						best = i
					}
				}
				if best < 0 {
					return
				}
				widths[best]--
			}
		}
		dropped := 0
		drop := func(n int) {
			for ; n > 0 && dropped < len(t.drop) && total() > width; n-- {
				shown[t.drop[dropped]] = false
				dropped++
			}
		}
		cut(28)
		drop(len(t.drop) / 2)
		cut(14)
		drop(len(t.drop))
		cut(6)
	}
	line := func(cells []string, header bool) {
		var b strings.Builder
		first := true
		for i, c := range cells {
			if !shown[i] {
				continue
			}
			if !first {
				b.WriteString("  ")
			}
			first = false
			if ansi.StringWidth(c) > widths[i] {
				if t.left != nil && t.left[i] {
					c = human.Ellipsis + ansi.TruncateLeft(c, ansi.StringWidth(c)-widths[i]+1, "")
				} else {
					c = human.Truncate(c, widths[i])
				}
			}
			pad := widths[i] - ansi.StringWidth(c)
			if !header && t.paint != nil {
				c = t.paint(i, c)
			}
			b.WriteString(c)
			if i < n-1 {
				b.WriteString(strings.Repeat(" ", pad))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	line(t.head, true)
	for _, r := range t.rows {
		line(r, false)
	}
}

// latency renders a round trip for people (human.Duration, as the TUI
// does), blank when none was measured.
func latency(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return human.Duration(d)
}

// lookupWide finds a name that no socket file carries in every other
// source (Songbird registrations, env variables, manifests, the config
// file, stdio Bus daemons in the process table), within ctx: the one
// dialer's Settings.Lookup.
func (a *app) lookupWide(ctx context.Context, arg string) (*discovery.Target, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := a.discoverer(discoverFlags{}, nil)
	if err != nil {
		return nil, err
	}
	t, err := d.Lookup(ctx, arg)
	if err != nil && errors.Is(err, context.DeadlineExceeded) {
		// Its own bound or the command's: a lookup that ran out of time
		// is not "found nowhere" (replay would take it as that).
		return nil, &dial.LookupTimeoutError{Name: arg, Err: err}
	}
	return t, err
}
