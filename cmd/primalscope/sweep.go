package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// maxPrintReserve caps the share of --timeout a sweep leaves for printing.
const maxPrintReserve = 300 * time.Millisecond

// sweepWithin runs one discovery sweep for a one-shot command (ls, check)
// so that what it found is printed as soon as every target that answers is
// judged, and within --timeout. Unless full, a target that accepts but
// stays silent while every other one has been judged is not waited for
// until its whole probe timeout: it is left unjudged (unknown, cut off;
// discovery.SweepUntilJudged), never called stale, and reportCutOff names
// it. With full (--stale, or a gate such as check --level that needs
// every verdict) each target gets its own whole probe timeout. The sweep
// ends a tenth of the budget (at most maxPrintReserve) before the
// command's deadline. A sweep cut there is no error: the targets it could
// not judge say so ("not probed yet", "probe cut short"), and cut reports
// it so the command prints everything and then exits 4 (see cutShort).
func (a *app) sweepWithin(ctx context.Context, d *discovery.Discoverer, full bool) (snap *discovery.Snapshot, cut bool, err error) {
	sctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		reserve := min(time.Until(dl)/10, maxPrintReserve)
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	if full {
		snap, err = d.Sweep(sctx, nil)
	} else {
		snap, err = d.SweepUntilJudged(sctx, nil)
	}
	if err != nil && snap != nil && ctx.Err() == nil && sctx.Err() != nil {
		return snap, true, nil
	}
	return snap, false, err
}

// cutShort says on stderr that the sweep ran out of --timeout, and how
// many targets were left unjudged, after the command printed what it had;
// its error exits 4.
func (a *app) cutShort(snap *discovery.Snapshot) error {
	n := 0
	for _, t := range snap.Targets {
		if t.Probe == nil || t.Probe.Incomplete {
			n++
		}
	}
	fmt.Fprintf(a.io.err, "primalscope: --timeout (%s) ran out: %d target(s) not probed or cut short, shown as unknown; a longer --timeout judges them\n", a.timeout, n)
	return &quietError{code: exitTimeout, err: fmt.Errorf("the sweep ran out of --timeout (%s)", a.timeout)}
}

// reportCutOff names on stderr the targets left unjudged because they had
// not answered when every other target had been judged (see sweepWithin),
// and how to wait for them.
func (a *app) reportCutOff(ts []*discovery.Target, how string) {
	for _, t := range ts {
		if cutOff(t) {
			fmt.Fprintf(a.io.err, "primalscope: %s: not answered yet, not judged: %s; %s waits the whole probe timeout\n", render.Sanitize(t.Name), render.Sanitize(t.Probe.Err), how)
		}
	}
}

// cutOff reports a target whose probe the sweep stopped waiting for
// (discovery.Probe.CutOff): not answered yet, no verdict.
func cutOff(t *discovery.Target) bool { return t.Probe != nil && t.Probe.CutOff }
