package tui

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// probedTarget probes the socket at path through discovery's prober with
// sec, as the TUI's discovery watcher does, and converts the result.
func probedTarget(t *testing.T, path string, sec ipc.Security) *target {
	t.Helper()
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: path}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := discovery.NewProber(discovery.ProbeOptions{ConnectTimeout: 2 * time.Second, StaleTimeout: 2 * time.Second, Security: sec}).
		Probe(ctx, discovery.ProbeSpec{Endpoint: ep, Family: "fam"})
	d := &discovery.Target{ID: ep.String(), Name: "beardog", Family: "fam", Endpoint: ep, Address: ep.String(), Kind: discovery.KindPrimal, Probe: &r}
	return newTarget(d, nil)
}

// TestLockSaysUnauthenticated: a target probed through a BTSP session whose
// server is not authenticated (a cipher named on the JSON-line handshake, an
// impostor that does not know the seed) or that carries cleartext (the null
// cipher) shows the error-styled ⚿! in its row and the word in the caps
// header; one probed through the default (auto) session shows the plain
// lock and no word.
func TestLockSaysUnauthenticated(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	real := filepath.Join(dir, "beardog-fam.sock")
	p := &ipctest.Primal{Name: "beardog", Version: "0.9.0", Domain: "crypto", Format: ipctest.FormatStandard}
	cfg := p.Config()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(scopeSeed)}, false)
	s, err := ipctest.Listen(real, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	impostor := familyPeer(t, dir, "songbird-fam.sock", nil) // no seed: accepts any proof

	for _, tc := range []struct {
		name, path, cipher string
		weak               string // the word in the caps header; "" for the plain lock
	}{
		{"auto", real, "auto", ""},
		{"named-chacha20", real, "chacha20_poly1305", "unauthenticated"},
		{"null", real, "null", "cleartext"},
		{"impostor-chacha20", impostor.Path(), "chacha20_poly1305", "unauthenticated"},
		{"impostor-null", impostor.Path(), "null", "cleartext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cipher, negotiate, err := ipc.ParseBTSPCipher(tc.cipher)
			if err != nil {
				t.Fatal(err)
			}
			sec := ipc.Security{Seed: ipc.NewSeed(scopeSeed), Family: "fam", Cipher: cipher, Negotiate: negotiate, Prefix: ipc.PrefixAuto}
			tg := probedTarget(t, tc.path, sec)
			m, _ := testModel(t, goldenConfig("dark"))
			st := m.pc.st
			if tg.session() == nil {
				t.Fatalf("the probe said nothing of its BTSP session (health %v, err %q)", tg.health(), tg.errText())
			}
			row := m.tp().row(st, tg, 60, false, false)
			title, right := capsTitle(st, tg)
			weakMark, lock := st.Err.Render("⚿! "), st.Warn.Render("⚿ ")
			if tc.weak == "" {
				if !strings.Contains(row, lock) || strings.Contains(row, "⚿!") {
					t.Errorf("authenticated session: row %q lacks the plain lock %q", row, lock)
				}
				if !strings.Contains(title, "BTSP") || strings.Contains(title, "unauthenticated") || strings.Contains(title, "cleartext") || strings.Contains(right, "⚿!") {
					t.Errorf("authenticated session: caps header %q / %q", title, right)
				}
				return
			}
			if !strings.Contains(row, weakMark) || strings.Contains(row, lock) {
				t.Errorf("%s session: row %q lacks the marker %q", tc.weak, row, weakMark)
			}
			if !strings.Contains(title, "BTSP "+tc.weak) || !strings.Contains(right, st.Err.Render("⚿!")) {
				t.Errorf("%s session: caps header %q / %q", tc.weak, title, right)
			}
			// The whole screen, as the user sees it.
			m.update(feedMsg{items: added(tg.Target)})
			m.setFocus(pCaps)
			if scr := m.render(); !strings.Contains(scr, "BTSP "+tc.weak) {
				t.Errorf("the screen does not say %q:\n%s", tc.weak, scr)
			}
		})
	}
}

// TestDescribeLearnsSession: a target discovery could not open (locked)
// that the TUI describes through its own connection gets that connection's
// session: unauthenticated with a cipher named on the JSON-line handshake,
// and it stays known through discovery's later updates.
func TestDescribeLearnsSession(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "beardog-fam.sock")
	p := &ipctest.Primal{Name: "beardog", Version: "0.9.0", Domain: "crypto", Format: ipctest.FormatStandard,
		Groups: []ipctest.Group{{Type: "crypto", Methods: []string{"sign_ed25519"}}}}
	cfg := p.Config()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(scopeSeed)}, false)
	s, err := ipctest.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, tc := range []struct{ cipher, weak string }{{"auto", ""}, {"chacha20_poly1305", "unauthenticated"}} {
		t.Run(tc.cipher, func(t *testing.T) {
			cipher, negotiate, err := ipc.ParseBTSPCipher(tc.cipher)
			if err != nil {
				t.Fatal(err)
			}
			mc := goldenConfig("dark")
			mc.CanBTSP, mc.Timeout = true, 5*time.Second
			mc.Security = ipc.Security{Seed: ipc.NewSeed(scopeSeed), Family: "fam", Cipher: cipher, Negotiate: negotiate, Memory: ipc.NewEndpointMemory()}
			m, _ := testModel(t, mc)
			tg := famTarget(path)
			run(t, m, m.update(feedMsg{items: added(tg)}))
			got := m.pc.targets[tg.ID]
			if got.caps() == nil || got.session() == nil || !got.session().BTSP {
				t.Fatalf("described: caps %v, session %+v, err %q", got.caps() != nil, got.session(), got.errText())
			}
			if w := got.weakSession(); w != tc.weak {
				t.Fatalf("session %+v says %q, want %q", *got.session(), w, tc.weak)
			}
			m.update(feedMsg{items: []any{changed(famTarget(path))}})
			if got := m.pc.targets[tg.ID]; got.session() == nil || got.weakSession() != tc.weak {
				t.Fatalf("after discovery's update: session %+v", got.session())
			}
		})
	}
}

// famTarget is the family-scoped beardog at path as discovery reports it
// without a seed: alive, demanding BTSP, undescribed.
func famTarget(path string) *discovery.Target {
	d := locked(discovered("unix://"+path, "beardog-fam", "unix://"+path, discovery.StateLocked))
	d.Family, d.Probe.Wire = "fam", "jsonrpc"
	return d
}
