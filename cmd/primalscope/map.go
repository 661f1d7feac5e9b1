package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/composition"
	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func (a *app) mapCmd() *cobra.Command {
	var (
		asJSON, dot, mermaid bool
		hops                 int
		failOn               []string
		df                   discoverFlags
		jq                   jqFlag
	)
	cmd := &cobra.Command{
		Use:   "map [TARGET] [--hops N] [--json] [--dot] [--mermaid] [--fail-on gap|degraded]",
		Short: "Map the composition: who consumes whom, with health and traffic on every edge",
		Long: `Draw the composition of every target discovery finds: each consumer, each
capability it consumes, and who provides it. Edges come from the targets'
declared consumed_capabilities (matched by method and by provided_capabilities
group; registries are asked about capabilities nobody reachable provides),
from the biomeOS Neural API (lifecycle.get depends_on, topology.get), from
deploy graphs (graph.list), and from observed traffic (the Neural API's
metrics and routes, and the calls primalscope itself recorded in history,
drawn from a "you" node). Other nodes that Songbird's discovery.peers names
are asked through their own registries and drawn as their own groups.

Each edge is ok, gap (nobody provides it), degraded (the provider is stale,
unreachable, gone or refuses BTSP), unused (declared, never seen in the
traffic a source reports) or undeclared (seen in traffic, never declared).
Cycles in consumption and in operation_dependencies are named. Where no
source reports traffic the map says so: the figures are absent, not zero.

TARGET limits the map to the nodes within --hops of it, both ways (what it
needs and what needs it). --json prints the contract documented in the
README; --dot and --mermaid print a graph Graphviz and Mermaid render as is.
--fail-on gap|degraded (repeatable, or comma-separated) exits 1 when the map
(with TARGET, its part of it) has such an edge, naming each on stderr: a gate
for CI.`,
		Example: `  primalscope map
  primalscope map squirrel --hops 1
  primalscope map --json --jq '.edges[] | select(.state != "ok")'
  primalscope map --dot | dot -Tsvg > composition.svg
  primalscope map --fail-on gap,degraded`,
		Args: argsFor(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, b := range []bool{asJSON || jq.set(), dot, mermaid} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usageErr(errors.New("--json, --dot and --mermaid go one at a time"))
			}
			if hops < 0 {
				return usageErr(fmt.Errorf("--hops must be 0 or more, not %d", hops))
			}
			if cmd.Flags().Changed("hops") && len(args) == 0 {
				return usageErr(errors.New("--hops counts hops around a TARGET: name one (primalscope map TARGET --hops N)"))
			}
			gates, err := parseFailOn(failOn)
			if err != nil {
				return err
			}
			format := "text"
			switch {
			case asJSON || jq.set():
				format = "json"
			case dot:
				format = "dot"
			case mermaid:
				format = "mermaid"
			}
			return a.mapRun(cmd.Context(), args, df, mapOpts{format: format, hops: hops, gates: gates, federation: a.federation(), jq: jq})
		},
	}
	cmd.Flags().IntVar(&hops, "hops", 2, "with TARGET: how many hops around it, both ways")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the map as JSON (the contract in the README)")
	cmd.Flags().BoolVar(&dot, "dot", false, "print the map in Graphviz's DOT language")
	cmd.Flags().BoolVar(&mermaid, "mermaid", false, "print the map as a Mermaid flowchart")
	cmd.Flags().StringSliceVar(&failOn, "fail-on", nil, "exit 1 when the map has an edge in this state: gap or degraded")
	addDiscoverFlags(cmd.Flags(), &df)
	jq.add(cmd)
	return cmd
}

type mapOpts struct {
	format     string
	hops       int
	gates      []composition.State
	federation bool
	jq         jqFlag
}

func parseFailOn(vals []string) ([]composition.State, error) {
	var out []composition.State
	for _, v := range vals {
		switch s := composition.State(strings.TrimSpace(v)); s {
		case composition.StateGap, composition.StateDegraded:
			out = append(out, s)
		default:
			return nil, usageErr(fmt.Errorf("--fail-on takes gap or degraded, not %q", v))
		}
	}
	return out, nil
}

