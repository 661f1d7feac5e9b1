package discovery

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func probed(t *testing.T, dir, name string, p *ipctest.Primal) *Target {
	t.Helper()
	serve(t, dir, name+".sock", p.Config())
	ep := unixEP(filepath.Join(dir, name+".sock"))
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second}).Probe(ctxT(t), ProbeSpec{Endpoint: ep, Full: true})
	tg := &Target{ID: name, Name: name, Endpoint: ep, Address: ep.String(), Probe: &r}
	tg.Level = Audit(tg, AuditOptions{}).Level
	return tg
}

func point(rep *Report, id string) Point {
	for _, p := range rep.Points {
		if p.ID == id {
			return p
		}
	}
	return Point{}
}

func TestAuditCallAll(t *testing.T) {
	dir := tempDir(t)
	p := primal("sloppy", false)
	p.Omit = []string{"x.undo"} // advertised, but "method not found"
	tg := probed(t, dir, "sloppy", p)
	if tg.Level != 2 {
		t.Fatalf("without --call-all the level is %d", tg.Level)
	}
	if pt := point(Audit(tg, AuditOptions{}), "l2.callable"); pt.Result != Skip || !strings.Contains(pt.Why, "--call-all") {
		t.Errorf("%+v", pt)
	}
	calls, err := CallAll(ctxT(t), tg, time.Second, ipc.Security{})
	if err != nil {
		t.Fatal(err)
	}
	rep := Audit(tg, AuditOptions{Calls: calls})
	pt := point(rep, "l2.callable")
	if rep.Level != 1 || pt.Result != Fail || !strings.Contains(pt.Why, "x.undo") || !rep.CalledAll {
		t.Errorf("level %d, %+v", rep.Level, pt)
	}
}

func TestAuditNamingAndSignature(t *testing.T) {
	dir := tempDir(t)
	p := primal("Bad Name", false)
	p.Groups = append(p.Groups, ipctest.Group{Type: "Weird", Methods: []string{"DoThing"}})
	p.Sign, p.BadSignature, p.NodeID = true, true, "n"
	tg := probed(t, dir, "bad", p)
	rep := Audit(tg, AuditOptions{})
	if pt := point(rep, "l2.naming"); pt.Result != Fail || !strings.Contains(pt.Why, "Weird.DoThing") {
		t.Errorf("%+v", pt)
	}
	if pt := point(rep, "primal_name"); pt.Result != Warn {
		t.Errorf("%+v", pt)
	}
	if pt := point(rep, "signature"); pt.Result != Fail {
		t.Errorf("%+v", pt)
	}
	if rep.Level != 1 {
		t.Errorf("level %d", rep.Level)
	}
	for _, n := range []string{"dag.session.create", "crypto.blake3_hash", "health.liveness"} {
		if !ValidMethodName(n) {
			t.Errorf("%s rejected", n)
		}
	}
	for _, n := range []string{"nodot", "Dag.x", "dag..x", "dag.x-y", ".x", "dag."} {
		if ValidMethodName(n) {
			t.Errorf("%s accepted", n)
		}
	}
}

func TestAuditUnreachable(t *testing.T) {
	tg := &Target{Name: "x", Probe: &Probe{State: StateStale, Err: "no answer"}}
	rep := Audit(tg, AuditOptions{})
	if rep.Level != 0 || len(rep.Points) != 1 || !strings.Contains(rep.Points[0].Why, "stale") {
		t.Errorf("%+v", rep)
	}
}

func TestCompose(t *testing.T) {
	mk := func(name string, methods, consumed []string, deps map[string][]string) *Target {
		return &Target{Name: name, Probe: &Probe{State: StateLive, Capabilities: &capability.Capabilities{
			Methods: methods, Consumed: consumed, OperationDependencies: deps}}}
	}
	ts := []*Target{
		mk("sweetgrass", []string{"braid.create", "anchoring.anchor"}, []string{"crypto.sign", "storage.artifact", "dag.session.create", "ledger.append"},
			map[string][]string{"anchoring.anchor": {"braid.create"}}),
		mk("beardog", []string{"crypto.sign", "crypto.verify"}, nil, nil),
		mk("nestgate", []string{"storage.artifact.store"}, nil, nil),
		mk("loop", []string{"a.x", "a.y", "a.z"}, nil, map[string][]string{"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}),
		{Name: "rhizocrypt", NoProbe: true, Capabilities: []string{"dag"}}, // known from a registry only
	}
	c := Compose(ts)
	if len(c.Gaps) != 1 || c.Gaps[0].Capability != "ledger.append" || c.Gaps[0].Consumers[0] != "sweetgrass" {
		t.Errorf("gaps %+v", c.Gaps)
	}
	for _, n := range c.Needs {
		if n.Capability == "dag.session.create" && !reflect.DeepEqual(n.Providers, []string{"rhizocrypt"}) {
			t.Errorf("registry capability not counted: %+v", n)
		}
		if n.Capability == "storage.artifact" && !reflect.DeepEqual(n.Providers, []string{"nestgate"}) {
			t.Errorf("prefix match: %+v", n)
		}
	}
	if reflect.DeepEqual(c.Surface, []string{}) || contains(c.Surface, "crypto.sign") || !contains(c.Surface, "crypto.verify") {
		t.Errorf("surface %v", c.Surface)
	}
	if len(c.Cycles) != 1 || !reflect.DeepEqual(c.Cycles[0], []string{"a.x", "a.y", "a.z", "a.x"}) {
		t.Errorf("cycles %v", c.Cycles)
	}
	if c.Complete {
		t.Error("complete with a gap and a cycle")
	}
}

func TestFindCyclesSelfAndNone(t *testing.T) {
	if c := FindCycles(map[string][]string{"a": {"a"}}); len(c) != 1 || len(c[0]) != 2 {
		t.Errorf("%v", c)
	}
	if c := FindCycles(map[string][]string{"a": {"b"}, "b": {"c"}, "d": {"b"}}); len(c) != 0 {
		t.Errorf("%v", c)
	}
}

func TestAuditTransportSecurityHonoured(t *testing.T) {
	dir := tempDir(t)
	p := primal("loose", false)
	p.Extra = map[string]any{"transport_security": map[string]any{"btsp_required": true, "btsp_version": "2.0", "cleartext_available": false}}
	tg := probed(t, dir, "loose", p)
	rep := Audit(tg, AuditOptions{})
	if pt := point(rep, "transport_security"); pt.Result != Pass || !strings.Contains(pt.Why, "btsp_required=true") {
		t.Errorf("%+v", pt)
	}
	if pt := point(rep, "transport_security_honoured"); pt.Result != Warn {
		t.Errorf("cleartext answer on a BTSP-required socket not flagged: %+v", rep.Points)
	}
}
