package tui

import (
	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/themes"
)

// Typed access to the built-in panes and the root's state, for tests.

func (m *model) tp() *targetsPane    { return m.panes[pTargets].(*targetsPane) }
func (m *model) cp() *capsPane       { return m.panes[pCaps].(*capsPane) }
func (m *model) comp() *composer     { return m.panes[pComposer].(*composer) }
func (m *model) resp() *responsePane { return m.panes[pResponse].(*responsePane) }
func (m *model) events() *eventsPane { return m.panes[pEvents].(*eventsPane) }
func (m *model) trace() *tracePane   { return m.panes[pTrace].(*tracePane) }
func (m *model) histp() *historyPane { return m.panes[pHistory].(*historyPane) }
func (m *model) reqs() *requestsPane { return m.panes[pRequests].(*requestsPane) }
func (m *model) mapp() *mapPane      { return m.panes[pMap].(*mapPane) }
func tabName(p paneID) string        { return paneRegistry()[p].tab }

// testPC is a program context for testing a pane on its own.
func testPC() *programContext {
	k := DefaultKeyMap()
	cfg := goldenConfig("dark")
	cfg.fill()
	pc := &programContext{cfg: &cfg, keys: &k, now: fixedNow, targets: map[string]*target{}}
	pc.st = newStyles(themes.Dark())
	pc.do = func(tea.Msg) tea.Cmd { return nil }
	return pc
}
