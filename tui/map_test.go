package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/ecoPrimals/primalscope/composition"
	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// mapTargets is a composition worth mapping: beardog needs storage from
// nestgate and ai from nobody (a gap), nestgate needs beardog's signatures
// (a cycle), rhizocrypt needs storage and compute from toadstool, which
// has gone stale (a degraded edge); songbird needs nothing.
func mapTargets() []any {
	mk := func(name string, s discovery.State, level int, caps string) *discovery.Target {
		addr := "unix:///run/biomeos/" + name + ".sock"
		d := discovered(addr, name, addr, s)
		d.Sources, d.Level = []discovery.SourceRef{{Source: "socket-dir"}}, level
		d.Probe.Wire, d.Probe.Latency = "jsonrpc", 500*time.Microsecond
		if caps != "" {
			c, err := capability.Parse([]byte(caps))
			if err != nil {
				panic(err)
			}
			d.Probe.Capabilities = c
		}
		return d
	}
	return added(
		mk("beardog", discovery.StateLive, 2, `{"primal":"beardog","methods":["crypto.sign_ed25519","crypto.verify_ed25519","health.liveness"],"consumed_capabilities":["storage.put","ai.query"]}`),
		mk("nestgate", discovery.StateLive, 2, `{"primal":"nestgate","methods":["storage.put","storage.get","health.liveness"],"consumed_capabilities":["crypto.sign_ed25519"]}`),
		mk("rhizocrypt", discovery.StateLive, 1, `{"primal":"rhizocrypt","methods":["dag.event.append","health.liveness"],"consumed_capabilities":["storage.get","compute.run"]}`),
		mk("toadstool", discovery.StateStale, 1, `{"primal":"toadstool","methods":["compute.run","health.liveness"]}`),
		mk("songbird", discovery.StateLive, 3, `{"primal":"songbird","methods":["ipc.list","ipc.discover","health.liveness"]}`),
	)
}

// mapModel is a model over mapTargets with the map open at w×h, its first
// picture built.
func mapModel(t *testing.T, hist History, w, h int) *model {
	t.Helper()
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	m.update(winSize(w, h))
	run(t, m, m.update(feedMsg{items: mapTargets()}))
	keyMsgs(t, m, "m")
	if m.pc.focus != pMap || m.mapp().pic == nil {
		t.Fatalf("the map did not open: focus %s", tabName(m.pc.focus))
	}
	return m
}

// goTo moves the map's cursor onto the item k with the down key.
func goTo(t *testing.T, m *model, k mapKey) {
	t.Helper()
	p := m.mapp()
	i := p.pic.find(k)
	if i < 0 || p.pic.keyOf(i) != k {
		t.Fatalf("no item %+v in the map", k)
	}
	keyMsgs(t, m, "g")
	for p.sel < i {
		keyMsgs(t, m, "j")
	}
}

// shown lists the names of the nodes the map shows.
func shown(m *model) map[string]bool {
	out := map[string]bool{}
	for _, n := range m.mapp().pic.view.Nodes {
		out[n.Name] = true
	}
	return out
}

func id(name string) string { return "unix:///run/biomeos/" + name + ".sock" }

