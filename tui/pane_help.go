package tui

import (
	"charm.land/bubbles/v2/help"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// helpPane is the ? overlay: every key, generated from the KeyMap, in its
// groups. It covers the panes while shown; any key or click closes it.
type helpPane struct {
	paneBase
	shown bool
}

func newHelpPane(pc *programContext) *helpPane {
	return &helpPane{paneBase: paneBase{id: -1, pc: pc}}
}

// KeyMap is every key.
func (p *helpPane) KeyMap() help.KeyMap { return p.pc.keys }

// Update closes the overlay on any key or click.
func (p *helpPane) Update(msg tea.Msg) (pane, tea.Cmd) {
	switch msg.(type) {
	case tea.KeyPressMsg, clickMsg:
		p.shown = false
	}
	return p, nil
}

// helpLayout is one way of laying the overlay out, tried in order until
// one fits: spacing between groups, footer lines, column and key widths.
type helpLayout struct {
	sep                bool
	footer, colW, keyW int
}

var helpLayouts = []helpLayout{{true, 3, 26, 8}, {false, 3, 26, 8}, {false, 2, 26, 8}, {false, 2, 19, 6}}

// View lays the groups out down and across as many columns as fit; on
// small screens the spacing, the footer and the column width shrink first.
func (p *helpPane) View() string {
	st := p.pc.st
	w, h := p.w, p.h
	groups := p.pc.keys.FullHelp()
	widest := 0
	for _, group := range groups {
		for _, b := range group {
			widest = max(widest, ansi.StringWidth(b.Help().Key))
		}
	}
	build := func(l helpLayout) []string {
		// Remapped keys can be longer than the defaults: the key column
		// grows to show them, up to half the column.
		keyW := min(max(l.keyW, widest), l.colW/2)
		var items []string
		for g, group := range groups {
			if g > 0 && l.sep {
				items = append(items, "")
			}
			items = append(items, st.TitleFocus.Render(helpGroupTitles[g]))
			for _, b := range group {
				if b.Enabled() {
					items = append(items, st.HelpKey.Render(fit(b.Help().Key, keyW))+" "+st.HelpDesc.Render(b.Help().Desc))
				}
			}
		}
		return items
	}
	cp := p.pc.cfg.ConfigPath
	if cp == "" {
		cp = "~/.config/primalscope/config.toml"
	}
	footer := []string{"", st.Dim.Render("Keys are remappable in " + render.Sanitize(cp) + " under [keys], e.g. quit = [\"q\"]."),
		st.Dim.Render("Mouse: click to focus and select, wheel to scroll. Any key closes this help.")}
	avail := h - 2
	ceil := func(n, d int) int { return (n + d - 1) / d }
	var items []string
	l := helpLayouts[len(helpLayouts)-1]
	for _, try := range helpLayouts {
		items = build(try)
		if ceil(len(items), max((w-2)/try.colW, 1))+try.footer <= avail {
			l = try
			break
		}
	}
	footer = footer[:l.footer]
	maxCol := max((w-2)/l.colW, 1)
	ncol := maxCol
	for ncol > 1 && ceil(len(items), ncol-1)+len(footer) <= avail {
		ncol--
	}
	rows := ceil(len(items), ncol)
	var body []string
	for r := 0; r < rows; r++ {
		var line string
		for c := 0; c < ncol; c++ {
			if i := c*rows + r; i < len(items) {
				line += fit(items[i], l.colW-1) + " "
			}
		}
		body = append(body, line)
	}
	body = append(body, footer...)
	return joinLines(st.box(w, h, "Help · keys", "", true, body))
}
