package tui

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestFamilySeedNeverOnScreen: the TUI holds a sentinel family seed, does
// the BTSP handshake with a family-scoped primal (describing it, calling it,
// listening to it), and with one whose family has another seed (the
// handshake fails); no pane, the trace of every frame, the history pane,
// the recorded calls or the status line ever shows the seed in any form.
func TestFamilySeedNeverOnScreen(t *testing.T) {
	const sentinel = "SENTINEL-tui-seed-3e1d77-never-shown"
	forms := []string{sentinel, hex.EncodeToString([]byte(sentinel)), base64.StdEncoding.EncodeToString([]byte(sentinel)),
		base64.RawURLEncoding.EncodeToString([]byte(sentinel)), "3e1d77"}
	check := func(t *testing.T, where, s string) {
		t.Helper()
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Fatalf("%s shows the seed (%q):\n%s", where, f, s)
			}
		}
	}
	for _, tc := range []struct {
		name, serverSeed string
		ok               bool
	}{
		{"same-family", sentinel, true},
		{"other-family", "another-family-seed-entirely", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := ipctest.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			p := &ipctest.Primal{Name: "beardog", Version: "0.9.0", Domain: "crypto", Format: ipctest.FormatStandard,
				Groups: []ipctest.Group{{Type: "crypto", Methods: []string{"sign_ed25519"}}}}
			cfg := p.Config()
			cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(tc.serverSeed)}, false)
			path := filepath.Join(dir, "beardog-fam.sock")
			s, err := ipctest.Listen(path, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })

			hist := NewMemHistory(0)
			mc := goldenConfig("dark")
			mc.History, mc.CanBTSP, mc.NoListen, mc.Timeout = hist, true, false, 5*time.Second
			mc.Security = ipc.Security{Seed: ipc.NewSeed(sentinel), Family: "fam", Memory: ipc.NewEndpointMemory()}
			m, _ := testModel(t, mc)
			tg := famTarget(path)
			// Adding it selects it, which describes it through the handshake,
			// and listens to it.
			run(t, m, m.update(feedMsg{items: added(tg)}))
			got := m.pc.targets[tg.ID]
			if tc.ok && (got.caps() == nil || got.errText() != "") {
				t.Fatalf("the handshake should have let the TUI describe the target: err %q", got.errText())
			}
			if !tc.ok && got.errText() == "" {
				t.Fatal("a handshake with another family's seed should have failed")
			}
			m.setFocus(pComposer)
			m.comp().method.Set("crypto.sign_ed25519")
			m.comp().params.Set(`{"message":"aGk="}`)
			run(t, m, m.update(press("enter")[0]))
			ans := m.resp().ans
			if ans == nil || (tc.ok && ans.outcome != "ok") || (!tc.ok && ans.outcome == "ok") {
				t.Fatalf("answer %+v", ans)
			}
			drainFeed(t, m, 200*time.Millisecond)
			if m.trace().ring.Len() == 0 {
				t.Fatal("the trace saw no frame")
			}
			run(t, m, m.histp().load(""))
			screens := map[string]string{}
			// The call's whole envelope, as sent and received.
			m.setFocus(pResponse)
			run(t, m, m.update(press("r")[0]))
			if !m.resp().rawMode {
				t.Fatal("r did not show the envelope")
			}
			screens["raw envelope"] = m.render()
			for _, pn := range []paneID{pTargets, pCaps, pComposer, pResponse, pEvents, pTrace, pHistory, pRequests} {
				m.setFocus(pn)
				screens[tabName(pn)] = m.render()
				m.zoom = true
				m.layout()
				screens[tabName(pn)+" zoomed"] = m.render()
				m.zoom = false
				m.layout()
			}
			// Every frame of the trace, handshake included, opened whole.
			n := m.trace().ring.Len()
			for i := 0; i < n; i++ {
				m.setFocus(pTrace)
				m.trace().back = i
				run(t, m, m.update(press("enter")[0]))
				if a := m.resp().ans; a == nil || !strings.HasPrefix(a.title, "frame ") {
					t.Fatalf("frame %d did not open: %+v", i, a)
				}
				m.setFocus(pResponse)
				screens[fmt.Sprintf("trace frame %d", i)] = m.render()
			}
			// The handshake's notes were opened and read like any frame.
			sawHandshake := false
			for i := 0; i < n; i++ {
				sawHandshake = sawHandshake || strings.Contains(ansi.Strip(screens[fmt.Sprintf("trace frame %d", i)]), "BTSP handshake (json-line")
			}
			if !sawHandshake {
				t.Error("no opened trace frame shows the BTSP handshake")
			}
			m.trace().back = 0
			for where, sc := range screens {
				check(t, where, sc)
				check(t, where+" (plain)", ansi.Strip(sc))
			}
			check(t, "the status line", m.pc.status)
			for i := 0; i < m.trace().ring.Len(); i++ {
				check(t, "a trace frame", fmt.Sprintf("%+v", m.trace().ring.At(i)))
			}
			es, err := hist.Search(context.Background(), "", 100)
			if err != nil || len(es) == 0 {
				t.Fatalf("history: %d calls, %v", len(es), err)
			}
			check(t, "the recorded calls", fmt.Sprintf("%+v", es))
			c, _ := history.CommandFor(recordFor(ans.target, ans.req, time.Time{}, nil, nil))
			check(t, "the command copied", c.Line+strings.Join(c.Notes, ""))
		})
	}
}
