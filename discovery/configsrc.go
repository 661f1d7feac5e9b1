package discovery

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/readfile"
	"github.com/ecoPrimals/primalscope/ipc"
)

// ConfigSource lists the targets and buses named in primalscope's
// configuration file. Socket targets are probed; a stdio command target is
// only probed (spawned) when the entry says probe = true.
type ConfigSource struct {
	Config *config.Config
}

// Name implements Source.
func (s *ConfigSource) Name() string { return SrcConfig }

// Discover implements Source.
func (s *ConfigSource) Discover(ctx context.Context) ([]Found, error) {
	if s.Config == nil {
		return nil, nil
	}
	detail := s.Config.Path
	if detail == "" {
		detail = "config"
	}
	var out []Found
	var errs []error
	for _, t := range s.Config.Targets {
		ep, err := ipc.ParseEndpoint(t.Endpoint)
		if err != nil {
			errs = append(errs, fmt.Errorf("config target %q: %w", t.Name, err))
			continue
		}
		wire := t.Wire
		if wire == "auto" {
			wire = ""
		}
		f := Found{Endpoint: ep, Name: t.Name, Source: SrcConfig, Detail: detail, Wire: wire, Pool: t.Pool,
			Kind: kindForName(t.Name)}
		if wire == "lean" {
			f.Kind = KindLean
		}
		if t.Pool != "" {
			f.Kind = KindBus
		}
		if ep.Transport == ipc.Stdio && !t.Probe {
			f.NoProbe = true
			f.Note = "a command: not run during discovery (set probe = true to allow)"
		}
		out = append(out, f)
		for _, a := range t.Aliases {
			g := f
			g.Name, g.Alias = a, true
			g.Source = SrcSymlink // an alias, ranked as one
			g.Detail = detail + " (alias)"
			out = append(out, g)
		}
	}
	for _, b := range s.Config.Buses {
		pools := append([]string(nil), b.Pools...)
		if b.Config != "" {
			data, err := readfile.Regular(b.Config, MaxFileRead)
			if err == nil {
				var ps []BusPool
				ps, err = ParseBusConfig(data)
				for _, p := range ps {
					if !contains(pools, p.ID) {
						pools = append(pools, p.ID)
					}
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("config bus %q: %w", b.Name, err))
			}
		}
		sort.Strings(pools)
		var eps []ipc.Endpoint
		if b.Unix != "" {
			eps = append(eps, ipc.Endpoint{Transport: ipc.Unix, Path: b.Unix})
		}
		if b.TCP != "" {
			if ep, err := endpointFrom("tcp://" + strings.TrimPrefix(b.TCP, "tcp://")); err == nil {
				eps = append(eps, ep)
			}
		}
		if b.Command != "" {
			argv, err := ipc.SplitCommand(b.Command)
			if err != nil || len(argv) == 0 {
				errs = append(errs, fmt.Errorf("config bus %q: bad command: %v", b.Name, err))
			} else {
				eps = append(eps, ipc.Endpoint{Transport: ipc.Stdio, Argv: argv})
			}
		}
		for _, ep := range eps {
			fs := busFounds(b.Name, ep, pools, SrcConfig, detail)
			for i := range fs {
				if ep.Transport == ipc.Stdio {
					fs[i].NoProbe = true
					fs[i].Note = "a command: not run during discovery"
				}
			}
			out = append(out, fs...)
		}
	}
	return out, errors.Join(errs...)
}

// StaticSource offers fixed sightings: TARGET arguments given on the command
// line, for example. Their Source is SrcCommandLine unless set.
type StaticSource struct {
	Found []Found
}

// Name implements Source.
func (s *StaticSource) Name() string { return SrcCommandLine }

// Discover implements Source.
func (s *StaticSource) Discover(context.Context) ([]Found, error) {
	out := append([]Found(nil), s.Found...)
	for i := range out {
		if out[i].Source == "" {
			out[i].Source = SrcCommandLine
		}
	}
	return out, nil
}
