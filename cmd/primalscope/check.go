package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/render"
)

func (a *app) checkCmd() *cobra.Command {
	var (
		asJSON  bool
		level   int
		callAll bool
		df      discoverFlags
		jq      jqFlag
	)
	cmd := &cobra.Command{
		Use:   "check [TARGET...] [--json] [--level N] [--call-all]",
		Short: "Audit targets against the Capability Wire Standard; check the composition",
		Long: `Judge each TARGET (default: every target discovery finds that answers)
against the Capability Wire Standard's audit checklist, level 1 to 3, point by
point, with pass or fail and why; plus the naming rules, transport_security,
the BTSP rejection and the signed announcement. Across all discovered targets,
check the composition: every consumed_capabilities entry provided by someone,
the composition's surface (all methods minus consumed ones) and cycles in
operation_dependencies.

Whether every advertised method is really callable is only checked with
--call-all, which calls each one with empty params: methods can have side
effects, so it is never done unasked.

--level N exits 1 when a judged target is below level N (with N = 3, also
when the composition has a gap or a cycle). Targets found but not answering
(stale, dead, BTSP-locked) are listed, and judged only when named.

Without --level, check prints as soon as every target that answers is
judged: one still silent then is listed as not answered yet (cut off), not
judged and not called stale. --level (a gate needs every verdict) and
--stale wait for each probe's own timeout.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if level < 0 || level > 3 {
				return usageErr(fmt.Errorf("--level must be 0 to 3, not %d", level))
			}
			return a.check(cmd.Context(), args, df, asJSON || jq.set(), level, callAll, jq)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the audit as one JSON document")
	cmd.Flags().IntVar(&level, "level", 0, "exit 1 when a judged target is below this level (1-3)")
	cmd.Flags().BoolVar(&callAll, "call-all", false, "call every advertised method with empty params to prove it is callable (methods may have side effects)")
	addDiscoverFlags(cmd.Flags(), &df)
	jq.add(cmd)
	return cmd
}

// checkTarget is one target's audit in check --json.
type checkTarget struct {
	*discovery.Report
	Kind     discovery.Kind `json:"kind"`
	Judged   bool           `json:"judged"`
	NotWhy   string         `json:"not_judged_because,omitempty"`
	Failures []string       `json:"failures,omitempty"`
}

// checkDoc is the check --json document.
type checkDoc struct {
	LevelRequired int                   `json:"level_required,omitempty"`
	CalledAll     bool                  `json:"called_all"`
	Targets       []checkTarget         `json:"targets"`
	Composition   discovery.Composition `json:"composition"`
	// Below lists the judged targets under --level, with the points they fail.
	Below []checkTarget `json:"below"`
	OK    bool          `json:"ok"`
}

func (a *app) check(ctx context.Context, args []string, df discoverFlags, asJSON bool, level int, callAll bool, jq jqFlag) error {
	extra, err := addressArgs(args)
	if err != nil {
		return err
	}
	d, err := a.discoverer(df, extra)
	if err != nil {
		return err
	}
	// A gate (--level) needs a verdict on every target: each probe gets its
	// own whole timeout. Without one, check prints as soon as every target
	// that answers is judged.
	snap, cut, err := a.sweepWithin(ctx, d, df.stale > 0 || level > 0)
	if err != nil {
		return err
	}
	if !asJSON {
		a.reportSourceErrors(snap.Errors)
		a.reportCutOff(snap.Targets, "--stale (or --level)")
	}
	selected, explicit, err := a.selectTargets(ctx, snap, args)
	if err != nil {
		return err
	}
	stale := d.Prober().Options().StaleTimeout
	// The registries below are asked as the prober asks (the seed, the
	// prefix mode, the endpoint memory); --call-all dials through the one
	// dialer. Family-scoped targets get nothing in cleartext either way.
	sec := d.Prober().Options().Security
	if callAll {
		n := 0
		for _, t := range selected {
			if t.State() == discovery.StateLive && t.Probe.Capabilities != nil {
				n++
			}
		}
		fmt.Fprintf(a.io.err, "primalscope: --call-all: calling every advertised method of %d target(s) with empty params; methods may have side effects\n", n)
	}
	doc := checkDoc{LevelRequired: level, CalledAll: callAll, Targets: []checkTarget{}, Below: []checkTarget{}}
	for _, t := range selected {
		opts := discovery.AuditOptions{}
		if callAll && !cut && t.State() == discovery.StateLive && t.Probe.Capabilities != nil {
			calls, err := a.callAll(ctx, t, max(stale, 2*time.Second))
			if err != nil {
				fmt.Fprintln(a.io.err, "primalscope: "+render.Sanitize(err.Error()))
			} else {
				opts.Calls = calls
			}
		}
		rep := discovery.Audit(t, opts)
		standard := t.Kind != discovery.KindLean && t.Kind != discovery.KindBus
		// A named target is judged whatever its state, unless the sweep
		// stopped waiting for it: no answer yet is nothing to judge.
		ct := checkTarget{Report: rep, Kind: t.Kind, Judged: explicit && !cutOff(t) || t.State() == discovery.StateLive && standard}
		if !ct.Judged {
			ct.NotWhy = notJudgedWhy(t)
		}
		for _, p := range rep.Points {
			if p.Result == discovery.Fail && p.Level > 0 && p.Level <= max(level, rep.Level+1) {
				ct.Failures = append(ct.Failures, p.ID)
			}
		}
		doc.Targets = append(doc.Targets, ct)
		if ct.Judged && level > 0 && rep.Level < level {
			doc.Below = append(doc.Below, ct)
		}
	}
	doc.Composition = discovery.Compose(snap.Targets)
	// For each gap, ask the registries whether someone unreachable from
	// here provides it (ipc.discover), by name and by domain.
	for i := range doc.Composition.Gaps {
		if cut {
			break // no time left to ask the registries
		}
		g := &doc.Composition.Gaps[i]
		caps := []string{g.Capability}
		if dom, _, ok := strings.Cut(g.Capability, "."); ok {
			caps = append(caps, dom)
		}
		for _, c := range caps {
			for _, r := range discovery.AskProviders(ctx, snap.Targets, c, stale, sec) {
				if !slices.Contains(g.Registered, r.PrimalID) {
					g.Registered = append(g.Registered, r.PrimalID)
				}
			}
		}
		for j := range doc.Composition.Needs {
			if doc.Composition.Needs[j].Capability == g.Capability {
				doc.Composition.Needs[j].Registered = g.Registered
			}
		}
	}
	doc.OK = len(doc.Below) == 0 && (level < 3 || doc.Composition.Complete)

	if jq.set() {
		if err := a.emitDoc(ctx, jq, doc); err != nil {
			return err
		}
	} else if asJSON {
		if err := a.encodeJSON(a.io.out, doc, true); err != nil {
			return err
		}
	} else {
		a.printCheck(a.io.out, doc, len(snap.Targets))
	}
	if cut {
		return a.cutShort(snap) // 4: not every target could be judged
	}
	if level > 0 && !doc.OK {
		return &quietError{code: exitPeer, err: errors.New("below the required level")}
	}
	return nil
}

// callAll calls every method t advertises with empty params, over one
// connection the one dialer opens (as call would open it): the first call
// alone settles how to speak to the peer, then the rest follow
// (discovery.CallMethods).
func (a *app) callAll(ctx context.Context, t *discovery.Target, timeout time.Duration) (map[string]discovery.CallResult, error) {
	d, err := a.dialer()
	if err != nil {
		return nil, err
	}
	c, err := d.Dial(ctx, dial.FromDiscovery(t), dial.Options{IncomingBuffer: 16})
	if err != nil {
		return nil, fmt.Errorf("call-all %s: %w", t.Name, err)
	}
	defer closeConn(ctx, c)
	return discovery.CallMethods(ctx, c, t.Probe.Capabilities.Methods, t.Pool, timeout), nil
}

// selectTargets picks the targets to audit: those the arguments name (by
// name, alias, path or address; a name is also resolved the way call
// resolves it), or every target discovery found except tarpc sidecars.
func (a *app) selectTargets(ctx context.Context, snap *discovery.Snapshot, args []string) ([]*discovery.Target, bool, error) {
	if len(args) == 0 {
		var out []*discovery.Target
		for _, t := range snap.Targets {
			if t.Kind != discovery.KindTarpc {
				out = append(out, t)
			}
		}
		return out, false, nil
	}
	var out []*discovery.Target
	seen := map[string]bool{}
	for _, arg := range args {
		ts := snap.Resolve(arg)
		if len(ts) == 0 {
			if r, err := a.resolve(ctx, arg); err == nil {
				ts = snap.Resolve(r.Endpoint.String())
			} else {
				return nil, true, err
			}
		}
		if len(ts) == 0 {
			return nil, true, &discovery.NotFoundError{Name: arg, Dirs: snap.Dirs}
		}
		for _, t := range ts {
			if !seen[t.ID] {
				seen[t.ID] = true
				out = append(out, t)
			}
		}
	}
	return out, true, nil
}

func notJudgedWhy(t *discovery.Target) string {
	switch {
	case t.State() == discovery.StateLive && t.Kind == discovery.KindLean:
		return "a lean NDJSON daemon: the Capability Wire Standard does not apply (name it to judge it anyway)"
	case t.State() == discovery.StateLive && t.Kind == discovery.KindBus:
		return "a stdio Bus pool: its workers are not primals (name it to judge it anyway)"
	case t.State() == discovery.StateUnprobed:
		if len(t.Notes) > 0 {
			return "not probed: " + t.Notes[0]
		}
		return "not probed"
	case t.State() == discovery.StateLocked:
		return "BTSP handshake required before JSON-RPC"
	case cutOff(t):
		return "not answered yet: " + t.Probe.Err
	case t.Probe != nil && t.Probe.Err != "":
		return string(t.State()) + ": " + t.Probe.Err
	}
	return string(t.State())
}

func (a *app) printCheck(w io.Writer, doc checkDoc, total int) {
	s := render.Sanitize
	st := a.styler(w)
	mark := map[discovery.Result]string{
		discovery.Pass: st.paint("32", "✓"), discovery.Fail: st.paint("31", "✗"), discovery.Skip: st.paint("2", "-"),
		discovery.Warn: st.paint("33", "!"), discovery.Info: st.paint("2", "i"),
	}
	for _, ct := range doc.Targets {
		r := ct.Report
		if !ct.Judged {
			fmt.Fprintf(w, "%s  %s  not judged: %s\n\n", st.paint("1", s(r.Target)), s(r.Address), s(ct.NotWhy))
			continue
		}
		lvl := fmt.Sprintf("level %d", r.Level)
		if doc.LevelRequired > 0 && r.Level < doc.LevelRequired {
			lvl = st.paint("31", lvl+fmt.Sprintf(" (below %d)", doc.LevelRequired))
		}
		fmt.Fprintf(w, "%s  %s  %s\n", st.paint("1", s(r.Target)), s(r.Address), lvl)
		for _, p := range r.Points {
			tag := "  "
			if p.Level > 0 {
				tag = fmt.Sprintf("L%d", p.Level)
			}
			line := fmt.Sprintf("  %s %s %s", tag, mark[p.Result], p.Text)
			if p.Why != "" {
				line += " — " + s(p.Why)
			}
			fmt.Fprintln(w, line)
		}
		fmt.Fprintln(w)
	}

	c := doc.Composition
	fmt.Fprintf(w, "%s (%d targets)\n", st.paint("1", "Composition"), total)
	if len(c.Needs) == 0 {
		fmt.Fprintln(w, "  no target declares consumed_capabilities")
	}
	for _, n := range c.Needs {
		if len(n.Providers) > 0 {
			fmt.Fprintf(w, "  %s %s  consumed by %s · provided by %s\n", mark[discovery.Pass], s(n.Capability),
				s(strings.Join(n.Consumers, ", ")), s(strings.Join(n.Providers, ", ")))
		} else {
			gap := "provided by nobody (composition gap)"
			if len(n.Registered) > 0 {
				gap = "provided by nobody reachable (composition gap; registered: " + s(strings.Join(n.Registered, ", ")) + ")"
			}
			fmt.Fprintf(w, "  %s %s  consumed by %s · %s\n", mark[discovery.Fail], s(n.Capability),
				s(strings.Join(n.Consumers, ", ")), st.paint("31", gap))
		}
	}
	fmt.Fprintf(w, "  surface: %d methods (all methods minus consumed ones)\n", len(c.Surface))
	if len(c.Cycles) == 0 {
		fmt.Fprintln(w, "  operation_dependencies: no cycles")
	}
	for _, cy := range c.Cycles {
		fmt.Fprintf(w, "  %s cycle in operation_dependencies: %s\n", mark[discovery.Fail], s(strings.Join(cy, " → ")))
	}
	fmt.Fprintln(w)

	judged := 0
	for _, ct := range doc.Targets {
		if ct.Judged {
			judged++
		}
	}
	switch {
	case doc.LevelRequired == 0:
		fmt.Fprintf(w, "%d target(s) judged.\n", judged)
	case len(doc.Below) == 0:
		fmt.Fprintf(w, "%d target(s) judged; all at level %d or above.\n", judged, doc.LevelRequired)
	default:
		var parts []string
		for _, b := range doc.Below {
			parts = append(parts, fmt.Sprintf("%s (level %d; fails %s)", s(b.Target), b.Level, strings.Join(b.Failures, ", ")))
		}
		fmt.Fprintf(w, "%d of %d judged target(s) below level %d: %s\n", len(doc.Below), judged, doc.LevelRequired, strings.Join(parts, "; "))
	}
	if doc.LevelRequired >= 3 && !c.Complete {
		fmt.Fprintf(w, "The composition is incomplete: %d gap(s), %d cycle(s).\n", len(c.Gaps), len(c.Cycles))
	}
}
