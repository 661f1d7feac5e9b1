package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// mapDoc is the map --json contract, read strictly.
type mapDoc struct {
	Nodes []struct {
		ID, Name, Family, Node, Kind, Health string
		Level                                int
		Missing                              bool
	} `json:"nodes"`
	Edges []struct {
		From, To, Capability string
		Sources              []string
		State                string
		CallsPerS            *float64 `json:"calls_per_s"`
		ErrorRate            *float64 `json:"error_rate"`
		P95ms                *float64 `json:"p95_ms"`
	} `json:"edges"`
	Cycles [][]string `json:"cycles"`
}

func TestMapDemoJSONContractAndGate(t *testing.T) {
	eco := ecosystem(t)
	r := runCLI(t, nil, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Exactly the contract's keys, at the top and on each node and edge.
	var raw struct {
		Top   map[string]json.RawMessage
		Nodes []map[string]json.RawMessage `json:"nodes"`
		Edges []map[string]json.RawMessage `json:"edges"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &raw.Top); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal([]byte(r.stdout), &raw)
	keys := func(m map[string]json.RawMessage) []string {
		var k []string
		for x := range m {
			k = append(k, x)
		}
		sort.Strings(k)
		return k
	}
	if got := keys(raw.Top); !reflect.DeepEqual(got, []string{"cycles", "edges", "nodes", "operation_cycles"}) {
		t.Errorf("top-level keys %v", got)
	}
	if got := keys(raw.Nodes[0]); !reflect.DeepEqual(got, []string{"family", "health", "id", "kind", "level", "missing", "name", "node"}) {
		t.Errorf("node keys %v", got)
	}
	if got := keys(raw.Edges[0]); !reflect.DeepEqual(got, []string{"calls_per_s", "capability", "error_rate", "from", "p95_ms", "sources", "state", "to"}) {
		t.Errorf("edge keys %v", got)
	}
	var doc mapDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	gap := false
	for _, e := range doc.Edges {
		if e.Capability == "ledger.append" && e.State == "gap" && e.To == "missing:ledger.append" {
			gap = true
		}
		if e.CallsPerS != nil {
			t.Errorf("edge %+v has traffic figures, but no source reports traffic", e)
		}
	}
	missing := false
	for _, n := range doc.Nodes {
		missing = missing || n.ID == "missing:ledger.append" && n.Missing && n.Kind == "missing"
	}
	if !gap || !missing {
		t.Fatalf("no ledger.append gap (edge %v, node %v) in:\n%s", gap, missing, r.stdout)
	}

	// The gate.
	r = runCLI(t, nil, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--fail-on", "gap")
	if r.code != 1 || !strings.Contains(r.stderr, "gap: toadstool → ledger.append → nobody (nobody provides ledger.append)") {
		t.Fatalf("--fail-on gap: exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "✗ gap") {
		t.Errorf("the tree does not say gap in words:\n%s", r.stdout)
	}
	if r := runCLI(t, nil, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--fail-on", "nope"); r.code != 2 {
		t.Errorf("--fail-on nope: exit %d, want 2", r.code)
	}

	// TARGET and --hops: what toadstool needs, one hop.
	r = runCLI(t, nil, "", "map", "toadstool", "--hops", "1", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--json")
	doc = mapDoc{}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	var names []string
	for _, n := range doc.Nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	if !reflect.DeepEqual(names, []string{"beardog", "coralreef", "ledger.append", "toadstool"}) {
		t.Errorf("toadstool's neighbourhood: %v", names)
	}
}

func TestMapDOTRendersAndMermaid(t *testing.T) {
	eco := ecosystem(t)
	r := runCLI(t, nil, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--dot")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "digraph composition {") {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	if dot, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(dot, "-Tsvg")
		cmd.Stdin = strings.NewReader(r.stdout)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			t.Fatalf("dot -Tsvg: %v %s\n%s", err, errb.String(), r.stdout)
		}
		if !strings.Contains(out.String(), "<svg") || !strings.Contains(out.String(), "ledger.append") {
			t.Fatalf("svg without the gap:\n%s", out.String())
		}
	} else {
		t.Log("graphviz not installed: DOT not rendered (.ci/run installs it)")
	}
	r = runCLI(t, nil, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--mermaid")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "flowchart TD\n") || !strings.Contains(r.stdout, `-.->|"ledger.append · gap"|`) {
		t.Fatalf("mermaid: exit %d\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "", "map", "--dot", "--mermaid"); r.code != 2 {
		t.Errorf("--dot --mermaid: exit %d, want 2", r.code)
	}
}

// TestMapDegradedGate: a registry says vault provides "vault"; its socket
// accepts and never answers. The consumer's edge is degraded, and the gate
// names it.
func TestMapDegradedGate(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	app := &ipctest.Primal{Name: "app", Version: "1", Format: ipctest.FormatStandard, Level3: true,
		Groups: []ipctest.Group{{Type: "app", Methods: []string{"run"}}}, Consumed: []string{"vault.get"}}
	for name, cfg := range map[string]ipctest.Config{
		"app.sock":   app.Config(),
		"vault.sock": {Behavior: ipctest.Behavior{Silent: true}},
	} {
		s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	sb := ipctest.NewSongbird()
	sb.Register(ipctest.Service{PrimalID: "vault", Capabilities: []string{"vault"}, Endpoint: filepath.Join(dir, "vault.sock")})
	s, err := ipctest.Listen(filepath.Join(dir, "songbird.sock"), sb.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	r := runCLI(t, nil, "", "map", "--socket-dir", dir, "--no-proc", "--stale", "300ms", "--fail-on", "gap")
	if r.code != 0 {
		t.Fatalf("--fail-on gap with no gap: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "! degraded  vault") || !strings.Contains(r.stdout, "provider vault is stale") {
		t.Errorf("the tree does not say degraded in words:\n%s", r.stdout)
	}
	r = runCLI(t, nil, "", "map", "--socket-dir", dir, "--no-proc", "--stale", "300ms", "--fail-on", "gap,degraded")
	if r.code != 1 || !strings.Contains(r.stderr, "degraded: app → vault.get → vault (provider vault is stale (no answer in time))") {
		t.Fatalf("--fail-on degraded: exit %d:\n%s", r.code, r.stderr)
	}
}

// TestMapDrawsTheUsersOwnCalls: a call primalscope made (recorded in
// history) is drawn from the "you" node, with its traffic.
func TestMapDrawsTheUsersOwnCalls(t *testing.T) {
	eco := ecosystem(t)
	env := map[string]string{"PRIMALSCOPE_HISTORY": filepath.Join(t.TempDir(), "h.db")}
	if r := runCLI(t, env, "", "call", "--socket-dir", eco.Dir, "nestgate", "health.liveness"); r.code != 0 {
		t.Fatalf("call: exit %d: %s", r.code, r.stderr)
	}
	r := runCLI(t, env, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--json")
	var doc mapDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	for _, e := range doc.Edges {
		if e.From == "you" && e.Capability == "health.liveness" {
			if e.CallsPerS == nil || *e.CallsPerS <= 0 || !reflect.DeepEqual(e.Sources, []string{"observed"}) || e.State != "ok" {
				t.Fatalf("you → nestgate = %+v", e)
			}
			return
		}
	}
	t.Fatalf("no edge from you:\n%s", r.stdout)
}

// TestMapDemoGapCycleDegraded: map --json over the demo lists its gap
// (toadstool's ledger.append), its cycle (rhizocrypt ⇄ nestgate) and its
// degraded edge (coralreef, made stale here rather than waited for), and
// --fail-on degraded names that edge.
func TestMapDemoGapCycleDegraded(t *testing.T) {
	eco, err := demo.Start(context.Background(), demo.Options{Tick: time.Hour, Churn: time.Hour, StaleAfter: -1, GraphEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	eco.SetStale(true)
	env := map[string]string{"FAMILY_SEED": eco.Seed()}
	r := runCLI(t, env, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--json")
	var doc mapDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 {
		t.Fatalf("exit %d %v: %s", r.code, err, r.stderr)
	}
	name := map[string]string{}
	for _, n := range doc.Nodes {
		name[n.ID] = n.Name
	}
	var gap, degraded bool
	for _, e := range doc.Edges {
		gap = gap || name[e.From] == "toadstool" && e.Capability == "ledger.append" && e.State == "gap"
		degraded = degraded || name[e.To] == "coralreef" && e.State == "degraded"
	}
	cycle := false
	for _, c := range doc.Cycles {
		var ns []string
		for _, id := range c {
			ns = append(ns, name[id])
		}
		cycle = cycle || reflect.DeepEqual(ns, []string{"nestgate", "rhizocrypt", "nestgate"}) || reflect.DeepEqual(ns, []string{"rhizocrypt", "nestgate", "rhizocrypt"})
	}
	if !gap || !degraded || !cycle {
		t.Fatalf("gap %v, degraded %v, cycle %v in:\n%s\n%s", gap, degraded, cycle, r.stdout, r.stderr)
	}
	r = runCLI(t, env, "", "map", "--socket-dir", eco.Dir, "--no-proc", "--stale", "1s", "--fail-on", "degraded")
	if r.code != 1 || !strings.Contains(r.stderr, "degraded: toadstool → shader.compile → coralreef") {
		t.Fatalf("--fail-on degraded: exit %d:\n%s", r.code, r.stderr)
	}
}

// TestMapGatherCutByTimeout: a Neural API that answers its health but
// never its lifecycle.status holds gathering past --timeout: the map is
// printed, stderr says what may be missing, and the exit is 4, whatever
// the gate would say.
func TestMapGatherCutByTimeout(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	hang := func(ctx context.Context, _ json.RawMessage) (any, error) { <-ctx.Done(); return nil, ctx.Err() }
	neural := ipctest.Config{Concurrent: true, Methods: map[string]ipctest.HandlerFunc{
		"health.liveness":  func(context.Context, json.RawMessage) (any, error) { return map[string]any{"alive": true}, nil },
		"lifecycle.status": hang, "topology.primals": hang,
	}}
	app := &ipctest.Primal{Name: "app", Version: "1", Format: ipctest.FormatStandard, Level3: true,
		Groups: []ipctest.Group{{Type: "app", Methods: []string{"run"}}}, Consumed: []string{"ledger.append"}}
	for name, cfg := range map[string]ipctest.Config{"neural-api.sock": neural, "app.sock": app.Config()} {
		s, err := ipctest.Listen(filepath.Join(dir, name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	r := runCLI(t, nil, "", "map", "--socket-dir", dir, "--no-proc", "--stale", "200ms", "--timeout", "1s", "--fail-on", "gap")
	if r.code != 4 || !strings.Contains(r.stderr, "ran out while asking") || !strings.Contains(r.stdout, "✗ gap") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestMapHopsNeedsATarget: --hops with no TARGET is bad usage, not ignored.
func TestMapHopsNeedsATarget(t *testing.T) {
	r := runCLI(t, map[string]string{"HOME": t.TempDir()}, "", "--socket-dir", t.TempDir(), "map", "--hops", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "TARGET") {
		t.Fatalf("want exit 2 naming TARGET, got %+v", r)
	}
}
