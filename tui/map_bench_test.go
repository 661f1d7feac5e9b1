package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// mapScale builds n primals, each providing d<i>.op and consuming five
// of the next 200's (d<j>.op): 5n declared edges, a composition in many
// layers (those near the end wrap around to the start, so it has cycles).
func mapScale(n int) []*discovery.Target {
	out := make([]*discovery.Target, 0, n)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("primal-%04d", i)
		addr := "unix:///run/biomeos/" + name + ".sock"
		d := discovered(addr, name, addr, discovery.StateLive)
		var consumed []string
		for k := 1; k <= 5; k++ {
			consumed = append(consumed, fmt.Sprintf(`"d%d.op"`, (i+1+(k*37+k*k)%200)%n))
		}
		c, err := capability.Parse([]byte(fmt.Sprintf(`{"primal":%q,"methods":["d%d.op","health.liveness"],"consumed_capabilities":[%s]}`,
			name, i, strings.Join(consumed, ","))))
		if err != nil {
			panic(err)
		}
		d.Probe.Capabilities = c
		out = append(out, d)
	}
	return out
}

// mapBenchModel is a model with the map open over mapScale(n), its first
// picture built, at w×h.
func mapBenchModel(b *testing.B, n, w, h int) *model {
	b.Helper()
	m := newModel(context.Background(), goldenConfig("dark"))
	m.manualFeed = true
	m.update(winSize(w, h))
	m.update(feedMsg{items: added(mapScale(n)...)})
	cmd := m.update(press("m")[0])
	drain(b, m, cmd)
	p := m.mapp()
	if p.pic == nil || len(p.pic.g.Edges) < 5*n {
		b.Fatalf("the map is not built: %v", p.pic != nil)
	}
	return m
}

// drain runs cmd and what it leads to, synchronously, skipping timers
// (the map's tick) and the feed.
func drain(b testing.TB, m *model, cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	switch msg := cmd().(type) {
	case nil:
	case tea.BatchMsg:
		for _, c := range msg {
			drain(b, m, c)
		}
	default:
		drain(b, m, m.update(msg))
	}
}

// BenchmarkMap2k measures the map with 2,000 targets and 10,000 edges: a
// frame of the drawing (120×35) and of the tree (80×24), a cursor move
// with its frame, one health change applied in Update (what runs before
// the command that rebuilds), that command (the change applied to the
// model, the picture indexed), and the command after a target leaves or
// comes back (the model rebuilt, laid out over the last layout, indexed).
func BenchmarkMap2k(b *testing.B) {
	const n = 2000
	for _, sz := range [][2]int{{120, 35}, {80, 24}} {
		b.Run(fmt.Sprintf("frame-%dx%d", sz[0], sz[1]), func(b *testing.B) {
			m := mapBenchModel(b, n, sz[0], sz[1])
			keyMsgsB(m, "j", "j", "j")
			for b.Loop() {
				m.render()
			}
		})
		b.Run(fmt.Sprintf("move-%dx%d", sz[0], sz[1]), func(b *testing.B) {
			m := mapBenchModel(b, n, sz[0], sz[1])
			down, up := press("down")[0], press("up")[0]
			i := 0
			for b.Loop() {
				if i++; i%2 == 0 {
					m.update(down)
				} else {
					m.update(up)
				}
				m.render()
			}
		})
	}
	b.Run("health-change-update", func(b *testing.B) {
		m := mapBenchModel(b, n, 120, 35)
		ts := mapScale(n)
		i := 0
		for b.Loop() {
			d := ts[i%n]
			i++
			if d.Probe.State == discovery.StateLive {
				d.Probe.State = discovery.StateStale
			} else {
				d.Probe.State = discovery.StateLive
			}
			m.update(feedMsg{items: []any{changed(d)}})
			m.mapp().lent = false // the command it started is not run here
		}
	})
	b.Run("arrival-build", func(b *testing.B) {
		m := mapBenchModel(b, n, 120, 35)
		p := m.mapp()
		all := make([]*discovery.Target, 0, n)
		for _, t := range m.pc.targets {
			all = append(all, t.Target)
		}
		i := 0
		for b.Loop() {
			ts := all
			if i++; i%2 == 1 {
				ts = all[:n-1]
			}
			pic, _ := buildMap(p.model, mapWork{targets: true, moved: true}, ts, p.pic, "", 1)
			p.install(pic)
		}
	})
	b.Run("health-change-build", func(b *testing.B) {
		m := mapBenchModel(b, n, 120, 35)
		p := m.mapp()
		ts := mapScale(n)
		i := 0
		for b.Loop() {
			d := ts[i%n]
			i++
			d.Probe.State = discovery.StateStale
			m.update(feedMsg{items: []any{changed(d)}})
			p.lent = false
			targets := make([]*discovery.Target, 0, n)
			for _, t := range m.pc.targets {
				targets = append(targets, t.Target)
			}
			pic, _ := buildMap(p.model, mapWork{targets: true}, targets, p.pic, "", 1)
			p.install(pic)
		}
	})
}

func keyMsgsB(m *model, keys ...string) {
	for _, k := range press(keys...) {
		m.update(k)
	}
}
