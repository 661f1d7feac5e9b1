package ipc_test

import (
	"errors"
	"os"
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
	// A seed given with no family goes to an endpoint of no family only
	// (standalone), never to a socket whose name carries a family: that is
	// a family it was not given for.
	unbound := ipc.Security{Seed: ipc.NewSeed(eastSeed), Seeds: map[string]ipc.Seed{"west": ipc.NewSeed(westSeed)}}
	unbound.TargetFamily = "north"
	if seed, fam, ok := unbound.SeedFor(sock("beardog-north.sock")); ok || !seed.IsZero() || fam != "north" {
		t.Errorf("a seed given without a family went to family north: family %q ok %v seed set %v", fam, ok, !seed.IsZero())
	}
	unbound.TargetFamily = ""
	if seed, fam, ok := unbound.SeedFor(sock("beardog.sock")); !ok || seed.IsZero() || fam != "" {
		t.Errorf("a seed given without a family is not used for a standalone socket: family %q ok %v", fam, ok)
	}
	unbound.TargetFamily = "west"
	if seed, _, ok := unbound.SeedFor(sock("beardog-west.sock")); !ok || seed.IsZero() {
		t.Error("west's own seed (the config's) is not used for west")
	}
	unbound.TargetFamily = "north"
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

// TestUnboundSeedNotOfferedToAFamily: a seed set with no family (no
// FAMILY_ID, no --family) is not offered to a socket whose name carries a
// family (as discovery splits it): the dial is a *ipc.BTSPRequiredError (a
// security failure, exit 5) before anything connects, saying to name the
// family with --family; with the family named the seed is used.
func TestUnboundSeedNotOfferedToAFamily(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	other, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-otherfamily.sock"), &ipctest.HostileBTSP{Seed: []byte(eastSeed)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	var trace traceLog
	_, err = dialErr(t, ipc.Endpoint{Transport: ipc.Unix, Path: other.Path()}, ipc.Options{Trace: trace.add,
		Security: ipc.Security{Seed: ipc.NewSeed(eastSeed), TargetFamily: "otherfamily", FamilyScoped: true}})
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) || !ipc.SecurityFailure(err) || be.Family != "otherfamily" {
		t.Fatalf("err = %T %v, want a *ipc.BTSPRequiredError naming family otherfamily", err, err)
	}
	if !strings.Contains(err.Error(), "--family otherfamily") || !strings.Contains(err.Error(), "no family") {
		t.Fatalf("the error does not say how to give the seed for the family: %v", err)
	}
	if n := len(other.Received()); n != 0 {
		t.Fatalf("%d connection(s) to family otherfamily with a seed given for no family", n)
	}
	if !strings.Contains(trace.String(), "not offered to family otherfamily") {
		t.Fatalf("the trace does not say why:\n%s", trace.String())
	}

	// Named (--family), the seed is that family's and goes to it.
	s := startAt(t, "beardog-otherfamily.sock", btspPrimal([]byte(eastSeed), ""))
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(eastSeed), Family: "otherfamily",
		TargetFamily: "otherfamily", FamilyScoped: true, Prefix: ipc.PrefixOff}})
	mustLive(t, c)
	// With no family at all (a standalone socket), the seed is used.
	st := startAt(t, "beardog.sock", btspPrimal([]byte(eastSeed), ""))
	c = mustDial(t, st.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(eastSeed), RequireBTSP: true, Prefix: ipc.PrefixOff}})
	mustLive(t, c)
}
