package tui

import (
	"testing"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// TestColourDecidedOnce: the TUI takes the CLI's colour decision as it is
// (render.DecideColor), and decides by the same rule when given none.
func TestColourDecidedOnce(t *testing.T) {
	noColor := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	for _, tc := range []struct {
		name   string
		cfg    Config
		wantNo bool
		want   render.ColorChoice
	}{
		{"NO_COLOR, no decision", Config{Getenv: noColor}, true, render.ColorNever},
		{"--color always beats NO_COLOR", Config{Getenv: noColor, Color: render.ColorAlways}, false, render.ColorAlways},
		{"--no-color", Config{Getenv: func(string) string { return "" }, NoColor: true, Color: render.ColorAlways}, true, render.ColorNever},
		{"auto", Config{Getenv: func(string) string { return "" }}, false, render.ColorAuto},
	} {
		c := tc.cfg
		c.fill()
		if c.NoColor != tc.wantNo || c.Color != tc.want {
			t.Errorf("%s: NoColor %v Color %v; want %v %v", tc.name, c.NoColor, c.Color, tc.wantNo, tc.want)
		}
	}
}