// TestMapFocusHopsOpen: f shows a node's neighbourhood, + and - change how
// far it reaches, esc shows the whole map again; ⏎ on a node makes it the
// current target in the caps pane; ⏎ on an edge lists the calls history
// holds on it, and ⏎ there offers the consumed method in the composer with
// the provider as the current target.
func TestMapFocusHopsOpen(t *testing.T) {
	hist := NewMemHistory(0)
	hist.Record(history.Entry{Time: t0.Add(-10 * time.Second), Target: "nestgate", Endpoint: id("nestgate"), Method: "storage.put",
		Params: json.RawMessage(`{"key":"k1"}`), Outcome: history.OutcomeOK, Duration: 2 * time.Millisecond})
	hist.Record(history.Entry{Time: t0.Add(-5 * time.Second), Target: "nestgate", Endpoint: id("nestgate"), Method: "health.liveness",
		Outcome: history.OutcomeOK, Duration: time.Millisecond})
	m := mapModel(t, hist, 80, 24)
	p := m.mapp()
	scr := ansi.Strip(m.render())
	for _, want := range []string{"✗ 1 gap", "! 1 degraded", "↻ 1 cycle", "ai.query → ✗ nobody  ✗ GAP", "compute.run → ◌ toadstool stale  ! DEGRADED"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the tree lacks %q:\n%s", want, scr)
		}
	}
	// The user's own calls of the window (from history) are traffic too.
	if s := shown(m); len(s) != 7 || !s["primalscope (you)"] {
		t.Fatalf("whole map: %v", s)
	}

	// Focus beardog: one hop both ways.
	goTo(t, m, mapKey{node: id("beardog")})
	keyMsgs(t, m, "f")
	if s := shown(m); p.focus != id("beardog") || len(s) != 3 || !s["nestgate"] || !s["ai.query"] || s["rhizocrypt"] {
		t.Fatalf("beardog ±1 shows %v", s)
	}
	keyMsgs(t, m, "+")
	if s := shown(m); p.hops != 2 || !s["rhizocrypt"] || s["toadstool"] || s["songbird"] {
		t.Fatalf("beardog ±2 shows %v", s)
	}
	if !strings.Contains(ansi.Strip(m.render()), "Map · beardog ±2") {
		t.Errorf("the title does not say the focus:\n%s", ansi.Strip(m.render()))
	}
	keyMsgs(t, m, "-")
	if s := shown(m); p.hops != 1 || s["rhizocrypt"] {
		t.Fatalf("beardog ±1 again shows %v", s)
	}
	keyMsgs(t, m, "esc")
	if p.focus != "" || len(shown(m)) != 7 {
		t.Fatalf("esc: focus %q, %v", p.focus, shown(m))
	}

	// ⏎ on a node: its capabilities.
	goTo(t, m, mapKey{node: id("nestgate")})
	keyMsgs(t, m, "enter")
	if m.pc.focus != pCaps || m.pc.current != id("nestgate") {
		t.Fatalf("⏎ on nestgate: focus %s, current %q", tabName(m.pc.focus), m.pc.current)
	}

	// ⏎ on an edge: the calls on it, then the method in the composer.
	keyMsgs(t, m, "m")
	goTo(t, m, mapKey{node: id("beardog"), from: id("beardog"), to: id("nestgate"), capy: "storage.put", edge: true})
	keyMsgs(t, m, "enter")
	d := p.edge
	if d == nil || !d.loaded || len(d.calls) != 1 || d.calls[0].Method != "storage.put" {
		t.Fatalf("the edge's calls: %+v", d)
	}
	scr = ansi.Strip(m.render())
	for _, want := range []string{"beardog → storage.put → nestgate", "⏎ compose storage.put on nestgate", "Calls on this edge in history (1)", "storage.put ok"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the edge lacks %q:\n%s", want, scr)
		}
	}
	keyMsgs(t, m, "enter")
	if m.pc.focus != pComposer || m.comp().method.String() != "storage.put" || m.pc.current != id("nestgate") {
		t.Fatalf("compose: focus %s, method %q, current %q", tabName(m.pc.focus), m.comp().method.String(), m.pc.current)
	}
	// A call's row loads that call.
	keyMsgs(t, m, "esc", "m", "j", "enter")
	if c := m.comp(); c.params.String() != `{"key":"k1"}` {
		t.Fatalf("the call's row loads %q", c.params.String())
	}
}

// mapHistory is a history with the user's calls on nestgate's storage in
// the last minute: traffic from the "you" node, and calls on its edge.
func mapHistory() *MemHistory {
	hist := NewMemHistory(0)
	for i := 29; i >= 0; i-- {
		o := history.OutcomeOK
		if i%7 == 3 {
			o = history.OutcomeError
		}
		hist.Record(history.Entry{Time: t0.Add(-time.Duration(i*2) * time.Second), Target: "nestgate", Endpoint: id("nestgate"), Method: "storage.put",
			Params: json.RawMessage(fmt.Sprintf(`{"key":"k%d"}`, i)), Outcome: o, Duration: time.Duration(i%5+1) * time.Millisecond})
	}
	return hist
}

