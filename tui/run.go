package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// Config says what the TUI shows and how.
type Config struct {
	// Books, when set, is where the history pane's AddToBook key adds a
	// call as a runbook step (nil: the key says it is not available).
	Books Books
	// SocketDirs are explicit --socket-dir values (none: the standard places).
	SocketDirs []string
	// Family is the preferred family id ("" for the default).
	Family string
	// Timeout bounds one call (30 s when zero).
	Timeout time.Duration
	// MaxFrame bounds one incoming message (ipc's default when zero).
	MaxFrame int64
	// Theme names a theme; "" picks dark or light from the terminal background.
	Theme   string
	Catalog *themes.Catalog // themes to choose from (built-ins when nil)
	// NoColor draws without colour (--no-color, --color never, NO_COLOR).
	NoColor bool
	// Color is the outcome of render.DecideColor (the one colour rule of
	// the CLI and the TUI); the zero value decides from NO_COLOR here.
	Color render.ColorChoice
	// Keys remaps actions (see ActionNames) to keys; nil keeps the defaults.
	Keys map[string][]string
	// ConfigPath is shown in the help overlay as where keys are remapped
	// (the config file internal/paths names when empty).
	ConfigPath string
	// History keeps calls; nil turns history off.
	History History
	// Discoverer streams targets; nil watches the socket directories.
	Discoverer Discoverer
	// Dialer is the run's one dialer (the CLI's): every connection the TUI
	// opens goes through it. nil makes one from Security and MaxFrame.
	Dialer *dial.Dialer
	// Dial stands in for the connection step (tests); nil connects.
	Dial Dialer
	// Security is how calls deal with the riboCipher prefix and BTSP
	// (family seed, cipher); the zero value is the plain wire.
	Security ipc.Security
	// CanBTSP says a family seed is available, so targets that demand
	// BTSP can be described, called and listened to.
	CanBTSP bool
	// Title is a badge in the header (for example "demo").
	Title string
	// CrashDir is where crash reports go (the temp dir when empty).
	CrashDir string
	// Input and Output replace the terminal (tests).
	Input  io.Reader
	Output io.Writer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// FPS caps how often the screen is redrawn (DefaultFPS when zero). The
	// renderer wakes this often even when idle, so it is kept modest.
	FPS int
	// NoListen keeps the TUI from connecting to live targets to receive
	// what they push (tests).
	NoListen bool
	// MaxListen bounds how many targets are listened to at once (256); the
	// current target is always listened to.
	MaxListen int
	// EventBuffer and TraceBuffer bound the live panes (10,000 and 5,000).
	EventBuffer, TraceBuffer int
	// LookedIn is where discovery looks (for the empty state);
	// SocketDirsShown is the header's list. Both are filled by Run.
	LookedIn        []string
	SocketDirsShown []string
}

func (c *Config) fill() {
	if c.Getenv == nil {
		c.Getenv = os.Getenv
	}
	if c.EventBuffer <= 0 {
		c.EventBuffer = 10000
	}
	if c.MaxListen <= 0 {
		c.MaxListen = 256
	}
	if c.TraceBuffer <= 0 {
		c.TraceBuffer = 5000
	}
	if c.MaxFrame <= 0 {
		c.MaxFrame = ipc.DefaultMaxFrame
	}
	if c.FPS <= 0 {
		c.FPS = DefaultFPS
	}
	if c.FPS > 120 {
		c.FPS = 120
	}
	if c.NoColor {
		c.Color = render.ColorNever
	}
	if c.Color == render.ColorAuto {
		c.Color, _ = render.DecideColor("auto", false, c.Getenv)
	}
	c.NoColor = c.Color == render.ColorNever
	if c.LookedIn == nil {
		c.LookedIn = discovery.CandidateSocketDirs(c.Getenv, c.SocketDirs)
	}
	if c.SocketDirsShown == nil {
		c.SocketDirsShown = discovery.SocketDirs(c.Getenv, c.SocketDirs)
	}
	if c.Family == "" {
		c.Family = discovery.Family(c.Getenv)
	}
	if c.ConfigPath == "" {
		c.ConfigPath = paths.ConfigFile(c.Getenv)
	}
}

