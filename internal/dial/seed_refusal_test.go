package dial_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestSeedRefusalIsTheDialsJudgement: what SeedRefusal says of a target
// before any dial is what Dial then does: refused with the same
// *ipc.BTSPRequiredError and nothing sent (a family-scoped socket with no
// seed, or with a seed given with no family: the TUI showed such targets
// as reachable), or a seed is offered and the dial tries a handshake.
func TestSeedRefusalIsTheDialsJudgement(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "beardog-westgate.sock")
	l := listen(t, "unix", path)
	ep, err := ipc.ParseEndpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	seed := ipc.NewSeed("family-seed-for-dial-tests-0123456789")
	for _, tc := range []struct {
		name    string
		family  string
		sec     ipc.Security
		refused bool
		says    string // in the refusal
	}{
		{"no seed", "", ipc.Security{}, true, "no seed is known for family \"westgate\""},
		{"unbound seed", "", ipc.Security{Seed: seed}, true, "--family westgate"},
		{"seed bound by --family", "westgate", ipc.Security{Seed: seed}, false, ""},
		{"another family's seed in the config", "", ipc.Security{Seeds: map[string]ipc.Seed{"westgate": seed}}, false, ""},
		{"own seed of another family", "east", ipc.Security{Seed: seed}, true, "[families.westgate]"},
		{"cleartext by name", "", ipc.Security{Cipher: "null"}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := dial.New(dial.Settings{Family: tc.family, Security: tc.sec})
			if err != nil {
				t.Fatal(err)
			}
			tg := dial.Target{Name: "beardog", Endpoint: ep, Family: "westgate", BTSPRequired: true}
			judged := d.SeedRefusal(tg)
			if (judged != nil) != tc.refused {
				t.Fatalf("SeedRefusal: %v; want refused %v", judged, tc.refused)
			}
			c0, _ := l.seen()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			c, err := d.Dial(ctx, tg, dial.Options{})
			cancel()
			if c != nil {
				c.Close()
			}
			var be *ipc.BTSPRequiredError
			dialRefused := errors.As(err, &be) && be.Failed == nil
			if dialRefused != tc.refused {
				t.Fatalf("Dial: %T %v; SeedRefusal said refused %v", err, err, tc.refused)
			}
			if !tc.refused {
				return
			}
			if judged.Error() != be.Error() {
				t.Errorf("SeedRefusal says\n  %v\nDial says\n  %v", judged, be)
			}
			if !strings.Contains(judged.Error(), tc.says) {
				t.Errorf("the refusal does not say %q: %v", tc.says, judged)
			}
			time.Sleep(20 * time.Millisecond)
			if c1, _ := l.seen(); c1 != c0 {
				t.Errorf("a refused dial reached the socket: %d connection(s)", c1-c0)
			}
		})
	}
}
