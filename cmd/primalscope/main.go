// Command primalscope explores a live primal ecosystem: it finds every primal,
// registry and bus, shows what each can do, calls any method by hand, and
// tails heartbeats and events.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func main() {
	peer.WorkerMain() // as a stdio Bus worker or daemon (the demo's bus), serve and exit
	// The stop function is not called: os.Exit ends the signal handling
	// with the process, and stopping it first would wait for a round trip
	// per signal to the runtime's signal thread (about 0.25 ms of CPU in a
	// one-shot call).
	ctx, _ := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	os.Exit(run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}, os.Getenv, os.Environ()))
}

// stdio is the process's standard streams, replaceable in tests.
type stdio struct {
	in       io.Reader
	out, err io.Writer
	// terminal, when set, says which of out and err is a terminal (tests
	// stand in for one with it); nil asks the OS (app.terminal).
	terminal func(io.Writer) bool
}

// app holds the global flags and what every command shares.
type app struct {
	io      *stdio
	getenv  func(string) string
	environ []string
	args    []string // the command line, as run got it

	socketDirs []string
	// scope, when set, narrows discovery (the demo keeps to its own
	// ecosystem).
	scope       func(*discovery.Options)
	family      string
	timeout     time.Duration
	wire        string
	theme       string
	color       string
	noColor     bool
	maxFrame    int64
	historyPath string
	noHistory   bool

	// BTSP and the riboCipher prefix (transport.go).
	seedFile string
	// demoSeed is the demo's own family and seed file while the demo runs
	// (demo.go): it always reaches its own sockets with them.
	demoSeed   *familySeed
	prefix     string
	btspCipher string
	sec        *securityState
	// insecure is --insecure: TLS certificates of wss:// peers unchecked.
	insecure bool
	// Who may serve sockets, and how far discovery reaches (trust.go).
	trust trustFlags
	// dl is the one dialer, made from the flags on first use (target.go).
	dl *dial.Dialer
	// running is the command being run ("primalscope call"; noteRunning).
	running string
	// stateWarned: what is wrong with the state folder was said
	// (warnStateFolder), once a command.
	stateWarned atomic.Bool
	// bounded: the command runs under --timeout (boundOneShot), so it
	// flushes the endpoint memory itself, within its deadline.
	bounded bool

	// The config file, read once by config() (discover.go).
	cfgOnce sync.Once
	cfg     *config.Config
	cfgErr  error
	cfgDone atomic.Bool // cfg is set
}

