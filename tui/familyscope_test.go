package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const scopeSeed = "family-seed-for-tui-tests-0123456789"

// familyPeer listens with a recording BTSP server at dir/name.
func familyPeer(t *testing.T, dir, name string, seed []byte) *ipctest.HostileBTSP {
	t.Helper()
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, name), &ipctest.HostileBTSP{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// TestFamilyScopedBeforeProbe: a call or a listen made before the target's
// probe said anything about BTSP (BTSP false, maybe no family yet) sends
// nothing in cleartext to a family-scoped name (a known primal's, or one
// carrying a family seen in the same directory or split by discovery);
// with a seed, every connection starts with a BTSP hello.
func TestFamilyScopedBeforeProbe(t *testing.T) {
	for _, seeded := range []bool{false, true} {
		name := "no-seed"
		var seed []byte
		sec := ipc.Security{Prefix: ipc.PrefixAuto}
		if seeded {
			// Each family's seed is given for it (a seed of no family
			// is offered to no family's socket): westgate's as the
			// user's own, east's as another family's.
			name, seed, sec.Seed, sec.Family = "seed", []byte(scopeSeed), ipc.NewSeed(scopeSeed), "westgate"
			sec.Seeds = map[string]ipc.Seed{"east": ipc.NewSeed(scopeSeed)}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, err := ipctest.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			peers := []*ipctest.HostileBTSP{
				familyPeer(t, dir, "beardog-westgate.sock", seed),  // a known primal's name
				familyPeer(t, dir, "myprimal-westgate.sock", seed), // the family seen beside it
				familyPeer(t, dir, "other-east.sock", seed),        // the family discovery split
			}
			other := discovered("ot", "other", peers[2].Path(), discovery.StateLive)
			other.Family = "east"
			targets := []*discovery.Target{
				discovered("bd", "beardog", peers[0].Path(), discovery.StateUnknown),
				discovered("mp", "myprimal", "unix://"+peers[1].Path(), discovery.StateLive),
				other,
			}
			c := newClient(context.Background(), nil, newFeed(1024, time.Millisecond), 0, sec)
			defer c.close()
			for _, tg := range targets {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, err := c.send(ctx, tg, ipc.Request{Method: "transfer.funds", Params: json.RawMessage(`{"to":"SENTINEL-tui-9c1e"}`)})
				cancel()
				if err == nil {
					t.Errorf("%s: the call succeeded against a server that cannot answer it", tg.Name)
				}
			}
			// The listen path: the model dials the live ones.
			cfg := goldenConfig("dark")
			cfg.NoListen, cfg.MaxListen, cfg.Security, cfg.CanBTSP = false, 50, sec, seeded
			m, _ := testModel(t, cfg)
			var items []any
			for _, tg := range targets {
				items = append(items, added(tg)...)
			}
			run(t, m, m.update(feedMsg{items: items}))
			for i, h := range peers {
				conns := h.Received()
				if !seeded && len(conns) > 0 {
					t.Errorf("%s: %d connection(s) without a seed, the first carrying %q", targets[i].Name, len(conns), conns[0])
				}
				t.Logf("%s: %d connection(s)", targets[i].Name, len(conns))
				for j, b := range conns {
					if len(b) > 0 && !ipctest.IsBTSPHello(b) {
						t.Errorf("%s: connection %d did not start with a BTSP hello: %q", targets[i].Name, j+1, b)
					}
					if bytes.Contains(b, []byte("SENTINEL-tui-9c1e")) || bytes.Contains(b, []byte("transfer.funds")) {
						t.Errorf("%s: connection %d carried the call readable", targets[i].Name, j+1)
					}
				}
				if seeded && len(conns) == 0 {
					t.Errorf("%s: never reached with a seed", targets[i].Name)
				}
			}
		})
	}
}