// quiet waits until r has had nothing new for d (the program has drawn
// what its commands brought), failing after limit. The screen cannot be
// waited for by its words: the renderer writes only the cells that
// changed ("±1" becoming "±2" is a "2").
func quiet(t *testing.T, r io.Reader, d, limit time.Duration) {
	t.Helper()
	end := time.Now().Add(limit)
	last := time.Now()
	buf := make([]byte, 4096)
	for time.Now().Before(end) {
		if n, _ := r.Read(buf); n > 0 {
			last = time.Now()
			continue
		}
		if time.Since(last) >= d {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the screen did not settle within %s", limit)
}

// TestMapGolden drives the program with teatest and compares the map's
// final screen at 80×24 (the tree) and 120×35 (the drawing): the whole
// map, a node's neighbourhood, and an opened edge.
func TestMapGolden(t *testing.T) {
	// Where the cursor finds the you → nestgate edge (worked out on a
	// model of the test's own: the program's is its goroutine's).
	edge := mapModel(t, mapHistory(), 80, 24).mapp().pic.find(mapKey{node: "you", from: "you", to: id("nestgate"), capy: "storage.put", edge: true})
	cases := []struct {
		name string
		keys []tea.Msg
	}{
		{"whole", nil},
		{"focus", press("f", "+")},
		{"edge", append(press(strings.Repeat("j", edge)), press("enter")...)},
	}
	for _, c := range cases {
		for _, sz := range [][2]int{{80, 24}, {120, 35}} {
			t.Run(fmt.Sprintf("%s/%dx%d", c.name, sz[0], sz[1]), func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				cfg := goldenConfig("dark")
				cfg.History = mapHistory()
				m := newModel(ctx, cfg)
				tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(sz[0], sz[1]))
				tm.Send(feedMsg{items: mapTargets()})
				tm.Send(press("m")[0])
				// (the renderer skips spaces: wait for words without any)
				teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("gap")) },
					teatest.WithDuration(10*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
				// The picture is in: the keys can find their way in it.
				for _, msg := range c.keys {
					tm.Send(msg)
				}
				if len(c.keys) > 0 {
					quiet(t, tm.Output(), 400*time.Millisecond, 10*time.Second)
				}
				if err := tm.Quit(); err != nil {
					t.Fatal(err)
				}
				cancel()
				fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*model)
				out := fm.render()
				checkScreen(t, out, sz[0], sz[1])
				golden.RequireEqual(t, out)
			})
		}
	}
}

// TestMapLive: a health change shows on the next frame (before the map is
// built again), and the edges it degrades once the build is back; an
// event that says a primal is healthy again mends its edges; a node that
// leaves stays drawn as gone until the user moves.
func TestMapLive(t *testing.T) {
	m := mapModel(t, nil, 80, 24)
	nest := sampleByName(t, "nestgate")
	nest.Probe.State = discovery.StateStale
	cmd := m.update(feedMsg{items: []any{changed(nest)}})
	scr := ansi.Strip(m.render())
	if !strings.Contains(scr, "◌ nestgate stale L2") {
		t.Fatalf("the health change is not on the next frame:\n%s", scr)
	}
	run(t, m, cmd)
	scr = ansi.Strip(m.render())
	if !strings.Contains(scr, "storage.put → ◌ nestgate stale  ! DEGRADED") || !strings.Contains(scr, "! 3 degraded") {
		t.Fatalf("the edges to a stale nestgate are not degraded:\n%s", scr)
	}

	// An event: toadstool is healthy again.
	ev := tailLine(t0, "biomeos", "", EvEvent, "health_changed", []byte(`{"primal":"toadstool","health":"healthy"}`), nil)
	run(t, m, m.update(feedMsg{items: []any{ev}}))
	scr = ansi.Strip(m.render())
	if !strings.Contains(scr, "compute.run → ● toadstool  ✓ ok") || !strings.Contains(scr, "! 2 degraded") {
		t.Fatalf("health_changed did not mend toadstool's edge:\n%s", scr)
	}

	// songbird leaves: drawn as gone until the user moves.
	run(t, m, m.update(feedMsg{items: []any{removed(sampleByName(t, "songbird"))}}))
	scr = ansi.Strip(m.render())
	if !strings.Contains(scr, "✕ songbird gone") || !strings.Contains(scr, "✕ 1 gone") {
		t.Fatalf("songbird is not drawn as gone:\n%s", scr)
	}
	keyMsgs(t, m, "j")
	if scr = ansi.Strip(m.render()); strings.Contains(scr, "songbird") {
		t.Fatalf("songbird is still drawn after a move:\n%s", scr)
	}
}

