package tui

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// programContext is what every pane shares (in the spirit of gh-dash's
// ProgramContext): the configuration, the theme's styles, the keys, the
// screen's size, the domain snapshots (the targets and the current one),
// the status line, and the ways out to I/O (client, history), which panes
// use only from commands. The root model owns it; panes read it and change
// only the status line and the call sequence.
type programContext struct {
	ctx    context.Context
	cfg    *Config
	keys   *KeyMap
	st     *styles
	now    func() time.Time
	client *client
	hist   History

	// screenW and screenH are the terminal's size.
	screenW, screenH int
	// focus is the pane that has the keyboard.
	focus paneID

	// targets is every target known, by key; current is the key of the
	// one the caps pane and the composer work on.
	targets map[string]*target
	current string
	// gone is the current target after it left discovery: it keeps its
	// place in the caps pane and the composer, shown as gone, until the
	// user picks another (or it comes back).
	gone *target

	status    string
	statusErr bool
	// lastErr is the last error the status line said, kept after the line
	// moves on, for the Message key.
	lastErr string

	// seq numbers what is opened in the response viewer (calls, replays,
	// inspected events), so late answers of older ones are told apart.
	seq int

	// visible reports whether a pane is on screen (as laid out last):
	// panes that cost work to keep current may wait until they are.
	visible func(paneID) bool

	// drawing is true while a frame is drawn: what a pane tells others
	// then is what its last Update worked out (a frame works nothing out).
	drawing bool

	// ticks reports whether panes may run timers of their own (not while
	// a test drives the model by hand).
	ticks func() bool

	// do hands the root an intent (focusMsg, selectMsg, composeMsg...)
	// and returns what it wants done; it is handled at once, so keys typed
	// after it land where the user expects.
	do func(tea.Msg) tea.Cmd
}

// target returns the current target (perhaps gone), or nil.
func (pc *programContext) target() *target {
	if t := pc.targets[pc.current]; t != nil {
		return t
	}
	if pc.gone != nil && pc.gone.ID == pc.current {
		return pc.gone
	}
	return nil
}

// nextSeq numbers something new for the response viewer.
func (pc *programContext) nextSeq() int {
	pc.seq++
	return pc.seq
}

func (pc *programContext) setErr(s string)  { pc.status, pc.statusErr, pc.lastErr = s, true, s }
func (pc *programContext) setInfo(s string) { pc.status, pc.statusErr = s, false }

// narrow reports whether only one pane (and the composer) fit.
func (pc *programContext) narrow() bool { return pc.screenW < 110 || pc.screenH < 30 }

// callTimeout bounds one call (Config.Timeout, 30 s when zero).
func (pc *programContext) callTimeout() time.Duration {
	if pc.cfg.Timeout > 0 {
		return pc.cfg.Timeout
	}
	return 30 * time.Second
}

// safe turns a panic in a command into a crash report.
func (pc *programContext) safe(c tea.Cmd) tea.Cmd {
	if c == nil {
		return nil
	}
	dir := pc.cfg.CrashDir
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				msg = crashMsg{path: writeCrash(dir, r, debug.Stack())}
			}
		}()
		return c()
	}
}

// writeCrash writes a crash report and returns where it went.
func writeCrash(dir string, r any, stack []byte) string {
	if dir == "" {
		dir = os.TempDir()
	}
	_ = os.MkdirAll(dir, 0o700)
	f, err := os.CreateTemp(dir, "primalscope-crash-*.txt")
	if err != nil {
		return "(could not write a report: " + err.Error() + ")"
	}
	defer f.Close()
	fmt.Fprintf(f, "primalscope crashed at %s\npanic: %v\n\n%s", time.Now().Format(time.RFC3339), r, stack)
	return f.Name()
}

// maxClipboard bounds what is sent through OSC 52 (terminals drop more).
const maxClipboard = 1 << 20

// copyText puts s on the terminal's clipboard and says so.
func (pc *programContext) copyText(what, s string) tea.Cmd {
	if len(s) > maxClipboard {
		pc.setErr(fmt.Sprintf("%s is %s: too large for the terminal clipboard (limit %s)", what, human.Bytes(int64(len(s))), human.Bytes(maxClipboard)))
		return nil
	}
	pc.setInfo(fmt.Sprintf("copied %s (%s)", what, human.Bytes(int64(len(s)))))
	return tea.SetClipboard(s)
}

// copyCommand copies a call's command line (history.CommandFor, the CLI's
// export: it makes the same call from any directory), or says why there is
// none; its notes (FAMILY_SEED must be set, …) join the status line.
func (pc *programContext) copyCommand(c history.Command, err error) tea.Cmd {
	if err != nil {
		pc.setErr("cannot copy the call as a command: " + render.Sanitize(err.Error()))
		return nil
	}
	cmd := pc.copyText("command", c.Line)
	if len(c.Notes) > 0 && cmd != nil {
		pc.setInfo(pc.status + " · " + render.Sanitize(strings.Join(c.Notes, "; ")))
	}
	return cmd
}

// targetFor finds the live target a history entry was sent to.
func (pc *programContext) targetFor(name, endpoint string) *target {
	for _, t := range pc.targets {
		if t.Address == endpoint {
			return t
		}
	}
	for _, t := range pc.targets {
		if t.Name == name {
			return t
		}
		for _, a := range t.Aliases {
			if a == name {
				return t
			}
		}
	}
	return nil
}

// Messages commands send back to the root.
type (
	statusMsg struct {
		text string
		err  bool
	}
	crashMsg struct{ path string }
)

// discoveryTargets is every target known, as discovery gave it (for a
// command: the slice is the caller's, the targets are not to be changed).
func (pc *programContext) discoveryTargets() []*discovery.Target {
	out := make([]*discovery.Target, 0, len(pc.targets))
	for _, t := range pc.targets {
		out = append(out, t.Target)
	}
	return out
}
