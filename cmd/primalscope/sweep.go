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
// so that what it found is printed as soon as every target is judged, and
// within --timeout. Without --stale, a target that accepts but stays silent
// while every other one has been judged is not waited for until its whole
// probe timeout: it is judged stale early and said to be cut off
// (discovery.SweepUntilJudged; reportCutOff names it). With --stale, each
// target gets that long. The sweep ends a tenth of the budget (at most
// maxPrintReserve) before the command's deadline. A sweep cut there is no
// error: the targets it could not judge say so ("not probed yet", "probe
// cut short"), and cut reports it so the command prints everything and
// then exits 4 (see cutShort).
func (a *app) sweepWithin(ctx context.Context, d *discovery.Discoverer, df discoverFlags) (snap *discovery.Snapshot, cut bool, err error) {
	sctx := ctx
	if dl, ok := ctx.Deadline(); ok {
		reserve := min(time.Until(dl)/10, maxPrintReserve)
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	if df.stale > 0 {
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

// reportCutOff names on stderr the targets judged stale before their own
// probe timeout because every other target had been judged (see
// sweepWithin), and how to wait for them.
func (a *app) reportCutOff(ts []*discovery.Target) {
	for _, t := range ts {
		if t.Probe != nil && t.Probe.CutOff {
			fmt.Fprintf(a.io.err, "primalscope: %s: %s; --stale waits the whole timeout\n", render.Sanitize(t.Name), render.Sanitize(t.Probe.Err))
		}
	}
}