// run executes one command line and returns the process exit code.
func run(ctx context.Context, args []string, s *stdio, getenv func(string) string, environ []string) int {
	a := &app{io: s, getenv: getenv, environ: environ, args: args}
	root := a.rootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	a.closeMemory()
	if err == nil {
		return 0
	}
	code := exitCode(err)
	if !isQuiet(err) {
		fmt.Fprintln(s.err, "primalscope: "+render.SanitizeMultiline(err.Error()))
	}
	return code
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "primalscope",
		Short: "Explore a live primal ecosystem: find, inspect, call and watch primals",
		Long: `primalscope finds every primal, registry and bus on this machine (and beyond,
over TCP and WebSocket), shows what each can do, lets you compose and send
calls, and tails heartbeats and events while compositions run.

TARGET is a primal name, a capability domain (ai), a family-scoped name
(beardog-FAMILY, beardog@FAMILY), a stdio Bus pool (stdiobus/echo), a
socket path, unix:///path, tcp://host:port, host:port, ws://host:port/rpc,
wss://..., stdio:"command args" or @abstract: help targets lists them all.

Exit codes: 0 ok; 1 the peer answered with a JSON-RPC error; 2 bad usage or
bad input; 3 cannot connect or the transport broke; 4 timed out; 5 refused
for security (BTSP required and no seed, handshake failed, bad signature).

More: primalscope help targets | exit-codes | config.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runTUI(cmd.Context(), false)
		},
	}
	pf := root.PersistentFlags()
	pf.StringArrayVar(&a.socketDirs, "socket-dir", nil, "socket directory to search (repeatable; default: $BIOMEOS_SOCKET_DIR, $XDG_RUNTIME_DIR/biomeos, $XDG_RUNTIME_DIR/membrane, /tmp/biomeos, /run/membrane)")
	pf.StringVar(&a.family, "family", "", "family id to prefer for family-scoped sockets (default $FAMILY_ID)")
	pf.DurationVar(&a.timeout, "timeout", 10*time.Second, "how long to wait for an answer")
	pf.StringVar(&a.wire, "wire", "auto", "wire to speak: auto, jsonrpc, lean or holon")
	pf.StringVar(&a.theme, "theme", "", "colour theme: dark, light, high-contrast or a user theme (default: from the terminal background)")
	pf.StringVar(&a.color, "color", "auto", "colour output: auto (on a terminal, unless NO_COLOR), always (even with NO_COLOR) or never")
	pf.BoolVar(&a.noColor, "no-color", false, "no colour (same as --color never; beats --color always)")
	pf.Int64Var(&a.maxFrame, "max-frame", ipc.DefaultMaxFrame, "largest message accepted from a peer, in bytes")
	pf.StringVar(&a.historyPath, "history", "", "history database (default $PRIMALSCOPE_HISTORY or $XDG_STATE_HOME/primalscope/history.db)")
	pf.BoolVar(&a.noHistory, "no-history", false, "do not record calls")
	a.securityFlags(pf)
	a.trust.add(pf)

	root.AddCommand(a.commands(
		a.callCmd, a.capsCmd, a.demoCmd,
		// Commands of other concerns register here, one line each.
		a.historyCmd, a.replayCmd,
		a.lsCmd, a.checkCmd, a.mapCmd,
		a.tailCmd, a.runCmd, a.mockCmd,
	)...)
	a.holonFlags(root)  // --insecure for wss://
	a.noteRunning(root) // which command runs, for what peers are told
	// The streams before shellFit: cobra's completion command, built there,
	// keeps the writer it finds then.
	root.SetIn(a.io.in)
	root.SetOut(a.io.out)
	root.SetErr(a.io.err)
	skipCompletionCmd(root, a.args)
	a.shellFit(root) // version, help topics, completion, usage errors (exit 2)
	// --timeout bounds each one-shot command whole (deadline.go); keep last.
	a.boundOneShot(root)
	return root
}

// commands builds root's commands in order, but when the command line
// starts with the name of one of them it stops there and returns only that
// one: the others are never run, and building them all (their flags, the
// examples and completions shellFit adds to each) costs a one-shot call
// about 0.15 ms. Any other command line (help, completion, flags first, a
// mistyped name that cobra suggests a command for) gets them all.
func (a *app) commands(build ...func() *cobra.Command) []*cobra.Command {
	var all []*cobra.Command
	for _, b := range build {
		c := b()
		if len(a.args) > 0 && c.Name() == a.args[0] {
			return []*cobra.Command{c}
		}
		all = append(all, c)
	}
	return all
}

// argsFor wraps a cobra argument validator so its failures are usage errors.
func argsFor(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageErr(fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath()))
		}
		return nil
	}
}

// skipCompletionCmd spares a command line that starts with one of root's own
// subcommands (call, ls, ...) the building of cobra's `completion` command,
// which cobra otherwise does at every start: only the root reaches it (its
// help, `completion` itself, shell completion requests). About 3 % of the
// page faults of a one-shot call.
func skipCompletionCmd(root *cobra.Command, args []string) {
	if len(args) == 0 {
		return
	}
	switch args[0] {
	case "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return
	}
	if namesCommand(root, args) {
		root.CompletionOptions.DisableDefaultCmd = true
	}
}

// namesCommand reports whether the command line starts with the name (or
// an alias) of one of root's subcommands, which then runs instead of root.
func namesCommand(root *cobra.Command, args []string) bool {
	if len(args) == 0 {
		return false
	}
	for _, c := range root.Commands() {
		if c.Name() == args[0] || c.HasAlias(args[0]) {
			return true
		}
	}
	return false
}
