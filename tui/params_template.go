package tui

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// templateFor is the params template of method from t's capability list,
// when the list describes its params (format C's method_info).
func templateFor(t *target, method string) (json.RawMessage, bool) {
	if t == nil || t.caps() == nil {
		return nil, false
	}
	mi, ok := t.caps().MethodInfo[method]
	if !ok || len(mi.Params) == 0 {
		return nil, false
	}
	return capability.ParamsTemplate(mi.Params)
}

// lastParams looks up, in a command, the params of the last call of method
// to the current target in history, and puts them in the composer
// (prefillMsg) if it still holds that method.
func lastParams(pc *programContext, method string) tea.Cmd {
	hs := pc.hist
	if hs == nil {
		return nil
	}
	tname := ""
	if t := pc.target(); t != nil {
		tname = t.Name
	}
	ctx := pc.ctx
	return pc.safe(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		params, ok, err := hs.LastParams(ctx, tname, method)
		if err != nil || !ok || !json.Valid(params) {
			return nil
		}
		return prefillMsg{method: method, params: params}
	})
}

// paramsFor is what the composer offers as params for method: a template
// from the capability list's schema, else (through a command) the params of
// its last call in history, else {}.
func paramsFor(pc *programContext, method string) (params string, cmd tea.Cmd) {
	if tmpl, ok := templateFor(pc.target(), method); ok {
		pc.setInfo("params: a template from the capability list's description of " + method)
		return string(tmpl), nil
	}
	return "{}", lastParams(pc, method)
}

// offerParams fills params the user has not touched ({} or nothing) for
// the method just chosen in the composer (see paramsFor).
func (c *composer) offerParams() tea.Cmd {
	if p := strings.TrimSpace(c.params.String()); p != "" && p != "{}" {
		return nil
	}
	params, cmd := paramsFor(c.pc, strings.TrimSpace(c.method.String()))
	c.params.Set(params)
	c.checkParams()
	return cmd
}