func (a *app) mapRun(ctx context.Context, args []string, df discoverFlags, o mapOpts) error {
	extra, err := addressArgs(args)
	if err != nil {
		return err
	}
	d, err := a.discoverer(df, extra)
	if err != nil {
		return err
	}
	// A map needs every provider's verdict (a stale one degrades edges):
	// each probe gets its whole timeout, as check --level does.
	snap, cut, err := a.sweepWithin(ctx, d, true)
	if err != nil {
		return err
	}
	if o.format == "text" {
		a.reportSourceErrors(snap.Errors)
	}
	in := composition.Inputs{Targets: snap.Targets, Now: time.Now()}
	var gatherErrs []error
	gatherCut := false
	if !cut {
		dl, err := a.dialer()
		if err != nil {
			return err
		}
		po := d.Prober().Options()
		gctx, cancel := reserveCtx(ctx)
		g := composition.Gather(gctx, dl, snap.Targets, composition.GatherOptions{
			Timeout: max(po.StaleTimeout, time.Second), Security: po.Security, Federation: o.federation, Probe: po})
		gatherCut = errors.Is(gctx.Err(), context.DeadlineExceeded)
		cancel()
		in.Registered, in.Orchestrated, in.Links, in.Graphs = g.Registered, g.Orchestrated, g.Links, g.Graphs
		in.Routes, in.TrafficReported, in.Remote = g.Routes, g.TrafficReported, g.Remote
		gatherErrs = g.Errs
	}
	in.Calls = a.recentCalls(ctx, in.Now.Add(-composition.DefaultWindow))
	g := composition.Build(in)
	if len(args) == 1 {
		id, ok := g.Find(args[0])
		if !ok {
			return &discovery.NotFoundError{Name: args[0], Dirs: snap.Dirs}
		}
		g = composition.Neighborhood(g, id, o.hops)
	}
	if o.format == "text" {
		for _, e := range gatherErrs {
			fmt.Fprintln(a.io.err, "primalscope: map: "+render.Sanitize(e.Error()))
		}
	}
	switch o.format {
	case "json":
		if o.jq.set() {
			err = a.emitDoc(ctx, o.jq, g.Contract())
		} else {
			err = a.encodeJSON(a.io.out, g.Contract(), true)
		}
	case "dot":
		err = composition.WriteDOT(a.io.out, g)
	case "mermaid":
		err = composition.WriteMermaid(a.io.out, g)
	default:
		a.printMap(a.io.out, g)
	}
	if err != nil {
		return err
	}
	if cut {
		return a.cutShort(snap)
	}
	if gatherCut {
		// What the sources did not say in time is missing from the map:
		// no gate passes on it.
		fmt.Fprintf(a.io.err, "primalscope: --timeout (%s) ran out while asking the registries, the Neural API or other nodes: the map may lack their edges; a longer --timeout waits for them\n", a.timeout)
		return &quietError{code: exitTimeout, err: fmt.Errorf("gathering ran out of --timeout (%s)", a.timeout)}
	}
	return a.mapGate(g, o.gates)
}

// reserveCtx leaves a tenth of the time left (at most maxPrintReserve)
// for printing after gathering.
func reserveCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, dl.Add(-min(time.Until(dl)/10, maxPrintReserve)))
	}
	return context.WithCancel(ctx)
}

// recentCalls reads the calls primalscope recorded since, as observed
// calls from the user's node; none when history is off or absent.
func (a *app) recentCalls(ctx context.Context, since time.Time) []composition.Call {
	if a.historyOff() {
		return nil
	}
	path, _, err := a.historyStore()
	if err != nil {
		return nil
	}
	_, errDB := os.Stat(path)
	_, errJournal := os.Stat(history.JournalDir(path))
	if errDB != nil && errJournal != nil {
		return nil // never create a history just to read it
	}
	s, err := a.openHistory(ctx)
	if err != nil {
		return nil
	}
	defer s.Close()
	es, err := s.Search(ctx, history.Query{Since: since, Limit: 10000})
	if err != nil {
		return nil
	}
	out := make([]composition.Call, 0, len(es))
	for _, e := range es {
		out = append(out, composition.FromHistory(e))
	}
	return out
}