// DefaultFPS is the redraw cap: smooth enough for scrolling and typing, and
// half the idle wake-ups of bubbletea's default 60.
const DefaultFPS = 30

// CrashError is returned by Run when the TUI crashed; the terminal has been
// restored and Report names the crash report.
type CrashError struct{ Report string }

func (e *CrashError) Error() string {
	return "the TUI crashed (a bug): report written to " + e.Report
}

// Books adds recorded calls to a runbook.
type Books interface {
	// Add appends e as a step of the book and says where the book is,
	// what the step is called, and what the user must know (the variables
	// to set for redacted params, say).
	Add(ctx context.Context, e history.Entry) (path, step string, notes []string, err error)
	// Steps reads the book's steps as the composer can take them: target,
	// method and params with what can be filled in (its vars, the
	// environment) filled in.
	Steps(ctx context.Context) (path string, steps []BookStep, err error)
}

// BookStep is one runbook step, ready for the composer.
type BookStep struct {
	Name, Target, Method, Params, Session, Pool string
	// Note says what could not be filled in (a step's outcome it reads).
	Note string
}

// Run shows the TUI until the user quits or ctx ends. It owns every
// goroutine it starts and stops them before returning.
func Run(ctx context.Context, cfg Config) error {
	cfg.fill()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := newModel(ctx, cfg)

	opts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(cfg.FPS)}
	if cfg.Input != nil {
		opts = append(opts, tea.WithInput(cfg.Input))
	}
	if cfg.Output != nil {
		opts = append(opts, tea.WithOutput(cfg.Output))
	}
	switch cfg.Color {
	case render.ColorNever:
		opts = append(opts, tea.WithColorProfile(colorprofile.Ascii))
	case render.ColorAlways: // beats NO_COLOR in the environment
		var out io.Writer = os.Stdout
		if cfg.Output != nil {
			out = cfg.Output
		}
		opts = append(opts, tea.WithColorProfile(cfg.Color.Profile(out, os.Environ())))
	}
	p := tea.NewProgram(m, opts...)
	m.quit = p.Quit
	defer keepMemory(ctx, cfg.Getenv)()

	var wg sync.WaitGroup
	startSources(ctx, &wg, cfg, m.feed)

	_, err := p.Run()
	cancel()
	m.listen.close()
	m.pc.client.close()
	wg.Wait()
	if m.crashed != "" {
		return &CrashError{Report: m.crashed}
	}
	if errors.Is(err, tea.ErrProgramPanic) {
		return fmt.Errorf("the TUI crashed (a bug): %w", err)
	}
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}

// startSources runs the discoverer (and its heartbeats) into the feed.
func startSources(ctx context.Context, wg *sync.WaitGroup, cfg Config, f *feed) {
	d := cfg.Discoverer
	var hb chan events.Event
	if d == nil {
		d = &DiscoveryWatcher{D: discovery.New(discovery.Options{Getenv: cfg.Getenv, SocketDirs: cfg.SocketDirs, Family: cfg.Family})}
	}
	if dw, ok := d.(*DiscoveryWatcher); ok && dw.Heartbeats == nil {
		hb = make(chan events.Event, 256)
		dw.Heartbeats = hb
	}
	targets := make(chan discovery.Event, 64)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := d.Watch(ctx, targets); err != nil && ctx.Err() == nil {
			f.pushWait(ctx, noteLine(time.Now(), "discovery", "discovery stopped", err.Error()))
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case te := <-targets:
				f.pushWait(ctx, te)
			case e := <-hb:
				f.pushLine(newLine("", e))
			}
		}
	}()
}
