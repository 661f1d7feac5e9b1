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
	v, err := decodeAny(result)
	if err != nil {
		return nil, err
	}
	var arr []any
	switch x := v.(type) {
	case []any:
		arr = x
	case map[string]any:
		if a, ok := x["primals"].([]any); ok {
			arr = a
		} else if a, ok := x["nodes"].([]any); ok {
			arr = a
		} else if m, ok := x["primals"].(map[string]any); ok {
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
	default:
		return nil, errors.New("neither an object nor a list")
	}
	var out []NeuralPrimal
	for _, e := range arr {
		m, ok := e.(map[string]any)
		if !ok || len(out) >= MaxRegistryEntries {
			continue
		}
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
		if p.Name == "" {
			continue
		}
		out = append(out, p)
	}
	return out, nil
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
				continue
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
