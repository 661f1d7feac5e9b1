package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// targetForm is one form of TARGET: an example as the user types it and
// what it means. `help targets` and README's TARGET paragraph list these,
// and a test resolves every example with internal/dial.
type targetForm struct{ example, means string }

// exampleSocketDir stands for a socket directory in targetForms' examples.
const exampleSocketDir = "/run/user/1000/biomeos"

// targetForms are the TARGET forms, names first, then addresses.
var targetForms = []targetForm{
	{"beardog", "a primal name"},
	{"ai", "a capability domain (symlink to a primal)"},
	{"beardog-westgate-tower-155f", "a family-scoped name: <primal>-<family>"},
	{"beardog@westgate-tower-155f", "the same, as the TUI shows it: NAME@FAMILY"},
	{"floatmail/floatmail.sock", "a socket under a socket directory"},
	{"stdiobus/echo", "pool echo of bus stdiobus.sock, as ls shows it"},
	{"stdio_bus@127.0.0.1:9000/echo", "pool echo of a stdio Bus on TCP"},
	{exampleSocketDir + "/stdiobus.sock/echo", "pool echo of the bus at that path"},
	{exampleSocketDir + "/beardog.sock", "a socket path"},
	{"unix://" + exampleSocketDir + "/beardog.sock", "the same, as a URL"},
	{"@beardog", "an abstract Unix socket"},
	{"tcp://127.0.0.1:9200", "TCP"},
	{"127.0.0.1:9200", "TCP, as host:port"},
	{"ws://127.0.0.1:8080/rpc", "Holon-RPC over WebSocket"},
	{"wss://tower.example/rpc", "Holon-RPC over TLS; --insecure skips checks"},
	{`stdio:"beardog server --stdio"`, "spawn it, speak NDJSON on its stdin/stdout"},
}

// targetsHelp is the text of `help targets`: the forms, then how a name is
// found.
func targetsHelp() string {
	var b strings.Builder
	b.WriteString("TARGET, in every command that takes one, is one of:\n\n")
	const col = 32 // the examples' column; a longer example has a line of its own
	for _, f := range targetForms {
		if len(f.example) < col-1 {
			fmt.Fprintf(&b, "  %-*s%s\n", col, f.example, f.means)
		} else {
			fmt.Fprintf(&b, "  %s\n  %-*s%s\n", f.example, col, "", f.means)
		}
	}
	b.WriteString(`
A socket path with /POOL after it, and stdio_bus@HOST:PORT/POOL, reach the
same place from any directory, without --socket-dir or --family: use them
in scripts.

` + targetsNames)
	return b.String()
}

// targetsNames is how `help targets` says a name is found.
const targetsNames = `A name is looked up in the socket directories: --socket-dir (repeatable),
else $BIOMEOS_SOCKET_DIR, $XDG_RUNTIME_DIR/biomeos, $XDG_RUNTIME_DIR/membrane,
/tmp/biomeos, /run/membrane; as <name>.sock, <name>-<family>.sock (the
family from --family, else $FAMILY_ID or $BIOMEOS_FAMILY_ID), or the only
<name>-*.sock there is. Failing that, in the registries (Songbird, the
Neural API), <NAME>_SOCKET variables, manifests and the config file.

Family-scoped sockets: a family id may contain dashes, so a socket name is
split after the longest known primal name (beardog-west-tower-1 is primal
beardog, family west-tower-1), or before a family id already seen. When
neither tells, the primal's own identity.get does: beta-west-tower-1.sock
served by a primal that says "primal": "beta" is listed as primal beta,
family west-tower-1, and both names reach it. Family-scoped sockets demand
a BTSP handshake: give your family's seed with --family-seed-file or
$FAMILY_SEED (it is your family's: --family, else $FAMILY_ID, and never
goes to another family's socket; given with neither, it goes only to
sockets of no family: name the family to use it on one), other families'
in the config file ([families.<id>] seed_file, see help config). A socket
of a family whose seed is not known is refused (exit 5) before connecting.

Shell completion completes TARGET from a short discovery sweep (at most
250 ms, cached a few seconds in $XDG_CACHE_HOME/primalscope), and METHOD
from the target's capabilities.list. See primalscope completion --help.`

// helpTopics are the pages of `primalscope help TOPIC` that are not
// commands; a page's text is made when it is shown.
var helpTopics = map[string]struct {
	short string
	text  func() string
}{
	"targets":    {"What a TARGET can be and how a name is found", targetsHelp},
	"exit-codes": {"What each exit code means, for scripts", func() string { return exitCodesHelp }},
	"config":     {"The config file, environment variables and colour", func() string { return configHelp }},
}

