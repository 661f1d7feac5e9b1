package capability

import (
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

func findMethod(t *testing.T, tree []Domain, name string) Method {
	t.Helper()
	dom, _ := SplitMethod(name)
	for _, d := range tree {
		if d.Name != dom {
			continue
		}
		for _, m := range d.Methods {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("method %q not in tree", name)
	return Method{}
}

func TestTreeRhizoCrypt(t *testing.T) {
	c := mustParse(t, payload(t, "rhizocrypt_l3.json"))
	tree := c.Tree()
	var names []string
	total := 0
	for _, d := range tree {
		names = append(names, d.Name)
		total += len(d.Methods)
		if !sort.SliceIsSorted(d.Methods, func(i, j int) bool { return d.Methods[i].Name < d.Methods[j].Name }) {
			t.Errorf("domain %s methods not sorted", d.Name)
		}
	}
	if want := []string{"capabilities", "dag", "health", "identity"}; !reflect.DeepEqual(names, want) {
		t.Errorf("domains = %v, want %v", names, want)
	}
	if total != len(c.Methods) {
		t.Errorf("tree holds %d methods, want %d", total, len(c.Methods))
	}
	dag := tree[1]
	if dag.Description != "Ephemeral content-addressed DAG engine" || dag.Version != "0.14.0" {
		t.Errorf("dag domain = %+v", dag)
	}
	m := findMethod(t, tree, "dag.merkle.proof")
	if m.Short != "merkle.proof" || m.Group != "dag" || m.GroupVersion != "0.14.0" {
		t.Errorf("merkle.proof = %+v", m)
	}
	if m.Cost == nil || m.Cost.CPU != "high" {
		t.Errorf("method cost = %+v", m.Cost)
	}
	if !reflect.DeepEqual(m.Prerequisites, []string{"dag.event.append", "dag.merkle.root"}) {
		t.Errorf("prerequisites = %v", m.Prerequisites)
	}
	// Domain-level cost applies when the method has none.
	h := findMethod(t, tree, "health.liveness")
	if h.Cost == nil || h.Cost.CPU != "low" || h.Group != "health" {
		t.Errorf("health.liveness = %+v", h)
	}
	if tree[2].Cost == nil {
		t.Error("health domain cost missing")
	}
	// No cost, no group.
	id := findMethod(t, tree, "identity.get")
	if id.Cost != nil || id.Group != "" || id.Prerequisites != nil {
		t.Errorf("identity.get = %+v", id)
	}
}

func TestTreeGroupsAndConsumed(t *testing.T) {
	// Songbird groups list already-qualified methods under a different type.
	s := mustParse(t, payload(t, "songbird_l3.json"))
	tree := s.Tree()
	if m := findMethod(t, tree, "relay.serve"); m.Group != "network" || m.GroupDescription != "network.relay capability group" {
		t.Errorf("relay.serve = %+v", m)
	}
	if m := findMethod(t, tree, "ipc.register"); m.Group != "ipc" {
		t.Errorf("ipc.register = %+v", m)
	}
	if m := findMethod(t, tree, "identity"); m.Short != "identity" {
		t.Errorf("undotted method = %+v", m)
	}
	for _, d := range tree {
		for _, m := range d.Methods {
			if m.Name == "crypto.sign" {
				t.Error("consumed capability in the tree")
			}
		}
	}
	if len(s.Consumed) == 0 {
		t.Error("Consumed empty")
	}

	// NestGate: a domain-level cost and a method-level cost.
	n := mustParse(t, payload(t, "nestgate_l3.json")).Tree()
	if m := findMethod(t, n, "storage.get"); m.Cost == nil || *m.Cost.LatencyMS != 5 {
		t.Errorf("storage.get cost = %+v", m.Cost)
	}
	if m := findMethod(t, n, "storage.artifact.store"); m.Cost == nil || m.Cost.CPU != "medium" || m.Short != "artifact.store" {
		t.Errorf("storage.artifact.store = %+v", m)
	}

	// Format C descriptions and params reach the tree.
	c := mustParse(t, payload(t, "format_c.json")).Tree()
	if m := findMethod(t, c, "ledger.append"); m.Description != "Append an entry" || string(m.Params) != `{"entry":"object"}` {
		t.Errorf("ledger.append = %+v", m)
	}
}

func TestTreeEmpty(t *testing.T) {
	var nilCaps *Capabilities
	if nilCaps.Tree() != nil {
		t.Error("nil Tree not nil")
	}
	c := mustParse(t, json.RawMessage(`{}`))
	if tree := c.Tree(); len(tree) != 0 {
		t.Errorf("empty tree = %v", tree)
	}
	b, err := json.Marshal(mustParse(t, payload(t, "sweetgrass_l3.json")).Tree())
	if err != nil || len(b) < 10 {
		t.Errorf("tree JSON: %v %s", err, b)
	}
}

func TestSplitMethod(t *testing.T) {
	for _, tt := range []struct{ in, dom, short string }{
		{"dag.session.create", "dag", "session.create"},
		{"identity", "identity", "identity"},
		{".x", "", "x"},
		{"x.", "x", ""},
	} {
		d, s := SplitMethod(tt.in)
		if d != tt.dom || s != tt.short {
			t.Errorf("SplitMethod(%q) = %q, %q", tt.in, d, s)
		}
	}
}
