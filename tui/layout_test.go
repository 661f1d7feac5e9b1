package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestNamesShownWhole: the targets pane shows every demo name with its
// family whole at each size; the other columns give way first.
func TestNamesShownWhole(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: demoTargets()})
	for _, sz := range sizes {
		scr := screenAt(m, sz[0], sz[1])
		for _, name := range []string{"neural-api@" + demoFamily, "biomeos-api@" + demoFamily, "beardog@" + demoFamily, "stdiobus/agent stdiobus", "rhizocrypt dag"} {
			if !strings.Contains(scr, name) {
				t.Errorf("%dx%d: %q is not shown whole:\n%s", sz[0], sz[1], name, scr)
			}
		}
	}
	// A pane just wide enough for the name: the latency and the level go,
	// the lock stays.
	st := m.pc.st
	var neural *target
	for _, tg := range m.pc.targets {
		if tg.Name == "neural-api" {
			neural = tg
		}
	}
	name := "neural-api@" + demoFamily
	row := ansi.Strip(m.tp().row(st, neural, 3+len(name)+1+2, false, false))
	if !strings.Contains(row, name) || !strings.Contains(row, "⚿") || strings.Contains(row, "L1") {
		t.Errorf("a row of %d cells is %q: want the name whole and the lock, not the level", 3+len(name)+3, row)
	}
	// Narrower still: the family is cut, never the name before it.
	row = ansi.Strip(m.tp().row(st, neural, 20, false, false))
	if !strings.HasPrefix(strings.TrimLeft(row, " ●"), "neural-api@") || ansi.StringWidth(row) != 20 {
		t.Errorf("a row of 20 cells is %q: want the name whole and the family cut", row)
	}
}

// TestHeaderApart: however long the socket directory, the header keeps the
// counts apart from the rest and the family whole.
func TestHeaderApart(t *testing.T) {
	cfg := goldenConfig("dark")
	cfg.Title = "demo"
	cfg.Family = demoFamily
	cfg.SocketDirsShown = []string{"/tmp/primalscope-demo-2971985807-with-a-much-longer-name-than-usual"}
	m, _ := testModel(t, cfg)
	m.update(feedMsg{items: demoTargets()})
	for _, w := range []int{120, 140, 200} {
		head := strings.Split(screenAt(m, w, 40), "\n")[0]
		if !strings.Contains(head, "family: "+demoFamily+"  ") {
			t.Errorf("%d columns: the header runs together or cuts the family: %q", w, head)
		}
	}
}

// TestLayoutUsesTheScreen: at 120×35 and 200×50 the targets run the whole
// height (every demo target shows), the side pane shows, and the response
// (with the keyboard) has more rows than at 80×24.
func TestLayoutUsesTheScreen(t *testing.T) {
	m, _ := testModel(t, goldenConfig("dark"))
	m.update(feedMsg{items: demoTargets()})
	m.update(winSize(80, 24))
	m.setFocus(pResponse)
	small := m.rects[pResponse].h
	for _, sz := range sizes[1:] {
		m.update(winSize(sz[0], sz[1]))
		r := m.rects
		if r[pTargets].h != sz[1]-2 {
			t.Errorf("%dx%d: the targets pane is %d rows, want the whole body (%d)", sz[0], sz[1], r[pTargets].h, sz[1]-2)
		}
		if _, ok := r[pEvents]; !ok {
			t.Errorf("%dx%d: no side pane", sz[0], sz[1])
		}
		if r[pResponse].h <= small {
			t.Errorf("%dx%d: the response has %d rows, no more than at 80x24 (%d)", sz[0], sz[1], r[pResponse].h, small)
		}
		scr := ansi.Strip(m.render())
		for _, name := range []string{"toadstool", "beardog.tarpc", "neural-api@" + demoFamily} {
			if !strings.Contains(scr, name) {
				t.Errorf("%dx%d: %q is not on screen:\n%s", sz[0], sz[1], name, scr)
			}
		}
	}
}
