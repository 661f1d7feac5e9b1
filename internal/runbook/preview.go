package runbook

import (
	"context"
	"encoding/json"
	"strings"
)

// Preview is a step as a person can send it by hand (the TUI's composer):
// its templates filled in from the book's vars and the environment; one
// that reads another step's outcome is left as written, and Note says so.
type Preview struct {
	Name, Target, Method, Params, Session, Pool string
	Note                                        string
}

// Previews returns every step of b that makes a call, in written order.
// Nothing is sent: a step's outcome is not known here.
func Previews(ctx context.Context, b *Book, env map[string]string) []Preview {
	envv := make(map[string]any, len(env))
	for k, v := range env {
		envv[k] = v
	}
	var out []Preview
	for _, s := range b.Steps {
		if s.Skip != "" {
			continue
		}
		scope := map[string]any{"vars": s.Vars, "env": envv, "steps": map[string]any{}}
		var notes []string
		text := func(t string) string {
			if readsSteps(t) {
				notes = append(notes, "fill in what it reads of another step: "+t)
				return t
			}
			if strings.Contains(t, ".item") || strings.Contains(t, ".index") {
				return t
			}
			v, err := renderString(ctx, t, scope, s.Pos)
			if err != nil {
				return t
			}
			return v
		}
		p := Preview{Name: s.Label(), Target: text(s.Target), Method: text(s.Method), Session: text(s.Session), Pool: text(s.Pool)}
		p.Params = "{}"
		if s.Params != nil {
			v := previewValue(ctx, s.Params, scope, s, &notes)
			if b, err := json.Marshal(v); err == nil {
				p.Params = string(b)
			}
		}
		if s.ForEach != "" {
			notes = append(notes, "the book makes this call once per item of "+s.ForEach)
		}
		p.Note = strings.Join(notes, "; ")
		out = append(out, p)
	}
	return out
}

func readsSteps(t string) bool {
	for _, r := range refsIn(t) {
		if r.kind == "steps" {
			return true
		}
	}
	return false
}

// previewValue fills in a params value's templates that read no step.
func previewValue(ctx context.Context, v any, scope map[string]any, s *Step, notes *[]string) any {
	switch x := v.(type) {
	case string:
		if readsSteps(x) {
			*notes = append(*notes, "fill in what it reads of another step: "+x)
			return x
		}
		r, err := renderValue(ctx, x, scope, s.Pos)
		if err != nil {
			return x
		}
		return r
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = previewValue(ctx, e, scope, s, notes)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = previewValue(ctx, e, scope, s, notes)
		}
		return out
	}
	return v
}
