package discovery

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// TestFamilySplitFromIdentity: a family-scoped socket whose primal is not
// a known name and whose family id is seen nowhere else is split where the
// peer's identity.get says its primal name ends; an identity that says
// nothing, or another name, or another family, leaves the name whole.
func TestFamilySplitFromIdentity(t *testing.T) {
	dir := tempDir(t)
	p := primal("beta", false)
	serve(t, dir, "beta-west-tower-1.sock", p.Config())
	// It says it is someone else: no split.
	serve(t, dir, "gamma-east-2.sock", primal("delta", false).Config())
	// Its identity names another family: no split.
	other := primal("zeta", false)
	other.IdentityOnly = true
	cfg := other.Config()
	cfg.Methods["identity"] = func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"primal": "zeta", "family_id": "north"}, nil
	}
	serve(t, dir, "zeta-south-9.sock", cfg)
	// No identity at all: no split.
	anon := primal("omega", false)
	anon.NoIdentity = true
	serve(t, dir, "omega-x-1.sock", anon.Config())

	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, NoRegistries: true,
		Probe: ProbeOptions{StaleTimeout: 3 * time.Second}})
	snap, err := d.Sweep(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	type nf struct{ name, family string }
	var got []nf
	for _, tg := range snap.Targets {
		got = append(got, nf{tg.Name, tg.Family})
	}
	want := []nf{{"beta", "west-tower-1"}, {"gamma-east-2", ""}, {"omega-x-1", ""}, {"zeta-south-9", "north"}} // north: the identity's own family, as before
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("targets %+v, want %+v", got, want)
	}
	beta := snap.Targets[0]
	if !reflect.DeepEqual(beta.Aliases, []string{"beta-west-tower-1"}) || !beta.HasName("beta-west-tower-1") {
		t.Fatalf("the whole socket name must stay a name of beta: %+v", beta.Aliases)
	}
	if len(snap.Resolve("beta-west-tower-1")) != 1 || len(snap.Resolve("beta")) != 1 {
		t.Fatal("beta is not found by both names")
	}
}

// TestFamilySplitKnownNameUnchanged: a name the matcher already splits
// (known primal) is not touched by the identity.
func TestFamilySplitKnownNameUnchanged(t *testing.T) {
	tg := &Target{Name: "beardog", Family: "west-tower-1", Sources: []SourceRef{{Source: SrcSocketDir, Name: "beardog"}},
		Probe: &Probe{Identity: &capability.Identity{Primal: "beardog"}}}
	splitByIdentity(tg)
	if tg.Name != "beardog" || tg.Family != "west-tower-1" {
		t.Fatalf("%+v", tg)
	}
	// A name the socket gave but the identity does not start: left whole.
	tg = &Target{Name: "beta-west", Sources: []SourceRef{{Source: SrcSocketDir, Name: "beta-west"}},
		Probe: &Probe{Identity: &capability.Identity{Primal: "bet"}}}
	splitByIdentity(tg)
	if tg.Name != "beta-west" {
		t.Fatalf("%+v", tg)
	}
	// A name only a registry gave is left whole.
	tg = &Target{Name: "beta-west", Sources: []SourceRef{{Source: SrcSongbird, Name: "beta-west"}}}
	tg.Probe = &Probe{Identity: &capability.Identity{Primal: "beta"}}
	splitByIdentity(tg)
	if tg.Name != "beta-west" || tg.Family != "" {
		t.Fatalf("%+v", tg)
	}
}
