package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/x/term"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/internal/runbook"
	"github.com/ecoPrimals/primalscope/tui"
)

// runTUI starts the terminal UI over the ecosystem the flags describe
// (demo marks the built-in simulation in the header).
func (a *app) runTUI(ctx context.Context, demo bool) error {
	title := ""
	if demo {
		title = "demo"
	}
	in, inOK := a.io.in.(*os.File)
	out, outOK := a.io.out.(*os.File)
	if !inOK || !outOK || !term.IsTerminal(in.Fd()) || !term.IsTerminal(out.Fd()) {
		return usageErr(errors.New("the terminal UI needs a terminal; for scripts use ls, caps, call (see --help)"))
	}
	cfg := tui.Config{
		Books:      bookFile{path: tuiBookPath, env: environMap(a.environ)},
		SocketDirs: a.socketDirs,
		Family:     a.familyID(),
		Timeout:    a.timeout,
		MaxFrame:   a.maxFrame,
		Title:      title,
		Getenv:     a.getenv,
	}
	colour, err := a.colorChoice()
	if err != nil {
		return err
	}
	cfg.Color, cfg.NoColor = colour, colour == render.ColorNever
	if a.theme != "" {
		cat := a.themeCatalog()
		if _, err := cat.Lookup(a.theme); err != nil {
			return usageErr(fmt.Errorf("unknown theme %q (there are: %v)", a.theme, cat.Names()))
		}
		cfg.Theme, cfg.Catalog = a.theme, cat
	}
	sec, err := a.security()
	if err != nil {
		return err
	}
	// CanBTSP: some family's seed is known (the user's, the config's, the demo's).
	cfg.Security, cfg.CanBTSP = sec, !sec.Seed.IsZero() || len(sec.Seeds) > 0
	if cfg.Dialer, err = a.dialer(); err != nil { // the one the commands use
		return err
	}
	a.quietWarnings() // the trace shows them; stderr would spoil the screen
	// The same discovery as ls: the config file's targets, the process
	// table's buses, and family-scoped sockets probed through BTSP.
	d, err := a.discoverer(discoverFlags{}, nil)
	if err != nil {
		return err
	}
	cfg.Discoverer = &tui.DiscoveryWatcher{D: d}
	// The keys come from the config file the CLI read once; a broken file
	// stops the TUI (its warning would vanish under the full screen and
	// the user's bindings silently not apply).
	if err := a.configErr(); err != nil {
		return usageErr(err)
	}
	cfg.ConfigPath = paths.ConfigFile(a.getenv)
	cfg.Keys = a.config().Keys
	if !a.historyOff() {
		h, closeHistory := a.tuiHistory(ctx)
		defer closeHistory()
		cfg.History = h
	}
	err = tui.Run(ctx, cfg)
	var ce *tui.CrashError
	if errors.As(err, &ce) {
		fmt.Fprintf(a.io.err, "primalscope: the TUI crashed; the terminal was restored. Please report the bug with %s\n", ce.Report)
		return &quietError{code: 1, err: err}
	}
	return err
}

// Steps reads the book for the composer's book-step key: each step with
// what its vars and the environment fill in.
func (b bookFile) Steps(ctx context.Context) (string, []tui.BookStep, error) {
	abs, err := filepath.Abs(b.path)
	if err != nil {
		abs = b.path
	}
	book, err := runbook.Load(b.path)
	if err == nil {
		err = runbook.Check(book)
	}
	if err != nil {
		return abs, nil, err
	}
	var out []tui.BookStep
	for _, p := range runbook.Previews(ctx, book, b.env) {
		out = append(out, tui.BookStep{Name: p.Name, Target: p.Target, Method: p.Method, Params: p.Params,
			Session: p.Session, Pool: p.Pool, Note: p.Note})
	}
	return abs, out, nil
}

// tuiBookPath is the runbook the TUI's AddToBook key adds calls to, in the
// directory primalscope was started from (run it with primalscope run).
const tuiBookPath = "primalscope-book.yaml"

// bookFile adds calls to one runbook file (runbook.AddTo).
type bookFile struct {
	path string
	env  map[string]string
}

func (b bookFile) Add(_ context.Context, e history.Entry) (string, string, []string, error) {
	step, notes, err := runbook.AddTo(b.path, e)
	if err != nil {
		return "", "", nil, err
	}
	abs, aerr := filepath.Abs(b.path)
	if aerr != nil {
		abs = b.path
	}
	return abs, step, notes, nil
}

// environMap turns KEY=VALUE pairs into a map.
func environMap(environ []string) map[string]string {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
