package main

import "github.com/ecoPrimals/primalscope/internal/render"

// colorChoice is the global colour flags and NO_COLOR decided by the one
// rule the CLI and the TUI share; a bad --color is a usage error.
func (a *app) colorChoice() (render.ColorChoice, error) {
	c, err := render.DecideColor(a.color, a.noColor, a.getenv)
	if err != nil {
		return render.ColorNever, usageErr(err)
	}
	return c, nil
}
