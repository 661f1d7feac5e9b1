package ipc_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const (
	eastSeed = "the-east-family-seed-0123456789"
	westSeed = "the-west-family-seed-0123456789"
)

// familySecurity is the user of family east, who also knows west's seed.
func familySecurity() ipc.Security {
	return ipc.Security{Family: "east", Seed: ipc.NewSeed(eastSeed), Seeds: map[string]ipc.Seed{"west": ipc.NewSeed(westSeed)}}
}

// TestSeedBelongsToItsFamily: each family's socket is reached with its own
// family's seed, whether the family is given (TargetFamily, as discovery
// splits names) or read from a name ending in a known family; the user's
// own seed is never handed to another family's socket: a family with no
// known seed is a *ipc.BTSPRequiredError naming it, before connecting.
func TestSeedBelongsToItsFamily(t *testing.T) {
	east := startAt(t, "beardog-east.sock", btspPrimal([]byte(eastSeed), ""))
	west := startAt(t, "beardog-west.sock", btspPrimal([]byte(westSeed), ""))
	for _, tc := range []struct {
		name string
		ep   ipc.Endpoint
		fam  string
	}{
		{"own family by name", east.Endpoint(), ""},
		{"own family given", east.Endpoint(), "east"},
		{"other family by name", west.Endpoint(), ""},
		{"other family given", west.Endpoint(), "west"},
	} {
		sec := familySecurity()
		sec.TargetFamily = tc.fam
		c := mustDial(t, tc.ep, ipc.Options{Security: sec})
		mustLive(t, c)
	}

	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	north, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-north.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(north.Close)
	sec := familySecurity()
	sec.TargetFamily = "north"
	_, err = dialErr(t, ipc.Endpoint{Transport: ipc.Unix, Path: north.Path()}, ipc.Options{Security: sec})
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) || be.Family != "north" || !strings.Contains(err.Error(), `family "north"`) || !strings.Contains(err.Error(), "[families.north]") {
		t.Fatalf("err = %v, want a *ipc.BTSPRequiredError naming family north", err)
	}
	if !ipc.SecurityFailure(err) {
		t.Fatalf("SecurityFailure(%v) = false", err)
	}
	if n := len(north.Received()); n != 0 {
		t.Fatalf("%d connection(s) to a family with no known seed", n)
	}
}

// TestSeedFor: which seed goes where.
func TestSeedFor(t *testing.T) {
	sock := func(name string) ipc.Endpoint { return ipc.Endpoint{Transport: ipc.Unix, Path: "/run/x/" + name} }
	sec := familySecurity()
	cases := []struct {
		ep         ipc.Endpoint
		target     string
		wantFamily string
		ok         bool
	}{
		{sock("beardog-east.sock"), "", "east", true},
		{sock("beardog-west.sock"), "", "west", true},
		{sock("beardog.sock"), "", "", true}, // no family: the user's own seed
		{sock("beardog-north.sock"), "north", "north", false},
		{sock("beardog-west.sock"), "north", "north", false}, // what discovery split wins
		{sock("beardog-default.sock"), "default", "", true},
	}
	for _, tc := range cases {
		s := sec
		s.TargetFamily = tc.target
		seed, fam, ok := s.SeedFor(tc.ep)
		if fam != tc.wantFamily || ok != tc.ok || ok == seed.IsZero() {
			t.Errorf("%s (target family %q): family %q ok %v (seed set %v), want %q %v", tc.ep.Path, tc.target, fam, ok, !seed.IsZero(), tc.wantFamily, tc.ok)
		}
	}
	// A seed given with no family is tried where no other is known.
	unbound := ipc.Security{Seed: ipc.NewSeed(eastSeed), Seeds: map[string]ipc.Seed{"west": ipc.NewSeed(westSeed)}}
	unbound.TargetFamily = "north"
	if seed, _, ok := unbound.SeedFor(sock("beardog-north.sock")); !ok || seed.IsZero() {
		t.Error("a seed given without a family is not tried on a family with no other seed")
	}
	// A family only claimed by the peer (identity.get, a manifest, a
	// registry's answer) picks no seed: not the user's own family's (sec's
	// Family is east), not another's whose seed is known, not a seed given
	// without a family; a name carrying a family still picks it.
	for _, s := range []ipc.Security{sec, unbound} {
		for _, claim := range []string{"east", "west", "north"} {
			s := s
			s.TargetFamily, s.ClaimedFamily = "", claim
			if seed, fam, ok := s.SeedFor(ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9200"}); ok || !seed.IsZero() || fam != claim {
				t.Errorf("claimed %q over TCP (family %q): family %q ok %v, seed set %v", claim, s.Family, fam, ok, !seed.IsZero())
			}
			if _, _, ok := s.SeedFor(sock("beardog.sock")); ok {
				t.Errorf("claimed %q, a name carrying none: a seed was picked", claim)
			}
		}
	}
	claimed := sec
	claimed.ClaimedFamily = "west"
	if seed, fam, ok := claimed.SeedFor(sock("beardog-east.sock")); !ok || seed.IsZero() || fam != "east" {
		t.Errorf("the name's family lost to a claim: %q %v", fam, ok)
	}
}
