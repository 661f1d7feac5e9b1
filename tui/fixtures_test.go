package tui

import (
	"encoding/json"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// discovered is a target as discovery reports it: id, name and address
// (parsed into its endpoint), with a probe in state s.
func discovered(id, name, addr string, s discovery.State) *discovery.Target {
	ep, _ := ipc.ParseEndpoint(addr)
	return &discovery.Target{ID: id, Name: name, Address: addr, Endpoint: ep, Kind: discovery.KindPrimal, Probe: &discovery.Probe{State: s}}
}

// locked has d demand a BTSP handshake.
func locked(d *discovery.Target) *discovery.Target {
	d.Probe.BTSPRequired = true
	return d
}

// added, changed and removed are discovery's events about targets.
func added(ds ...*discovery.Target) []any {
	out := make([]any, 0, len(ds))
	for _, d := range ds {
		out = append(out, discovery.Event{Kind: discovery.Added, Target: d})
	}
	return out
}

func changed(d *discovery.Target) discovery.Event {
	return discovery.Event{Kind: discovery.Changed, Target: d}
}

func removed(d *discovery.Target) discovery.Event {
	return discovery.Event{Kind: discovery.Removed, Target: d}
}

// named is a target known by its name only (answers opened in the viewer).
func named(name string) *discovery.Target { return &discovery.Target{Name: name} }

// sampleTargets is a fixed ecosystem for goldens and benchmarks.
func sampleTargets() []any {
	mk := func(name, version, domain string, lat time.Duration, s discovery.State, level int, btsp bool, caps string) *discovery.Target {
		addr := "unix:///run/biomeos/" + name + ".sock"
		d := discovered(addr, name, addr, s)
		d.Sources, d.Level = []discovery.SourceRef{{Source: "socket-dir"}}, level
		d.Probe.Wire, d.Probe.Latency, d.Probe.BTSPRequired = "jsonrpc", lat, btsp
		if caps != "" {
			c, err := capability.Parse([]byte(caps))
			if err == nil {
				d.Probe.Capabilities = c
			}
			d.Probe.Identity = &capability.Identity{Primal: name, Version: version, Domain: domain}
		}
		return d
	}
	return added(
		mk("beardog", "0.9.0", "crypto", 400*time.Microsecond, discovery.StateLive, 2, true, `{"primal":"beardog","version":"0.9.0","methods":["crypto.sign_ed25519","crypto.verify_ed25519","crypto.keygen","btsp.negotiate","btsp.status","health.liveness","health.readiness","identity.get","capabilities.list"],
 "provided_capabilities":[{"type":"crypto","description":"Ed25519 signatures","methods":["sign_ed25519","verify_ed25519","keygen"]}],
 "consumed_capabilities":["storage.put","ai.query"],
 "cost_estimates":{"crypto.sign_ed25519":{"cpu":"low","latency_ms":0.3},"crypto.keygen":{"cpu":"medium"}},
 "operation_dependencies":{"crypto.sign_ed25519":["crypto.keygen"]}}`),
		mk("songbird", "0.4.2", "network", 300*time.Microsecond, discovery.StateLive, 3, false, `{"primal":"songbird","version":"0.4.2","methods":["ipc.list","ipc.discover","ipc.resolve","ipc.register","health.liveness","identity.get","capabilities.list"]}`),
		mk("nestgate", "1.2.0", "storage", 800*time.Microsecond, discovery.StateLive, 2, false, `{"primal":"nestgate","version":"1.2.0","methods":["storage.put","storage.get","storage.list","health.liveness"]}`),
		mk("rhizocrypt", "0.6.1", "dag", 600*time.Microsecond, discovery.StateLive, 1, false, `{"primal":"rhizocrypt","version":"0.6.1","methods":["dag.session.create","dag.event.append","health.liveness"]}`),
		mk("lostprimal", "", "", 0, discovery.StateStale, 0, false, ""),
	)
}

// sampleTarget is one of sampleTargets.
func sampleTarget(i int) *discovery.Target { return sampleTargets()[i].(discovery.Event).Target }

func mustTheme(t *testing.T, name string) themes.Theme {
	t.Helper()
	th, err := themes.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func winSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// tailLine is the events tail's line for what a peer pushed or the TUI
// noted, built the way the program builds it: a notification (a heartbeat
// when its name says so), a lean event, a request with id, a liveness
// heartbeat, or a note whose text is data.
func tailLine(at time.Time, source, key string, kind EventKind, name string, data []byte, id json.RawMessage) line {
	var m ipc.Message
	switch kind {
	case EvNote:
		l := noteLine(at, source, name, string(data))
		l.key = key
		return l
	case EvHeartbeat:
		if !isHeartbeatName(name) {
			return newLine(key, events.Event{Time: at, Source: source, Kind: events.KindLiveness, Name: name, Payload: data})
		}
		m = ipc.Message{Kind: ipc.KindNotification, Method: name, Params: data}
	case EvNotification:
		m = ipc.Message{Kind: ipc.KindNotification, Method: name, Params: data}
	case EvEvent:
		m = ipc.Message{Kind: ipc.KindEvent, Type: name, Data: data}
	case EvRequest:
		m = ipc.Message{Kind: ipc.KindRequest, Method: name, Params: data, ID: id}
	default:
		m = ipc.Message{Kind: ipc.KindInvalid, Raw: data, Warning: name}
	}
	m.Time = at
	return messageLine(source, key, &m)
}
