package discovery

import (
	"context"
	"slices"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// A watcher's liveness round (WatchOptions.HealthEvery) is asked in
// slices: every roundTick, the live Unix-socket targets whose answer is
// oldest, at an even rate that asks each one once a roundPeriod, rather
// than all of them at the sweep that finds their answers expired (2,000
// probes at once, half a second of CPU in a burst, every round).

// roundSlices is how many slices there are in HealthEvery.
const roundSlices = 10

// minRoundTick bounds the period of the slices from below.
const minRoundTick = 50 * time.Millisecond

// roundTick is the period of the slices for HealthEvery every.
func roundTick(every time.Duration) time.Duration {
	return max(every/roundSlices, minRoundTick)
}

// roundPeriod is how often the slices ask each target, for HealthEvery
// every: 2 × every, the staleness bound (a target is asked within
// 2 × HealthEvery of its last answer, plus a tick, from the first sweep
// on). The slices of 2,000 targets then ask 33 a second with HealthEvery
// 30 s: as many as the sweeps asked at rest (every sweep, each 60 s, was
// a round of all), a sixth of what they asked under churn (a sweep every
// 5 s, each a round after the first 30 s), and never all at once.
func roundPeriod(every time.Duration) time.Duration { return 2 * every }

// paced reports whether t's health is asked by the slices of the round:
// a live Unix-socket target judged by a full probe (those a sweep knocks
// on; any other is probed by the sweeps as before).
func paced(t *Target) bool {
	pr := t.Probe
	return pr != nil && pr.State == StateLive && pr.Full && !pr.Incomplete && !t.NoProbe &&
		t.Endpoint.Transport == ipc.Unix && t.Endpoint.Path != ""
}

// askSlice asks health.liveness of the paced targets whose turn it is:
// credit grows by the paced targets' share of elapsed (n × elapsed /
// period, at most n) and that many are asked, oldest answer first, so that
// each is asked once a period at an even rate. A target asked keeps its
// snapshot (nothing to hand out) when nothing but times changed;
// otherwise the new snapshot is returned, as a sweep would have judged it
// (liveness only, its last full probe's identity and capabilities carried
// over). It runs apart from sweeps (sweepMu), and returns the credit left.
func (d *Discoverer) askSlice(ctx context.Context, period, elapsed time.Duration, credit float64) ([]*Target, float64) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	type cand struct {
		t  *Target
		at time.Time
	}
	var due []cand
	d.mu.Lock()
	for id, t := range d.prev {
		if !paced(t) {
			continue
		}
		at, ok := d.asked[id]
		if !ok {
			at = t.Probe.At
		}
		due = append(due, cand{t, at})
	}
	d.mu.Unlock()
	n := len(due)
	credit = min(credit+float64(n)*float64(max(elapsed, 0))/float64(period), float64(n))
	k := int(credit)
	credit -= float64(k)
	if k == 0 {
		return nil, credit
	}
	slices.SortFunc(due, func(a, b cand) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if a.t.ID < b.t.ID {
			return -1
		}
		return 1
	})
	due = due[:k]
	p := &probeRun{d: d, ctx: ctx, backoff: true, probes: map[string]*Probe{}, published: map[string]*Target{}, answered: map[string]time.Time{}}
	var jobs []probeJob
	for _, c := range due {
		spec, carry, skip := d.plan(c.t, true)
		if skip || carry == nil {
			continue
		}
		jobs = append(jobs, probeJob{t: c.t, spec: spec, carry: carry})
	}
	// The workers write p.probes (under p.mu) as soon as the first job runs.
	for _, j := range jobs {
		p.run(j)
	}
	p.wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	var changed []*Target
	for _, c := range due {
		r := p.probes[c.t.ID]
		if r == nil || d.prev[c.t.ID] != c.t {
			continue
		}
		nt := c.t.clone()
		nt.Warnings = slices.Clone(nt.Warnings)
		nt.Probe = r
		d.finishFields(nt)
		nt.Level = c.t.Level // what an audit gives when nothing but times changed
		if sameButTimes(c.t, nt) {
			continue
		}
		d.audit(nt)
		d.prev[c.t.ID] = nt
		changed = append(changed, nt)
	}
	for id, at := range p.answered {
		d.asked[id] = at
	}
	return changed, credit
}
