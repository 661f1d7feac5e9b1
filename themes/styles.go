package themes

import "charm.land/lipgloss/v2"

// Styles are the lipgloss v2 styles the TUI draws with, built from a Theme.
// Build them once per theme change with NewStyles, not per frame.
type Styles struct {
	Pane        lipgloss.Style // unfocused pane: rounded border in UI.Border
	PaneFocused lipgloss.Style // focused pane: rounded border in UI.FocusBorder
	Title       lipgloss.Style // pane title, unfocused
	TitleFocus  lipgloss.Style // pane title, focused
	Header      lipgloss.Style // the top line of the screen
	StatusBar   lipgloss.Style // the bottom line of the screen
	HelpKey     lipgloss.Style // key names in help and status bar
	HelpDesc    lipgloss.Style // key descriptions
	HelpSep     lipgloss.Style // separators between help items
	Text        lipgloss.Style // normal text
	Dim         lipgloss.Style // secondary text
	Accent      lipgloss.Style // highlighted names
	Selected    lipgloss.Style // the selected row
	Match       lipgloss.Style // filter/search match inside text
	OK          lipgloss.Style // ok text (● live)
	Warn        lipgloss.Style
	Err         lipgloss.Style
	Info        lipgloss.Style
	OKBadge     lipgloss.Style // reversed, bold, padded: " ok "
	WarnBadge   lipgloss.Style
	ErrBadge    lipgloss.Style
	InfoBadge   lipgloss.Style
	Heartbeat   lipgloss.Style
	Event       lipgloss.Style
	Notify      lipgloss.Style
	Sent        lipgloss.Style // trace: outgoing frames
	Received    lipgloss.Style // trace: incoming frames
	Overlay     lipgloss.Style // help overlay box
}

// NewStyles builds the styles of a theme.
func NewStyles(t Theme) Styles {
	u := t.UI
	base := lipgloss.NewStyle()
	if u.Fg != nil {
		base = base.Foreground(u.Fg)
	}
	if u.Bg != nil {
		base = base.Background(u.Bg)
	}
	pane := base.Border(lipgloss.RoundedBorder()).BorderForeground(u.Border)
	if u.Bg != nil {
		pane = pane.BorderBackground(u.Bg)
	}
	badge := func(c lipgloss.Style) lipgloss.Style {
		return c.Reverse(true).Bold(true).Padding(0, 1)
	}
	col := lipgloss.NewStyle().Foreground
	s := Styles{
		Pane:        pane,
		PaneFocused: pane.BorderForeground(u.FocusBorder),
		Title:       lipgloss.NewStyle().Foreground(u.Muted),
		TitleFocus:  lipgloss.NewStyle().Foreground(u.Title).Bold(true),
		Header:      lipgloss.NewStyle().Foreground(u.Fg).Bold(true),
		StatusBar:   lipgloss.NewStyle().Foreground(u.StatusFg).Background(u.StatusBg),
		HelpKey:     col(u.HelpKey).Bold(true),
		HelpDesc:    col(u.HelpDesc),
		HelpSep:     col(u.Border),
		Text:        base,
		Dim:         col(u.Muted),
		Accent:      col(u.Accent),
		Selected:    lipgloss.NewStyle().Foreground(u.SelectionFg).Background(u.SelectionBg).Bold(true),
		Match:       col(u.Match).Underline(true).Bold(true),
		OK:          col(u.OK),
		Warn:        col(u.Warn),
		Err:         col(u.Error),
		Info:        col(u.Info),
		Heartbeat:   col(u.Heartbeat),
		Event:       col(u.Event),
		Notify:      col(u.Notify),
		Sent:        col(u.Sent),
		Received:    col(u.Received),
		Overlay:     base.Border(lipgloss.RoundedBorder()).BorderForeground(u.FocusBorder).Padding(1, 2),
	}
	s.OKBadge = badge(s.OK)
	s.WarnBadge = badge(s.Warn)
	s.ErrBadge = badge(s.Err)
	s.InfoBadge = badge(s.Info)
	return s
}
