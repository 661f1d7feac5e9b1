package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// NeuralPrimal is one primal the biomeOS Neural API reports.
type NeuralPrimal struct {
	Name     string       `json:"name"`
	State    string       `json:"state,omitempty"`
	Endpoint ipc.Endpoint `json:"endpoint"`
	PID      int64        `json:"pid,omitempty"`
}

// ParseNeuralPrimals reads lifecycle.status ({primals:[{name, state,
// details}], count, healthy}), topology.primals (a list, or {primals:[...]},
// of objects with a name and a socket) or lifecycle.get ({name?,
// socket_path, pid, state}).
func ParseNeuralPrimals(result json.RawMessage) ([]NeuralPrimal, error) {
	// A list (or a list under primals or nodes) is read one entry at a time
	// and cut at MaxRegistryEntries (a *CutError with what was kept).
	var out []NeuralPrimal
	add := func(e any) {
		if m, ok := e.(map[string]any); ok {
			if p, ok := neuralPrimal(m); ok {
				out = append(out, p)
			}
		}
	}
	err := eachEntry(result, []string{"primals", "nodes"}, MaxRegistryEntries, add)
	var cut *CutError
	if err == nil || errors.As(err, &cut) {
		return out, err
	}
	// The other shapes: primals as a map by name, or lifecycle.get's one
	// primal (bounded by the connection's frame limit).
	v, derr := decodeAny(result)
	if derr != nil {
		return nil, derr
	}
	x, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("neither an object nor a list")
	}
	var arr []any
	if m, ok := x["primals"].(map[string]any); ok {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if o, ok := m[k].(map[string]any); ok {
				if _, has := o["name"]; !has {
					o["name"] = k
				}
				arr = append(arr, o)
			}
		}
	} else {
		arr = []any{x} // lifecycle.get: one primal
	}
	out = nil
	for _, e := range arr {
		if len(out) >= MaxRegistryEntries {
			return out, &CutError{Kept: MaxRegistryEntries}
		}
		add(e)
	}
	return out, nil
}

// neuralPrimal reads one primal object of the Neural API's answers.
func neuralPrimal(m map[string]any) (NeuralPrimal, bool) {
	p := NeuralPrimal{Name: cleanName(str(m, "name", "primal", "primal_id", "id")), State: cleanName(str(m, "state", "status"))}
	p.PID, _ = num(m["pid"])
	src := m
	if d, ok := m["details"].(map[string]any); ok {
		if p.PID == 0 {
			p.PID, _ = num(d["pid"])
		}
		if firstOf(m, "socket_path", "socket", "endpoint") == nil {
			src = d
		}
	}
	if ev := firstOf(src, "socket_path", "socket", "endpoint", "native_endpoint"); ev != nil {
		p.Endpoint, _ = endpointFrom(ev)
	}
	return p, p.Name != ""
}

// NeuralSource asks the biomeOS Neural API which primals it runs:
// topology.primals and lifecycle.status, then lifecycle.get for each primal
// whose socket neither answer gave.
type NeuralSource struct {
	Endpoint ipc.Endpoint
	Label    string
	Timeout  time.Duration
	// MaxGet bounds the lifecycle.get calls per sweep (default 64).
	MaxGet int
	// Security is how to speak to the Neural API (see Registry.Security):
	// neural-api-<family>.sock gets nothing in cleartext.
	Security ipc.Security
}

// Name implements Source.
func (s *NeuralSource) Name() string { return SrcNeural }

// Discover implements Source.
func (s *NeuralSource) Discover(ctx context.Context) ([]Found, error) {
	label := s.Label
	if label == "" {
		label = s.Endpoint.String()
	}
	reg := Registry{Endpoint: s.Endpoint, Timeout: s.Timeout, Security: s.Security}
	byName := map[string]*NeuralPrimal{}
	var order []string
	var errs []error
	err := reg.session(ctx, func(c *ipc.Conn) error {
		okAny := false
		for _, m := range []string{"topology.primals", "lifecycle.status"} {
			res, err := reg.call(ctx, c, m, nil)
			if err != nil {
				errs = append(errs, err)
				var be *ipc.BTSPRequiredError
				var ce *ipc.ClosedError
				if errors.As(err, &be) || errors.As(err, &ce) {
					return nil
				}
				continue
			}
			ps, err := ParseNeuralPrimals(res)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", m, err))
				if cut := (*CutError)(nil); !errors.As(err, &cut) {
					continue
				}
			}
			okAny = true
			for _, p := range ps {
				q := byName[p.Name]
				if q == nil {
					p := p
					byName[p.Name] = &p
					order = append(order, p.Name)
					continue
				}
				if q.Endpoint.Transport == "" {
					q.Endpoint = p.Endpoint
				}
				if q.State == "" {
					q.State = p.State
				}
			}
		}
		if okAny {
			errs = nil
		}
		max := s.MaxGet
		if max <= 0 {
			max = 64
		}
		for _, n := range order {
			p := byName[n]
			if p.Endpoint.Transport != "" || max == 0 || ctx.Err() != nil {
				continue
			}
			max--
			res, err := reg.call(ctx, c, "lifecycle.get", map[string]string{"name": n})
			if err != nil {
				continue
			}
			if ps, _ := ParseNeuralPrimals(res); len(ps) > 0 {
				p.Endpoint = ps[0].Endpoint
				if ps[0].State != "" {
					p.State = ps[0].State
				}
			}
		}
		return nil
	})
	if lockedWithoutSeed(err) {
		return nil, nil // listed as locked, with what to set, by its own probe
	}
	if err != nil {
		return nil, fmt.Errorf("neural api %s: %w", label, err)
	}
	var out []Found
	for _, n := range order {
		p := byName[n]
		f := Found{Endpoint: p.Endpoint, Name: p.Name, Source: SrcNeural, Detail: label, Kind: kindForName(p.Name)}
		if p.State != "" && p.State != "running" && p.State != "up" && p.State != "healthy" {
			f.Note = "neural api says " + p.State
		}
		if p.Endpoint.Transport == "" {
			f.NoProbe = true
		}
		out = append(out, f)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("neural api %s: %w", label, errors.Join(errs...))
	}
	return out, nil
}