// mapGate fails (exit 1) when the map has an edge in a gated state,
// naming each on stderr.
func (a *app) mapGate(g *composition.Graph, gates []composition.State) error {
	var bad []string
	for _, s := range gates {
		for _, e := range g.EdgesIn(s) {
			bad = append(bad, fmt.Sprintf("%s: %s → %s → %s (%s)", s, nodeName(g, e.From),
				composition.CapabilityLabel(e.Capability), nodeName(g, e.To), e.Why))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	for _, b := range bad {
		fmt.Fprintln(a.io.err, "primalscope: map: "+render.Sanitize(b))
	}
	return &quietError{code: exitPeer, err: fmt.Errorf("%d edge(s) in a --fail-on state", len(bad))}
}

func nodeName(g *composition.Graph, id string) string {
	if n, ok := g.Node(id); ok {
		if n.Missing {
			return "nobody"
		}
		return n.Label()
	}
	return id
}

var stateColour = map[composition.State]string{
	composition.StateOK: "32", composition.StateGap: "31", composition.StateDegraded: "33",
	composition.StateUnused: "2", composition.StateUndeclared: "36",
}

// printMap prints the tree: consumer → capability → providers, grouped by
// node and family, then the cycles and a summary.
func (a *app) printMap(w io.Writer, g *composition.Graph) {
	s := render.Sanitize
	st := a.styler(w)
	traffic := "traffic: no source reports any"
	if g.TrafficKnown {
		traffic = "traffic over the last " + g.Window.String()
	}
	fmt.Fprintf(w, "%s  %s, %s; %s\n", st.paint("1", "Composition map"), plural(len(g.Nodes), "node"), plural(len(g.Edges), "edge"), traffic)
	group := "\x00"
	for _, c := range composition.Tree(g) {
		if gr := c.Node.Group(); gr != group {
			group = gr
			fmt.Fprintf(w, "\n%s\n", st.paint("1;4", groupTitle(c.Node)))
		}
		fmt.Fprintf(w, "%s  %s%s\n", st.paint("1", s(c.Node.Label())), nodeState(st, c.Node), stepText(st, c.Node))
		for i, need := range c.Needs {
			branch, cont := "├─", "│ "
			if i == len(c.Needs)-1 {
				branch, cont = "└─", "  "
			}
			fmt.Fprintf(w, "  %s %s\n", branch, s(composition.CapabilityLabel(need.Capability)))
			for j, e := range need.Edges {
				leaf := "├─"
				if j == len(need.Edges)-1 {
					leaf = "└─"
				}
				mark := st.paint(stateColour[e.State], composition.Glyph(e.State)+" "+string(e.State))
				line := fmt.Sprintf("  %s   %s %s  %s", cont, leaf, mark, st.paint("1", s(nodeName(g, e.To))))
				if to, ok := g.Node(e.To); ok && !to.Missing {
					line += "  " + nodeState(st, to)
				}
				line += "  " + st.paint("2", sourcesText(e.Sources))
				if g.TrafficKnown || e.Traffic != nil {
					line += "  " + composition.TrafficText(g, e)
				}
				if e.Why != "" && e.State != composition.StateOK {
					line += "  — " + s(e.Why)
				}
				if e.InCycle {
					line += "  " + st.paint("33", "↻ in a cycle")
				}
				fmt.Fprintln(w, line)
			}
		}
	}
	if alone := composition.Alone(g); len(alone) > 0 {
		names := make([]string, 0, len(alone))
		for _, n := range alone {
			names = append(names, s(n.Label()))
		}
		fmt.Fprintf(w, "\nNeither consuming nor consumed: %s\n", strings.Join(names, ", "))
	}
	if len(g.Cycles) > 0 {
		fmt.Fprintln(w)
		for _, c := range g.Cycles {
			names := make([]string, len(c))
			for i, id := range c {
				names[i] = s(nodeName(g, id))
			}
			fmt.Fprintf(w, "%s cycle: %s\n", st.paint("33", "↻"), strings.Join(names, " → "))
		}
		for _, c := range g.MethodCycles {
			fmt.Fprintf(w, "%s cycle in operation_dependencies: %s\n", st.paint("33", "↻"), s(strings.Join(c, " → ")))
		}
	}
	counts := map[composition.State]int{}
	for _, e := range g.Edges {
		counts[e.State]++
	}
	var parts []string
	for _, st := range []composition.State{composition.StateGap, composition.StateDegraded, composition.StateUndeclared, composition.StateUnused, composition.StateOK} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	if len(parts) == 0 {
		parts = []string{"no edges"}
	}
	fmt.Fprintf(w, "\n%s; %s.\n", strings.Join(parts, ", "), plural(len(g.Cycles), "cycle"))
}

func groupTitle(n *composition.Node) string {
	var parts []string
	if n.Node != "" {
		parts = append(parts, "node "+render.Sanitize(n.Node))
	} else {
		parts = append(parts, "this machine")
	}
	if n.Family != "" {
		parts = append(parts, "family "+render.Sanitize(n.Family))
	}
	return strings.Join(parts, " · ")
}

func nodeState(st styler, n *composition.Node) string {
	if n.Gone {
		return st.paint("2", "gone")
	}
	if n.Kind == composition.KindYou {
		return st.paint("2", "you")
	}
	h := discovery.State(n.Health)
	txt := stateText(h)
	if n.Level > 0 {
		txt += fmt.Sprintf(" L%d", n.Level)
	}
	return st.paint(stateColor(h), txt)
}

func stepText(st styler, n *composition.Node) string {
	if n.Step == "" {
		return ""
	}
	c := "2"
	if n.StepFailed {
		c = "31"
	}
	return "  " + st.paint(c, render.Sanitize(n.Step))
}

func sourcesText(ss []composition.Source) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, "+")
}

// plural says n things: "1 node", "3 nodes", "0 cycles".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
