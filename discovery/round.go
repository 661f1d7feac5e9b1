package discovery

import (
	"context"
	"slices"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// A watcher's liveness round (WatchOptions.HealthEvery) is asked in
// slices: every roundTick, the live Unix-socket targets whose answer is
// oldest, as many as make each one asked once every HealthEvery, rather
// than all of them at the sweep that finds their answers expired (2,000
// probes at once, half a second of CPU in a burst, every round).

// roundSlices is how many slices a round is spread over.
const roundSlices = 30

// minRoundTick bounds the period of the slices from below.
const minRoundTick = 50 * time.Millisecond

// roundTick is the period of the slices of a round of HealthEvery every.
func roundTick(every time.Duration) time.Duration {
	return max(every/roundSlices, minRoundTick)
}

// paced reports whether t's health is asked by the slices of the round:
// a live Unix-socket target judged by a full probe (those a sweep knocks
// on; any other is probed by the sweeps as before).
func paced(t *Target) bool {
	pr := t.Probe
	return pr != nil && pr.State == StateLive && pr.Full && !pr.Incomplete && !t.NoProbe &&
		t.Endpoint.Transport == ipc.Unix && t.Endpoint.Path != ""
}

// askSlice asks health.liveness of the paced targets whose turn it is, a
// tick of a round of every: credit grows by the paced targets' share of a
// tick (n × tick / every) and that many are asked, oldest answer first,
// among those that answered at least every/2 ago (none asked again right
// after a refresh or a sweep asked it; a share not used then is not kept
// beyond one). A target asked keeps its probe (and is not handed out) when
// nothing but times changed; otherwise the new snapshot is returned, as a
// sweep would have judged it (liveness only, its last full probe's
// identity and capabilities carried over). It runs apart from sweeps
// (sweepMu), and returns the credit left.
func (d *Discoverer) askSlice(ctx context.Context, every, tick time.Duration, credit float64) ([]*Target, float64) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	type cand struct {
		t  *Target
		at time.Time
	}
	now := time.Now()
	var due []cand
	n := 0
	d.mu.Lock()
	for id, t := range d.prev {
		if !paced(t) {
			continue
		}
		n++
		at, ok := d.asked[id]
		if !ok {
			at = t.Probe.At
		}
		if now.Sub(at) >= every/2 {
			due = append(due, cand{t, at})
		}
	}
	d.mu.Unlock()
	credit = min(credit+float64(n)*float64(tick)/float64(every), float64(max(len(due), 1)))
	k := min(int(credit), len(due))
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
		d.finishTarget(nt)
		if sameButTimes(c.t, nt) {
			continue
		}
		d.prev[c.t.ID] = nt
		changed = append(changed, nt)
	}
	for id, at := range p.answered {
		d.asked[id] = at
	}
	return changed, credit
}
