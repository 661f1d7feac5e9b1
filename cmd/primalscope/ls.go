package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func (a *app) lsCmd() *cobra.Command {
	var (
		asJSON bool
		watch  bool
		df     discoverFlags
		every  time.Duration
		jq     jqFlag
	)
	cmd := &cobra.Command{
		Use:   "ls [--json] [--watch]",
		Short: "List every target: name, aliases, endpoint, wire, health, latency, level",
		Long: `Find every primal, registry and bus without being told: the socket
directories (family-scoped names, capability symlinks, tarpc sidecars),
<PRIMAL>_SOCKET and <DOMAIN>_SOCKET variables, manifests, socket-registry.json,
Songbird registries (ipc.list, ipc.resolve, discovery.peers), the biomeOS
Neural API, stdio Bus daemons in the process table, lean NDJSON daemons and
the targets of the config file ($XDG_CONFIG_HOME/primalscope/config.toml).
Each is probed (connect within 50 ms, health.liveness within --stale, then
identity and capabilities) and listed once, with every name and source.
The table is printed as soon as every target that answers is judged: one
still silent then shows "no answer yet" (cut off, not stale; stderr says
how long it was waited for); --stale waits for each probe's own timeout.

--watch keeps watching and prints changes as they happen (one JSON object a
line with --json) until interrupted.`,
		Args: argsFor(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if watch {
				return a.lsWatch(cmd.Context(), df, asJSON || jq.set(), every, jq)
			}
			return a.ls(cmd.Context(), df, asJSON || jq.set(), jq)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (one document; one object a line with --watch)")
	cmd.Flags().BoolVarP(&watch, "watch", "w", false, "keep watching and print changes")
	cmd.Flags().DurationVar(&every, "every", 5*time.Second, "with --watch: base period of re-probing (backs off to 60s while nothing changes)")
	addDiscoverFlags(cmd.Flags(), &df)
	jq.add(cmd)
	return cmd
}

// lsTarget is one target in ls --json: the target with its derived facts.
type lsTarget struct {
	*discovery.Target
	State     discovery.State `json:"state"`
	LatencyMS float64         `json:"latency_ms"`
	Wire      string          `json:"wire,omitempty"`
	BTSP      bool            `json:"btsp"`
	// Owner is who serves the socket when it is another local user than
	// you and root, untrusted: calls to it are refused.
	Owner *ipc.PeerIdentity `json:"owner,omitempty"`
}

func toLS(t *discovery.Target) lsTarget {
	return lsTarget{Target: t, State: t.State(), LatencyMS: float64(t.Latency()) / float64(time.Millisecond), Wire: t.Wire(), BTSP: t.BTSP(), Owner: t.ForeignOwner()}
}

// lsDoc is the ls --json document.
type lsDoc struct {
	SocketDirs []string                `json:"socket_dirs"`
	TookMS     float64                 `json:"took_ms"`
	Errors     []discovery.SourceError `json:"errors,omitempty"`
	Targets    []lsTarget              `json:"targets"`
}

func (a *app) ls(ctx context.Context, df discoverFlags, asJSON bool, jq jqFlag) error {
	d, err := a.discoverer(df, nil)
	if err != nil {
		return err
	}
	snap, cut, err := a.sweepWithin(ctx, d, df.stale > 0)
	if err != nil {
		return err
	}
	if err := a.printLs(ctx, snap, asJSON, jq); err != nil || !cut {
		return err
	}
	return a.cutShort(snap)
}

// printLs prints one sweep as ls does: a table, or one JSON document.
func (a *app) printLs(ctx context.Context, snap *discovery.Snapshot, asJSON bool, jq jqFlag) error {
	if asJSON {
		doc := lsDoc{SocketDirs: snap.Dirs, TookMS: float64(snap.Took) / float64(time.Millisecond), Errors: snap.Errors, Targets: []lsTarget{}}
		if doc.SocketDirs == nil {
			doc.SocketDirs = []string{}
		}
		for _, t := range snap.Targets {
			doc.Targets = append(doc.Targets, toLS(t))
		}
		if jq.set() {
			return a.emitDoc(ctx, jq, doc)
		}
		return a.encodeJSON(a.io.out, doc, true)
	}
	a.reportSourceErrors(snap.Errors)
	if len(snap.Targets) == 0 {
		a.noTargets(snap)
		return nil
	}
	a.printTable(a.io.out, snap.Targets)
	a.reportWarnings(snap.Targets)
	a.reportCutOff(snap.Targets, "--stale")
	return nil
}

// reportWarnings prints the security warnings of targets on stderr.
func (a *app) reportWarnings(ts []*discovery.Target) {
	for _, t := range ts {
		for _, w := range t.Warnings {
			fmt.Fprintf(a.io.err, "primalscope: warning: %s: %s\n", render.Sanitize(t.Name), render.Sanitize(w))
		}
	}
}

func (a *app) reportSourceErrors(errs []discovery.SourceError) {
	for _, e := range errs {
		fmt.Fprintf(a.io.err, "primalscope: %s: %s\n", e.Source, render.SanitizeMultiline(e.Err))
	}
}

func (a *app) noTargets(snap *discovery.Snapshot) {
	if len(snap.Dirs) == 0 {
		fmt.Fprintln(a.io.err, "primalscope: no socket directory exists ("+
			strings.Join(discovery.CandidateSocketDirs(a.getenv, a.socketDirs), ", ")+
			"); set --socket-dir or $BIOMEOS_SOCKET_DIR, or try `primalscope demo`")
		return
	}
	fmt.Fprintln(a.io.err, "primalscope: nothing found in "+strings.Join(snap.Dirs, ", "))
}

// sourceList names a target's sources, each once, in a stable order.
func sourceList(t *discovery.Target) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range t.Sources {
		if !seen[s.Source] {
			seen[s.Source] = true
			out = append(out, s.Source)
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func levelCell(t *discovery.Target) string {
	if t.State() != discovery.StateLive {
		return "-"
	}
	return fmt.Sprintf("L%d", t.Level)
}

func btspCell(t *discovery.Target) string {
	if t.BTSP() {
		return "required"
	}
	return ""
}

func (a *app) printTable(w io.Writer, targets []*discovery.Target) {
	s := render.Sanitize
	st := a.styler(w)
	tb := &table{
		head: []string{"NAME", "ALIASES", "FAMILY", "ENDPOINT", "WIRE", "HEALTH", "LATENCY", "LEVEL", "BTSP", "SOURCES"},
		flex: []bool{true, true, true, true, false, false, false, false, false, true},
		left: []bool{false, false, false, true, false, false, false, false, false, false},
		drop: []int{9, 4, 8, 2, 1, 6},
	}
	states := make([]discovery.State, 0, len(targets))
	for _, t := range targets {
		addr := t.Address
		if t.Pool != "" {
			addr += " pool=" + t.Pool
		}
		if o := t.ForeignOwner(); o != nil {
			addr += " owner=" + o.Owner() // served by another user: calls refused (the warning below)
		}
		health := stateText(t.State())
		if cutOff(t) {
			health = "? no answer yet" // not a verdict: the sweep stopped waiting (reportCutOff)
		}
		tb.rows = append(tb.rows, []string{
			s(t.Name), s(strings.Join(t.Aliases, ",")), s(t.Family), s(addr), s(t.Wire()),
			health, latency(t.Latency()), levelCell(t), btspCell(t), sourceList(t),
		})
		states = append(states, t.State())
	}
	row := -1
	tb.paint = func(col int, cell string) string {
		if col == 0 {
			row++
		}
		if col == 5 && row >= 0 && row < len(states) {
			return st.paint(stateColor(states[row]), cell)
		}
		return cell
	}
	tb.render(w, a.termWidth(w))
}

// lsEvent is one line of ls --watch --json.
type lsEvent struct {
	Event   discovery.EventKind `json:"event"`
	Time    time.Time           `json:"time"`
	Changes []string            `json:"changes,omitempty"`
	Target  lsTarget            `json:"target"`
}

func (a *app) lsWatch(ctx context.Context, df discoverFlags, asJSON bool, every time.Duration, jq jqFlag) error {
	d, err := a.discoverer(df, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := d.Watch(ctx, discovery.WatchOptions{Interval: every})
	known := map[string]*discovery.Target{}
	synced := false
	for ev := range events {
		if asJSON {
			if ev.Kind == discovery.Synced {
				continue
			}
			line := lsEvent{Event: ev.Kind, Time: ev.Time, Changes: ev.Changes, Target: toLS(ev.Target)}
			if jq.set() {
				b, err := json.Marshal(line)
				if err == nil {
					err = a.emitJSON(ctx, a.io.out, jq, b, true)
				}
				if err != nil && ctx.Err() == nil {
					return err
				}
				continue
			}
			if err := a.encodeJSON(a.io.out, line, false); err != nil {
				return err // stdout closed: stop
			}
			continue
		}
		switch ev.Kind {
		case discovery.Synced:
			if !synced {
				synced = true
				a.reportSourceErrors(ev.Sweep.Errors)
				var ts []*discovery.Target
				for _, t := range known {
					ts = append(ts, t)
				}
				sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name || ts[i].Name == ts[j].Name && ts[i].ID < ts[j].ID })
				if len(ts) == 0 {
					fmt.Fprintln(a.io.err, "primalscope: nothing found yet; watching")
				} else {
					a.printTable(a.io.out, ts)
				}
				fmt.Fprintln(a.io.out)
			}
		case discovery.Added, discovery.Changed:
			known[ev.Target.ID] = ev.Target
			if synced {
				a.printEvent(ev)
			}
		case discovery.Removed:
			delete(known, ev.Target.ID)
			if synced {
				a.printEvent(ev)
			}
		}
	}
	if ctx.Err() != nil && !asJSON {
		return nil
	}
	return nil
}

func (a *app) printEvent(ev discovery.Event) {
	s := render.Sanitize
	st := a.styler(a.io.out)
	t := ev.Target
	mark := map[discovery.EventKind]string{discovery.Added: st.paint("32", "+"), discovery.Changed: st.paint("33", "~"), discovery.Removed: st.paint("31", "-")}[ev.Kind]
	state := st.state(t.State())
	if ev.Kind == discovery.Removed {
		state = st.paint("2", "gone")
	}
	line := fmt.Sprintf("%s %s %-14s %s  %s", ev.Time.Format("15:04:05"), mark, s(t.Name), state, s(t.Address))
	if t.State() == discovery.StateLive && ev.Kind != discovery.Removed {
		line += fmt.Sprintf("  %s  %s", latency(t.Latency()), levelCell(t))
	}
	if ev.Kind == discovery.Changed {
		line += "  (" + strings.Join(ev.Changes, ", ") + ")"
	} else {
		line += "  [" + sourceList(t) + "]"
	}
	fmt.Fprintln(a.io.out, line)
}