// sampleByName is a fresh copy of one of mapTargets.
func sampleByName(t *testing.T, name string) *discovery.Target {
	t.Helper()
	for _, it := range mapTargets() {
		if d := it.(discovery.Event).Target; d.Name == name {
			return d
		}
	}
	t.Fatalf("no target %s", name)
	return nil
}

// TestMapWaitsWhileHidden: off the screen, the map builds nothing; what
// arrived is applied when it shows again.
func TestMapWaitsWhileHidden(t *testing.T) {
	m := mapModel(t, nil, 80, 24)
	p := m.mapp()
	keyMsgs(t, m, "1") // the targets take the screen
	nest := sampleByName(t, "nestgate")
	nest.Probe.State = discovery.StateStale
	run(t, m, m.update(feedMsg{items: []any{changed(nest)}}))
	if p.lent || !p.pend.targets || p.pic.degraded != 1 {
		t.Fatalf("a hidden map built: lent %v, pending %v, %d degraded", p.lent, p.pend.targets, p.pic.degraded)
	}
	keyMsgs(t, m, "m")
	if p.pend.targets || p.pic.degraded != 3 {
		t.Fatalf("shown again, the map did not catch up: pending %v, %d degraded", p.pend.targets, p.pic.degraded)
	}
}

// TestMapFocusWhileBuilding: a picture made before the user focused a
// node does not take the focus away when it comes back; the one for the
// focus follows it.
func TestMapFocusWhileBuilding(t *testing.T) {
	m := mapModel(t, nil, 80, 24)
	p := m.mapp()
	nest := sampleByName(t, "nestgate")
	nest.Probe.State = discovery.StateStale
	inFlight := m.update(feedMsg{items: []any{changed(nest)}}) // a build, not run yet
	if !p.lent {
		t.Fatal("no build in flight")
	}
	keyMsgs(t, m, "f") // beardog, the first node
	run(t, m, inFlight)
	if s := shown(m); p.focus != id("beardog") || len(s) != 3 || !s["beardog"] {
		t.Fatalf("after the older picture: focus %q, showing %v", p.focus, s)
	}
}

// TestMapSizes: the map fits every screen exactly, focused (the whole
// body) and in the side slot, the edge open or not, from the smallest the
// TUI draws to 200×50.
func TestMapSizes(t *testing.T) {
	m := mapModel(t, mapHistory(), 80, 24)
	for _, open := range []bool{false, true} {
		if open {
			goTo(t, m, mapKey{node: "you", from: "you", to: id("nestgate"), capy: "storage.put", edge: true})
			keyMsgs(t, m, "enter")
		}
		for _, sz := range [][2]int{{20, 8}, {40, 10}, {80, 24}, {109, 29}, {110, 30}, {120, 35}, {160, 48}, {200, 50}} {
			for _, focus := range []string{"m", "1"} {
				keyMsgs(t, m, focus)
				m.update(winSize(sz[0], sz[1]))
				checkScreen(t, m.render(), sz[0], sz[1])
			}
			keyMsgs(t, m, "m")
		}
	}
	// In the side slot (wide screens, another pane focused) it is the tree.
	m.update(winSize(200, 50))
	keyMsgs(t, m, "esc", "1")
	if scr := ansi.Strip(m.render()); !strings.Contains(scr, "storage.put → ● nestgate") {
		t.Fatalf("the side slot does not show the map's tree:\n%s", scr)
	}
}

