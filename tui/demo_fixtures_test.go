package tui

import (
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// demoFamily is the family of the demo's family-scoped sockets.
const demoFamily = "westgate-tower-155f"

// demoTargets is the ecosystem `primalscope demo` shows (as `ls` lists
// it): family-scoped BTSP sockets, aliases, bus pools, a stale socket, a
// tarpc sidecar and one not probed yet.
func demoTargets() []any {
	dir := "/tmp/primalscope-demo-2971985807/"
	mk := func(name, file string, s discovery.State, level int, lat time.Duration) *discovery.Target {
		addr := "unix://" + dir + file
		d := discovered(addr, name, addr, s)
		d.Level, d.Probe.Latency, d.Probe.Wire = level, lat, "jsonrpc"
		return d
	}
	fam := func(d *discovery.Target) *discovery.Target {
		d.Family, d.Probe.Wire = demoFamily, "btsp"
		return locked(d)
	}
	alias := func(d *discovery.Target, a ...string) *discovery.Target { d.Aliases = a; return d }
	pool := func(d *discovery.Target, p string) *discovery.Target {
		d.Pool, d.Kind, d.ID = p, discovery.KindBus, d.ID+"#"+p
		return alias(d, "stdiobus")
	}
	tarpc := mk("beardog.tarpc", "beardog.tarpc.sock", discovery.StateUnknown, 0, 0)
	tarpc.Kind = discovery.KindTarpc
	return added(
		fam(mk("beardog", "beardog-"+demoFamily+".sock", discovery.StateLocked, 1, 2600*time.Microsecond)),
		mk("beardog", "beardog.sock", discovery.StateLive, 1, 12*time.Millisecond),
		tarpc,
		fam(mk("biomeos-api", "biomeos-api-"+demoFamily+".sock", discovery.StateUnknown, 0, 0)),
		mk("floatmail", "floatmail/floatmail.sock", discovery.StateLive, 0, 12*time.Millisecond),
		mk("holon-greeter", "holon", discovery.StateLive, 0, 100*time.Microsecond),
		mk("lostprimal", "lostprimal.sock", discovery.StateStale, 0, 0),
		mk("nestgate", "nestgate.sock", discovery.StateLive, 3, 10*time.Millisecond),
		fam(mk("neural-api", "neural-api-"+demoFamily+".sock", discovery.StateLocked, 1, 100*time.Microsecond)),
		mk("petaltongue", "petal", discovery.StateLive, 2, 100*time.Microsecond),
		alias(mk("rhizocrypt", "rhizocrypt.sock", discovery.StateLive, 3, 10*time.Millisecond), "dag"),
		mk("songbird", "songbird.sock", discovery.StateLive, 1, 11*time.Millisecond),
		alias(mk("squirrel", "squirrel.sock", discovery.StateLive, 2, 2200*time.Microsecond), "ai"),
		pool(mk("stdiobus/agent", "stdiobus.sock", discovery.StateLive, 1, 5800*time.Microsecond), "agent"),
		pool(mk("stdiobus/echo", "stdiobus.sock", discovery.StateLive, 1, 8300*time.Microsecond), "echo"),
		mk("toadstool", "toadstool", discovery.StateLive, 1, 100*time.Microsecond),
	)
}

// demoFailure is a call that could not be made, with the reason the demo
// gives for a socket that refuses.
func demoFailure() *answer {
	err := "dial /tmp/primalscope-demo-2971985807/neural-api-" + demoFamily + ".sock: connect: connection refused"
	return &answer{target: named("neural-api"), req: ipc.Request{Method: "health.liveness"}, outcome: "failed", errText: err, noResult: true}
}

// sizes are the screens the layout is made for.
var sizes = [][2]int{{80, 24}, {120, 35}, {200, 50}}

// screenAt is the model's screen at w×h, without styles.
func screenAt(m *model, w, h int) string {
	m.update(winSize(w, h))
	return ansi.Strip(m.render())
}

// squeeze drops the box drawing and every space: the text of a screen as
// one string, however it was wrapped.
func squeeze(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\n', '│', '╭', '╮', '╰', '╯', '─':
			return -1
		}
		return r
	}, s)
}
