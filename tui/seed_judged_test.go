package tui

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestUnboundSeedTargetShownRefused: a seed given with no family (no
// --family, no FAMILY_ID) is offered to no family's socket, so a call to
// beardog-westgate.sock is refused before anything is sent (exit 5 in the
// CLI). The TUI showed such a target as reachable ("asking it with the
// family seed…", then "which failed"), described it and listened to it,
// because a seed was known at all (Config.CanBTSP). It now shows the
// judgement the call reaches, with how to bind the seed, and asks the
// target nothing; with the seed bound to the family (--family westgate)
// the same target is described through the handshake.
func TestUnboundSeedTargetShownRefused(t *testing.T) {
	for _, bound := range []bool{false, true} {
		name := map[bool]string{false: "unbound", true: "bound"}[bound]
		t.Run(name, func(t *testing.T) {
			dir, err := ipctest.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			h := familyPeer(t, dir, "beardog-westgate.sock", []byte(scopeSeed))
			sec := ipc.Security{Seed: ipc.NewSeed(scopeSeed), Prefix: ipc.PrefixAuto}
			if bound {
				sec.Family = "westgate"
			}
			tg := locked(discovered("bd", "beardog", h.Path(), discovery.StateLive))
			tg.Family = "westgate"
			cfg := goldenConfig("dark")
			// CanBTSP as the CLI sets it: some seed is known.
			cfg.NoListen, cfg.MaxListen, cfg.Security, cfg.CanBTSP, cfg.Timeout = false, 50, sec, true, 5*time.Second
			m, _ := testModel(t, cfg)
			run(t, m, m.update(feedMsg{items: added(tg)}))
			got := m.pc.targets[tg.ID]
			if got == nil || !got.judged {
				t.Fatalf("the target was not judged: %+v", got)
			}
			m.setFocus(pCaps)
			body := ansi.Strip(strings.Join(m.cp().body(got), "\n"))
			if bound {
				if got.refusal != nil || strings.Contains(body, "Calls are refused") {
					t.Errorf("a seed bound to the family is shown refused: %v\n%s", got.refusal, body)
				}
				if !m.described[tg.ID] || len(h.Received()) == 0 {
					t.Errorf("the target was not described through the handshake (described %v, %d connection(s))", m.described[tg.ID], len(h.Received()))
				}
				return
			}
			if got.refusal == nil || !got.refusal.Unbound {
				t.Fatalf("judgement: %+v, want an unbound seed's refusal", got.refusal)
			}
			for _, want := range []string{"Calls are refused", "given with no family", "--family westgate", "FAMILY_ID=westgate", "[families.westgate]"} {
				if !strings.Contains(strings.Join(strings.Fields(body), " "), want) {
					t.Errorf("the caps pane does not say %q:\n%s", want, body)
				}
			}
			for _, wrong := range []string{"asking it with the family seed", "which failed"} {
				if strings.Contains(body, wrong) {
					t.Errorf("the caps pane says %q of a target whose calls are refused:\n%s", wrong, body)
				}
			}
			if m.described[tg.ID] {
				t.Error("the TUI asked the target to describe itself")
			}
			if m.listen.wanted(got) {
				t.Error("the listener wants a target whose calls are refused")
			}
			title, _ := capsTitle(m.pc.st, got)
			if !strings.Contains(ansi.Strip(title), "calls refused") {
				t.Errorf("the caps header does not say calls are refused: %q", ansi.Strip(title))
			}
			// The targets list marks it too, not with the lock a seed opens.
			if row := ansi.Strip(m.tp().row(m.pc.st, got, 60, false, false)); !strings.Contains(row, "⚿✕") {
				t.Errorf("the targets list shows a refused target as %q", row)
			}
			// The call reaches the same judgement, and sends nothing.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			_, err = m.pc.client.send(ctx, tg, ipc.Request{Method: "health.liveness"})
			cancel()
			var be *ipc.BTSPRequiredError
			if !errors.As(err, &be) || be.Error() != got.refusal.Error() {
				t.Errorf("the call says %v;\nthe TUI showed %v", err, got.refusal)
			}
			if n := len(h.Received()); n != 0 {
				t.Errorf("the peer got %d connection(s)", n)
			}
		})
	}
}