// TestMapFind: / looks for a node by name (fuzzy, as the targets filter)
// or an edge by capability as it is typed, n and N go to the next and
// previous match.
func TestMapFind(t *testing.T) {
	m := mapModel(t, nil, 80, 24)
	p := m.mapp()
	keyMsgs(t, m, "/", "toad")
	if n := p.selNode(); n == nil || n.Name != "toadstool" || !p.Typing() {
		t.Fatalf("/toad: cursor on %+v", n)
	}
	keyMsgs(t, m, "enter")
	if p.Typing() || !strings.Contains(ansi.Strip(m.render()), "/ toad") {
		t.Fatalf("enter leaves the field, its text shown:\n%s", ansi.Strip(m.render()))
	}
	keyMsgs(t, m, "/", "o", "enter") // beardog, its storage.put edge, …
	first := p.pic.keyOf(p.sel)
	keyMsgs(t, m, "n")
	second := p.pic.keyOf(p.sel)
	keyMsgs(t, m, "N")
	if first == second || p.pic.keyOf(p.sel) != first {
		t.Fatalf("n went from %+v to %+v, N back to %+v", first, second, p.pic.keyOf(p.sel))
	}
	keyMsgs(t, m, "esc", "/", "compute")
	if k := p.pic.keyOf(p.sel); !k.edge || k.capy != "compute.run" {
		t.Fatalf("/compute: cursor on %+v", k)
	}
	keyMsgs(t, m, "esc", "/", "zzz")
	if !strings.Contains(m.pc.status, "nothing in the map matches zzz") {
		t.Fatalf("status %q", m.pc.status)
	}
}

// TestMapOpenEdgeLive: an open edge follows its traffic: a call the user
// makes on it counts at once.
func TestMapOpenEdgeLive(t *testing.T) {
	m := mapModel(t, mapHistory(), 120, 35)
	p := m.mapp()
	goTo(t, m, mapKey{node: "you", from: "you", to: id("nestgate"), capy: "storage.put", edge: true})
	keyMsgs(t, m, "enter")
	before := p.edge.e.Traffic.Calls
	a := &answer{target: sampleByName(t, "nestgate"), req: ipc.Request{Method: "storage.put"}, outcome: "error", elapsed: time.Millisecond}
	run(t, m, m.update(callDoneMsg{ans: a}))
	if tr := p.edge.e.Traffic; tr.Calls != before+1 || tr.Errors == 0 {
		t.Fatalf("the open edge did not count the call: %d calls before, now %+v", before, tr)
	}
}

// TestMapHostileText: names, capabilities, families and reasons peers
// give reach the map's screen escaped, in the tree, the drawing, the
// detail lines and an open edge; wide runes do not break the drawing.
func TestMapHostileText(t *testing.T) {
	m := mapModel(t, nil, 80, 24)
	evil := discovered("unix:///run/biomeos/evil.sock", "evil"+hostileEvil+"界", "unix:///run/biomeos/evil.sock", discovery.StateLive)
	evil.Family = "fam" + hostileEvil
	steal, _ := json.Marshal("steal" + hostileEvil)
	c, err := capability.Parse([]byte(fmt.Sprintf(`{"primal":"evil","methods":["x.y"],"consumed_capabilities":[%s,"storage.put"]}`, steal)))
	if err != nil {
		t.Fatal(err)
	}
	evil.Probe.Capabilities = c
	run(t, m, m.update(feedMsg{items: added(evil)}))
	keyMsgs(t, m, "/", "evil", "enter")
	check := func(where string) {
		t.Helper()
		for _, sz := range [][2]int{{80, 24}, {120, 35}} {
			m.update(winSize(sz[0], sz[1]))
			out := m.render()
			checkScreen(t, out, sz[0], sz[1])
			for _, bad := range []string{"\x1b[2J", "\x1b[H", "\x1b]52", "\x1b]0;", "\x9b", "\x07"} {
				if strings.Contains(out, bad) {
					t.Fatalf("%s at %dx%d: raw %q reached the screen", where, sz[0], sz[1], bad)
				}
			}
		}
	}
	if scr := ansi.Strip(m.render()); !strings.Contains(scr, "evil") || !strings.Contains(scr, "steal") {
		t.Fatalf("the hostile node and its gap are not on the map:\n%s", scr)
	}
	check("the node")
	keyMsgs(t, m, "j")
	check("its edge")
	keyMsgs(t, m, "enter")
	check("the open edge")
}

