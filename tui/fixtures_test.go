package tui

import (
	tea "charm.land/bubbletea/v2"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/themes"
)

// sampleTargets is a fixed ecosystem for goldens and benchmarks.
func sampleTargets() []any {
	mk := func(name, version, domain string, lat time.Duration, h Health, level int, btsp bool, caps string) TargetEvent {
		t := Target{Key: "unix:///run/biomeos/" + name + ".sock", Name: name, Endpoint: "unix:///run/biomeos/" + name + ".sock",
			Wire: "jsonrpc", Sources: []string{"socket-dir"}, Health: h, Latency: lat, Level: level, BTSP: btsp}
		if caps != "" {
			c, err := capability.Parse([]byte(caps))
			if err == nil {
				t.Caps, t.Tree = c, c.Tree()
			}
			t.Identity = &capability.Identity{Primal: name, Version: version, Domain: domain}
		}
		return TargetEvent{Kind: TargetAdded, Target: t}
	}
	return []any{
		mk("beardog", "0.9.0", "crypto", 400*time.Microsecond, HealthLive, 2, true, `{"primal":"beardog","version":"0.9.0","methods":["crypto.sign_ed25519","crypto.verify_ed25519","crypto.keygen","btsp.negotiate","btsp.status","health.liveness","health.readiness","identity.get","capabilities.list"],
 "provided_capabilities":[{"type":"crypto","description":"Ed25519 signatures","methods":["sign_ed25519","verify_ed25519","keygen"]}],
 "consumed_capabilities":["storage.put","ai.query"],
 "cost_estimates":{"crypto.sign_ed25519":{"cpu":"low","latency_ms":0.3},"crypto.keygen":{"cpu":"medium"}},
 "operation_dependencies":{"crypto.sign_ed25519":["crypto.keygen"]}}`),
		mk("songbird", "0.4.2", "network", 300*time.Microsecond, HealthLive, 3, false, `{"primal":"songbird","version":"0.4.2","methods":["ipc.list","ipc.discover","ipc.resolve","ipc.register","health.liveness","identity.get","capabilities.list"]}`),
		mk("nestgate", "1.2.0", "storage", 800*time.Microsecond, HealthLive, 2, false, `{"primal":"nestgate","version":"1.2.0","methods":["storage.put","storage.get","storage.list","health.liveness"]}`),
		mk("rhizocrypt", "0.6.1", "dag", 600*time.Microsecond, HealthLive, 1, false, `{"primal":"rhizocrypt","version":"0.6.1","methods":["dag.session.create","dag.event.append","health.liveness"]}`),
		mk("lostprimal", "", "", 0, HealthStale, 0, false, ""),
	}
}

func mustTheme(t *testing.T, name string) themes.Theme {
	t.Helper()
	th, err := themes.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

func winSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }
