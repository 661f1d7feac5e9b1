package main

import (
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/themes"
)

// colorChoice is the global colour flags and NO_COLOR decided by the one
// rule the CLI and the TUI share; a bad --color is a usage error.
func (a *app) colorChoice() (render.ColorChoice, error) {
	c, err := render.DecideColor(a.color, a.noColor, a.getenv)
	if err != nil {
		return render.ColorNever, usageErr(err)
	}
	return c, nil
}

// themeCatalog is the built-in themes and the user's own, from the user
// theme directory (paths.ThemesDir). A broken theme file is left out: it
// must not stop a call; naming it with --theme says it is unknown.
func (a *app) themeCatalog() *themes.Catalog {
	var users []themes.Theme
	if dir := paths.ThemesDir(a.getenv); dir != "" {
		users, _ = themes.LoadDir(dir)
	}
	return themes.NewCatalog(users)
}
