package runbook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/itchyny/gojq"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// An expression is jq (gojq, the engine --jq and the TUI's filter use) over
// the run's scope: {vars, env, steps: {NAME: {result, error, ms, outcome, status}}, item,
// index} (a for_each step's outcome also holds items, each item's
// outcome in item order), or, for expect.result, retry.until and an event's match, over the
// answer. Every expression also reads the scope as the variables $vars,
// $env, $steps, $item and $index: an expression over an answer compares it
// with another step's as '.id == $steps.create.result.id'. expect.result
// and retry.until also read $error, the call's JSON-RPC error (null when it
// answered a result, and . is null when it answered an error), so a retry
// can wait out an error ('$error.code != -32001') or for one. A template is a
// string holding {{ jq }} parts; a string that is one whole {{ }} keeps the
// JSON type of its value.

// scopeVars are the jq variables every expression may read.
var scopeVars = []string{"$vars", "$env", "$steps", "$item", "$index"}

// answerVars are those an expression judging a call's answer
// (expect.result, retry.until) reads: the scope's, and $error, the
// answer's JSON-RPC error ({code, message, data}, as .steps.NAME.error
// holds it) or null when it answered a result. Elsewhere $error is no
// variable: naming it is exit 2, found before anything is sent.
var answerVars = append(scopeVars[:len(scopeVars):len(scopeVars)], "$error")

// scopeValues are scopeVars' values in a scope (nil: none), and $error's
// for an expression over an answer.
func scopeValues(scope map[string]any, answer bool) []any {
	v := []any{scope["vars"], scope["env"], scope["steps"], scope["item"], scope["index"]}
	if answer {
		v = append(v, scope["error"])
	}
	return v
}

// maxExprOutputs bounds what one expression may yield.
const maxExprOutputs = 10_000

type expr struct {
	src  string
	code *gojq.Code
	// answer: it judges an answer and reads $error.
	answer bool
}

func compileExpr(p Pos, src string) (*expr, error) {
	return compileWith(p, src, false)
}

// compileAnswerExpr compiles an expression judging a call's answer
// (expect.result, retry.until): it also reads $error.
func compileAnswerExpr(p Pos, src string) (*expr, error) {
	return compileWith(p, src, true)
}

func compileWith(p Pos, src string, answer bool) (*expr, error) {
	vars := scopeVars
	if answer {
		vars = answerVars
	}
	q, err := gojq.Parse(src)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			col := p.Column + pe.Offset - len(pe.Token)
			return nil, errAt(Pos{p.File, p.Line, col}, "jq %q: %v", src, pe)
		}
		return nil, errAt(p, "jq %q: %v", src, err)
	}
	code, err := gojq.Compile(q, gojq.WithVariables(vars))
	if err != nil {
		return nil, errAt(p, "jq %q: %v", src, err)
	}
	return &expr{src: src, code: code, answer: answer}, nil
}

// eval runs the expression over in, with scope's variables, and returns
// its first output (nil when it yields none).
func (e *expr) eval(ctx context.Context, in any, scope map[string]any) (any, error) {
	iter := e.code.RunWithContext(ctx, in, scopeValues(scope, e.answer)...)
	v, ok := iter.Next()
	if !ok {
		return nil, nil
	}
	if err, isErr := v.(error); isErr {
		var he *gojq.HaltError
		if errors.As(err, &he) && he.Value() == nil {
			return nil, nil
		}
		return nil, fmt.Errorf("jq %s: %w", e.src, err)
	}
	return v, nil
}

// truthy evaluates e as a condition: true unless its value is false or null
// (jq's rule); an expression that yields nothing is false.
func (e *expr) truthy(ctx context.Context, in any, scope map[string]any) (bool, any, error) {
	v, err := e.eval(ctx, in, scope)
	if err != nil {
		return false, nil, err
	}
	return v != nil && v != false, v, nil
}

var templateRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\{\{(.*?)\}\}`) })

// template is a string compiled into literal text and expressions.
type template struct {
	whole *expr // the string is one {{ }}: its value keeps its type
	parts []any // string or *expr
}

func compileTemplate(p Pos, s string) (*template, error) {
	idx := templateRE().FindAllStringSubmatchIndex(s, -1)
	if len(idx) == 0 {
		return nil, nil
	}
	if strings.Count(s, "{{") != len(idx) {
		return nil, errAt(p, "an unclosed {{ in %q", s)
	}
	t := &template{}
	if len(idx) == 1 && idx[0][0] == 0 && idx[0][1] == len(s) {
		e, err := compileExpr(p, strings.TrimSpace(s[idx[0][2]:idx[0][3]]))
		if err != nil {
			return nil, err
		}
		t.whole = e
		return t, nil
	}
	last := 0
	for _, m := range idx {
		if m[0] > last {
			t.parts = append(t.parts, s[last:m[0]])
		}
		e, err := compileExpr(p, strings.TrimSpace(s[m[2]:m[3]]))
		if err != nil {
			return nil, err
		}
		t.parts = append(t.parts, e)
		last = m[1]
	}
	if last < len(s) {
		t.parts = append(t.parts, s[last:])
	}
	return t, nil
}

func (t *template) render(ctx context.Context, scope any) (any, error) {
	sm, _ := scope.(map[string]any)
	if t.whole != nil {
		return t.whole.eval(ctx, scope, sm)
	}
	var b strings.Builder
	for _, p := range t.parts {
		switch x := p.(type) {
		case string:
			b.WriteString(x)
		case *expr:
			v, err := x.eval(ctx, scope, sm)
			if err != nil {
				return nil, err
			}
			switch s := v.(type) {
			case string:
				b.WriteString(s)
			case nil:
			default:
				j, err := gojq.Marshal(s)
				if err != nil {
					return nil, err
				}
				b.Write(j)
			}
		}
	}
	return b.String(), nil
}

// renderValue expands every template inside a params value.
func renderValue(ctx context.Context, v any, scope any, p Pos) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := compileTemplate(p, x)
		if err != nil || t == nil {
			return x, err
		}
		return t.render(ctx, scope)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderValue(ctx, e, scope, p)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := renderValue(ctx, e, scope, p)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// renderString expands a templated text field (target, method, session);
// its value must be text or a number.
func renderString(ctx context.Context, s string, scope any, p Pos) (string, error) {
	t, err := compileTemplate(p, s)
	if err != nil || t == nil {
		return s, err
	}
	v, err := t.render(ctx, scope)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "", fmt.Errorf("%q gives null", s)
	default:
		j, err := gojq.Marshal(x)
		return string(j), err
	}
}

// jqValue decodes JSON into the values gojq works on.
func jqValue(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	v, err := render.JQInput(raw)
	if err != nil {
		return nil
	}
	return v
}

// refs finds the names an expression or template reads: .steps.NAME,
// .vars.NAME and .env.NAME (also written .steps["NAME"]), and the same
// through the variables: $steps.NAME, $vars.NAME, $env.NAME.
var refRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`([.$])(steps|vars|env)(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*"([^"]*)"\s*\])`)
})

type ref struct {
	kind   string // "steps", "vars" or "env"
	name   string
	off    int
	dollar bool // read through the variable ($steps.NAME)
}

func refsIn(s string) []ref {
	var out []ref
	for _, m := range refRE().FindAllStringSubmatchIndex(s, -1) {
		r := ref{kind: s[m[4]:m[5]], off: m[0], dollar: s[m[2]:m[3]] == "$"}
		if m[6] >= 0 {
			r.name = s[m[6]:m[7]]
		} else {
			r.name = s[m[8]:m[9]]
		}
		out = append(out, r)
	}
	return out
}

// valueStrings lists every string inside a params value.
func valueStrings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case map[string]any:
		for _, e := range x {
			out = valueStrings(e, out)
		}
	case []any:
		for _, e := range x {
			out = valueStrings(e, out)
		}
	}
	return out
}
