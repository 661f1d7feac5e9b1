package discovery

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// Lookup finds a target by name, alias or address in every source, without
// probing it: for names no socket file carries, such as a TCP primal known
// only to Songbird, an env variable, a manifest or a config-file target.
// Registries found are asked (bounded by the stale timeout). When several
// targets carry the name, the one of the preferred family wins; otherwise
// the name is ambiguous. A name found nowhere is a *NotFoundError.
func (d *Discoverer) Lookup(ctx context.Context, name string) (*Target, error) {
	stale := d.prober.opts.StaleTimeout
	ctx, cancel := context.WithTimeout(ctx, stale)
	defer cancel()
	ignore := func(string, error) {}
	found := runSources(ctx, d.DefaultSources(), ignore)
	targets := merge(found)
	if !d.opts.NoRegistries {
		regs := registrySources(targets, stale, d.opts.Probe.Security, d.opts.Federation)
		if len(regs) > 0 {
			targets = merge(append(found, runSources(ctx, regs, ignore)...))
		}
	}
	var hits []*Target
	for _, t := range targets {
		if t.HasName(name) && t.Endpoint.Transport != "" && t.Kind != KindTarpc {
			hits = append(hits, t)
		}
	}
	if len(hits) == 0 {
		// A capability: ask the registries who provides it (ipc.discover).
		for _, r := range AskProviders(ctx, targets, name, stale, d.opts.Probe.Security) {
			if r.Endpoint.Transport != "" {
				t := merge([]Found{{Endpoint: r.Endpoint, Name: r.PrimalID, Source: SrcSongbird, Capabilities: r.Capabilities}})[0]
				t.Aliases = append(t.Aliases, name)
				return t, nil
			}
		}
	}
	switch {
	case len(hits) == 1:
		return hits[0], nil
	case len(hits) > 1:
		var fam []*Target
		for _, t := range hits {
			if d.opts.Family != "" && t.Family == d.opts.Family {
				fam = append(fam, t)
			}
		}
		if len(fam) == 1 {
			return fam[0], nil
		}
		var addrs []string
		for _, t := range hits {
			addrs = append(addrs, t.Address)
		}
		sort.Strings(addrs)
		return nil, fmt.Errorf("%q is ambiguous: %s (choose one with --family or give the address)", name, strings.Join(addrs, ", "))
	}
	if ctx.Err() != nil {
		// Cut (by the caller or the stale timeout) before every source
		// answered: not known to be nowhere.
		return nil, fmt.Errorf("look up %q: not every source answered in time: %w", name, ctx.Err())
	}
	return nil, &NotFoundError{Name: name, Dirs: d.Dirs()}
}

// AskProviders asks every Songbird registry among targets which primals
// provide capability (ipc.discover), each within timeout, and returns what
// they say (a registry that cannot answer is skipped). sec is how to speak
// to them (see Registry.Security).
func AskProviders(ctx context.Context, targets []*Target, capability string, timeout time.Duration, sec ipc.Security) []Registration {
	var out []Registration
	seen := map[string]bool{}
	for _, t := range targets {
		if t.Kind != KindRegistry || t.NoProbe || t.Endpoint.Transport == "" {
			continue
		}
		if st := t.State(); st != StateLive && st != StateUnknown {
			continue
		}
		r := Registry{Endpoint: t.Endpoint, Timeout: timeout, Security: scopedSecurity(sec, t.Endpoint, t.Family)}
		regs, _ := r.Discover(ctx, capability)
		for _, g := range regs {
			if k := g.PrimalID + "|" + g.Endpoint.String(); !seen[k] {
				seen[k] = true
				out = append(out, g)
			}
		}
	}
	return out
}