// TestMapDrawingStable: in the drawing, a node keeps its column when a
// layer before it empties (a → b → c, and c also provides what a needs of
// b; b leaves): columns are the layout's layers, kept from refresh to
// refresh, not the rank among the layers that have nodes left.
func TestMapDrawingStable(t *testing.T) {
	mk := func(name, provides, consumes string) *discovery.Target { // provides: "m1","m2"
		addr := "unix:///run/biomeos/" + name + ".sock"
		d := discovered(addr, name, addr, discovery.StateLive)
		cons := ""
		if consumes != "" {
			cons = `,"consumed_capabilities":["` + consumes + `"]`
		}
		c, err := capability.Parse([]byte(`{"primal":"` + name + `","methods":[` + provides + `]` + cons + `}`))
		if err != nil {
			t.Fatal(err)
		}
		d.Probe.Capabilities = c
		return d
	}
	a, b, c, d := mk("a", `"a.x"`, "b.x"), mk("b", `"b.x"`, "c.y"), mk("c", `"c.y","b.x"`, ""), mk("d", `"d.x"`, "c.y")
	cfg := goldenConfig("dark")
	m, _ := testModel(t, cfg)
	m.update(winSize(120, 35))
	run(t, m, m.update(feedMsg{items: added(a, b, c, d)}))
	keyMsgs(t, m, "m")
	p := m.mapp()
	cellOf := func(name string) (int, int) {
		t.Helper()
		for i, n := range p.pic.view.Nodes {
			if n.Name == name {
				return p.pic.cell(i)
			}
		}
		t.Fatalf("no node %s", name)
		return 0, 0
	}
	cx, cy := cellOf("c")
	dx, _ := cellOf("d")
	run(t, m, m.update(feedMsg{items: []any{removed(b)}}))
	keyMsgs(t, m, "j") // the user moves: b, gone, is dropped
	for _, n := range p.pic.view.Nodes {
		if n.Name == "b" {
			t.Fatal("b is still drawn after a move")
		}
	}
	if x, y := cellOf("c"); x != cx || y > cy+2 {
		t.Fatalf("c moved from (%d,%d) to (%d,%d)", cx, cy, x, y)
	}
	if x, _ := cellOf("d"); x != dx {
		t.Fatalf("d moved from column %d to %d", dx, x)
	}
}

// TestMapSampledSparklines: traffic a source reports already summed (the
// Neural API's routes) has no series of its own; the map samples it as it
// is gathered again and draws those samples.
func TestMapSampledSparklines(t *testing.T) {
	clock := t0
	cfg := goldenConfig("dark")
	cfg.Now = func() time.Time { return clock }
	m, _ := testModel(t, cfg)
	m.update(winSize(120, 35))
	run(t, m, m.update(feedMsg{items: mapTargets()}))
	keyMsgs(t, m, "m")
	p := m.mapp()
	for _, r := range []float64{2, 4, 1} {
		clock = clock.Add(sampleEvery)
		g := composition.Gathered{TrafficReported: true, Routes: []composition.Route{{From: "beardog", To: "nestgate", Capability: "storage.put", CallsPerS: r, P95ms: 3}}}
		run(t, m, m.update(mapGatheredMsg{g: g}))
	}
	sm := p.samples[edgeID{id("beardog"), id("nestgate"), "storage.put"}]
	if sm == nil || len(sm.rate) != 3 || sm.rate[0] != 2 || sm.rate[2] != 1 {
		t.Fatalf("samples %+v", sm)
	}
	goTo(t, m, mapKey{node: id("beardog"), from: id("beardog"), to: id("nestgate"), capy: "storage.put", edge: true})
	keyMsgs(t, m, "enter")
	if scr := ansi.Strip(m.render()); !strings.Contains(scr, "▅▅██▃▃  1/s") {
		t.Fatalf("the edge does not draw its samples:\n%s", scr)
	}
}