// exitCodesHelp is the text of `help exit-codes`.
const exitCodesHelp = `Every command exits with one of:

  0    ok
  1    the peer answered with a JSON-RPC error (code and message on stderr);
       check --level N: a target below N, or the composition incomplete
       (N = 3); map --fail-on S: an edge in state S; caps: the target
       has no capability list; a failure that
       fits no other code (the history database cannot be read, say)
  2    bad usage or bad input: an unknown command (with suggestions), an
       unknown flag, a bad flag value (--color sometimes, --timeout x,
       --level 7, --outcome maybe), the wrong number of arguments, params
       that are not JSON (the position is shown), a --jq expression that
       does not parse (the position is shown) or fails on the output, an
       unknown call id or saved name, a terminal UI without a terminal
  3    cannot connect, or the transport broke: no socket by that name,
       connection refused, the peer hung up
  4    timed out (--timeout)
  5    refused for security: BTSP required and no family seed (or none
       known for the socket's family), the handshake failed, a BTSP
       session frame refused at any point (it does not authenticate, is
       replayed, or is cleartext inside an encrypted session), a bad
       signature, a seed file others can read, a Unix socket another
       local user serves or owns (--trust-uid); run: a step refused for
       any of these, or whose call would carry a secret (not sent)
  130  interrupted (Ctrl-C)

Usage errors are found before anything is sent: a command that exits 2
never reached a peer.`

// configHelp is the text of `help config`.
const configHelp = `Configuration file: $XDG_CONFIG_HOME/primalscope/config.toml
(~/.config/primalscope/config.toml), TOML, every section optional:

  [discovery]
  socket_dirs   = ["/run/user/1000/biomeos"]
  family        = "westgate-tower-155f"
  stale_timeout = "2s"
  known_primals = ["myprimal"]      # names that split family-scoped sockets
  trust_uids    = [1001, "alice"]   # may serve the sockets you call (--trust-uid)
  federation    = false             # reach other nodes registries name (--federation)

  [[target]]                        # extra endpoints to list and probe
  name     = "tower-songbird"
  endpoint = "tcp://10.0.0.5:9200"

  [[bus]]                           # stdio Bus daemons
  name = "agents"
  unix = "/run/stdiobus/agents.sock"

  [families.westgate-tower-155f]    # another family's BTSP seed
  seed_file = "westgate.seed"       # mode 0600; relative to this file's folder

  [history]                         # enabled, path, max_rows, max_bytes, entry_limit
  [keys]                            # TUI key bindings, e.g. quit = ["q"]

A section or key this version does not read is a warning on stderr (with
the name it was probably meant to be), not an error.

User themes: $XDG_CONFIG_HOME/primalscope/themes/*.toml (--theme NAME).
A relative $XDG_* value is ignored (as the XDG spec says): ~ is used.

Environment:
  BIOMEOS_SOCKET_DIR            socket directory (like --socket-dir)
  FAMILY_ID, BIOMEOS_FAMILY_ID  family id (like --family)
  FAMILY_SEED                   your family's BTSP seed (prefer --family-seed-file)
  <PRIMAL>_SOCKET               where one primal listens
  PRIMALSCOPE_HISTORY           history database (like --history)
  XDG_STATE_HOME                history and endpoint memory (~/.local/state)
  XDG_CACHE_HOME                completion cache (~/.cache)
  PRIMALSCOPE_COMPLETE_SYNC=1   completion re-sweeps an old cache while the
                                shell waits, not in the background
  NO_COLOR                      no colour, unless --color always is given

Colour, one rule for the commands and the TUI: --no-color means none;
--color never means none and --color always means colour (an explicit
flag beats NO_COLOR, as no-color.org asks); --color auto (the default)
means none when NO_COLOR is set to anything, else colour only on a
terminal (CLICOLOR_FORCE=1 forces it).`

// helpCmd is `primalscope help [COMMAND...|TOPIC]`: a command's help as
// cobra gives it, or one of the topics above.
func (a *app) helpCmd(root *cobra.Command) *cobra.Command {
	names := slices.Sorted(maps.Keys(helpTopics))
	var list strings.Builder
	for _, n := range names {
		fmt.Fprintf(&list, "  %-11s %s\n", n, helpTopics[n].short)
	}
	return &cobra.Command{
		Use:   "help [COMMAND|TOPIC]",
		Short: "Help about a command, or a topic: " + strings.Join(names, ", "),
		Long: `Help about any command (primalscope help call), or one of these topics:

` + list.String(),
		Example: `  primalscope help call
  primalscope help history export
  primalscope help targets
  primalscope help exit-codes`,
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			if len(args) == 0 {
				for _, n := range names {
					if strings.HasPrefix(n, toComplete) {
						out = append(out, cobra.CompletionWithDesc(n, helpTopics[n].short))
					}
				}
			}
			parent := root
			if c, _, err := root.Find(args); err == nil && c != nil {
				parent = c
			}
			for _, c := range parent.Commands() {
				if c.IsAvailableCommand() && strings.HasPrefix(c.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(c.Name(), c.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if t, ok := helpTopics[args[0]]; ok {
					_, err := fmt.Fprint(a.io.out, t.text()+"\n")
					return err
				}
			}
			c, rest, err := root.Find(args)
			if err != nil || c == nil || len(rest) > 0 && len(args) > 0 {
				return usageErr(fmt.Errorf("no help for %q: not a command nor a topic (topics: %s)",
					strings.Join(args, " "), strings.Join(names, ", ")))
			}
			c.SetOut(a.io.out)
			return c.Help()
		},
	}
}
