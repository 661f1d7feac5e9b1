package capability

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

func payload(t testing.TB, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "payloads", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, raw json.RawMessage) *Capabilities {
	t.Helper()
	c, err := Parse(raw)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestParseFormats(t *testing.T) {
	tests := []struct {
		file      string
		format    Format
		primal    string
		version   string
		count     int
		has       []string
		hasNot    []string
		signature VerdictState
	}{
		{
			file: "beardog_format_e.json", format: FormatE, primal: "beardog", version: "0.15.0",
			count:     3 + 8 + 6 + 5, // crypto.sign_ed25519 listed twice (once qualified) collapses
			has:       []string{"crypto.sign_ed25519", "btsp.tunnel_close", "auth.issue_ionic", "security.evaluate"},
			hasNot:    []string{"crypto.crypto.sign_ed25519", "crypto", "btsp"},
			signature: Absent,
		},
		{
			file: "beardog_signed.json", format: FormatStandard, primal: "beardog", version: "0.9.0",
			count: 4, has: []string{"capabilities.list", "crypto.blake3_hash"}, signature: Verified,
		},
		{
			file: "songbird_format_a.json", format: FormatA, count: 16,
			has: []string{"discover_capabilities", "ipc.list", "birdsong.decrypt_beacon"}, signature: Absent,
		},
		{
			file: "songbird_l3.json", format: FormatStandard, primal: "songbird", version: "0.2.1", count: 18,
			has:    []string{"tor.circuit.build", "identity"},
			hasNot: []string{"discovery.list_peers", "network.discovery.peers", "rpc.methods"},
		},
		{
			file: "rhizocrypt_l3.json", format: FormatStandard, primal: "rhizocrypt", version: "0.14.0", count: 11,
			has: []string{"dag.session.create", "dag.merkle.proof"},
		},
		{
			file: "nestgate_l3.json", format: FormatStandard, primal: "nestgate", version: "0.4.2", count: 13,
			has: []string{"storage.artifact.store", "zfs.pool.status"},
		},
		{
			file: "sweetgrass_format_b.json", format: FormatB, count: 6,
			has: []string{"braid.create", "anchoring.anchor"}, hasNot: []string{"braid", "anchoring.verify"},
		},
		{
			file: "sweetgrass_l3.json", format: FormatStandard, primal: "sweetgrass", version: "0.7.27", count: 8,
		},
		{
			file: "format_c.json", format: FormatC, count: 3, has: []string{"ledger.append", "health.liveness"},
		},
		{
			file: "format_d.json", format: FormatD, count: 6,
			has:    []string{"ledger.append", "ledger.spine.create", "bond.propose", "bond.accept", "health.liveness"},
			hasNot: []string{"bond.bond.propose"},
		},
		{
			file: "biomeos.json", format: FormatStandard, primal: "biomeos", version: "2.93.1", count: 9,
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c := mustParse(t, payload(t, tt.file))
			if c.Format != tt.format {
				t.Errorf("Format = %q, want %q", c.Format, tt.format)
			}
			if c.Primal != tt.primal || c.Version != tt.version {
				t.Errorf("primal/version = %q/%q, want %q/%q", c.Primal, c.Version, tt.primal, tt.version)
			}
			if len(c.Methods) != tt.count {
				t.Errorf("%d methods, want %d: %v", len(c.Methods), tt.count, c.Methods)
			}
			if !sort.StringsAreSorted(c.Methods) {
				t.Errorf("methods not sorted: %v", c.Methods)
			}
			for i := 1; i < len(c.Methods); i++ {
				if c.Methods[i] == c.Methods[i-1] {
					t.Errorf("duplicate method %q", c.Methods[i])
				}
			}
			for _, m := range tt.has {
				if !slices.Contains(c.Methods, m) {
					t.Errorf("missing method %q in %v", m, c.Methods)
				}
			}
			for _, m := range tt.hasNot {
				if slices.Contains(c.Methods, m) {
					t.Errorf("unexpected method %q", m)
				}
			}
			want := tt.signature
			if want == "" {
				want = Absent
			}
			if c.Signature.State != want {
				t.Errorf("signature = %+v, want %s", c.Signature, want)
			}
		})
	}
}

func TestParseKeepsMetadata(t *testing.T) {
	c := mustParse(t, payload(t, "sweetgrass_l3.json"))
	if want := []string{"crypto.sign", "dag.session.create", "storage.artifact.store"}; !reflect.DeepEqual(c.Consumed, want) {
		t.Errorf("Consumed = %v, want %v", c.Consumed, want)
	}
	ce, ok := c.CostEstimates["attribution.chain"]
	if !ok || ce.CPU != "high" || ce.LatencyMS == nil || *ce.LatencyMS != 50 {
		t.Errorf("cost attribution.chain = %+v", ce)
	}
	anchor := c.CostEstimates["anchoring.anchor"]
	if string(anchor.Extra["network"]) != `"required"` {
		t.Errorf("unknown cost key not kept raw: %+v", anchor.Extra)
	}
	if got := c.OperationDependencies["proof.generate"]; !reflect.DeepEqual(got, []string{"anchoring.anchor"}) {
		t.Errorf("deps = %v", got)
	}
	if c.Protocol != "jsonrpc-2.0" || !reflect.DeepEqual(c.Transport, []string{"uds"}) {
		t.Errorf("protocol/transport = %q %v", c.Protocol, c.Transport)
	}
	if len(c.Provided) != 3 || c.Provided[0].Type != "braid" || c.Provided[0].Description != "Provenance braids" || c.Provided[0].Version != "0.7.27" {
		t.Errorf("Provided = %+v", c.Provided)
	}

	n := mustParse(t, payload(t, "nestgate_l3.json"))
	if !reflect.DeepEqual(n.Transport, []string{"uds"}) {
		t.Errorf("string transport = %v, want [uds]", n.Transport)
	}
	if m := n.CostEstimates["storage.artifact.store"].MemoryBytes; m == nil || *m != 1048576 {
		t.Errorf("memory_bytes = %v", m)
	}

	r := mustParse(t, payload(t, "rhizocrypt_l3.json"))
	if g := r.CostEstimates["dag.merkle.proof"].GPUEligible; g == nil || *g {
		t.Errorf("gpu_eligible = %v, want false", g)
	}

	b := mustParse(t, payload(t, "beardog_format_e.json"))
	if b.BTSPEnabled == nil || !*b.BTSPEnabled {
		t.Errorf("btsp_enabled = %v", b.BTSPEnabled)
	}
	if b.FamilyID != "nat0" || b.NodeID != "tower1" {
		t.Errorf("family/node = %q/%q", b.FamilyID, b.NodeID)
	}
	if !reflect.DeepEqual(b.Protocols, []string{"http", "json-rpc", "tarpc"}) {
		t.Errorf("Protocols = %v", b.Protocols)
	}
	if string(b.Extra["collaborative_intelligence"]) != "true" {
		t.Errorf("Extra = %v", b.Extra)
	}

	s := mustParse(t, payload(t, "songbird_l3.json"))
	if got := s.CapabilityMethods["network.discovery"]; !reflect.DeepEqual(got, []string{"discovery.announce", "discovery.list_peers", "discovery.peers"}) {
		t.Errorf("CapabilityMethods = %v", s.CapabilityMethods)
	}
	if len(s.Consumed) != 5 {
		t.Errorf("Consumed not de-duplicated: %v", s.Consumed)
	}

	bio := mustParse(t, payload(t, "biomeos.json"))
	if len(bio.HTTPAPI) != 4 || bio.HTTPAPI[0] != "/api/v1/events/stream" {
		t.Errorf("HTTPAPI = %v", bio.HTTPAPI)
	}
	if !bio.TransportSecurity.RequiresBTSP() {
		t.Error("RequiresBTSP = false")
	}

	fc := mustParse(t, payload(t, "format_c.json"))
	mi := fc.MethodInfo["ledger.get"]
	if mi.Description != "Fetch an entry by id" || string(mi.Params) != `["id"]` || string(mi.Extra["idempotent"]) != "true" {
		t.Errorf("MethodInfo = %+v", mi)
	}
}

func TestParseTransportSecurity(t *testing.T) {
	c := mustParse(t, payload(t, "beardog_signed.json"))
	ts := c.TransportSecurity
	if ts == nil {
		t.Fatal("no transport_security")
	}
	if !ts.RequiresBTSP() || ts.BTSPVersion != "2.0" || ts.BTSPServerAvailable == nil || !*ts.BTSPServerAvailable ||
		ts.CleartextAvailable == nil || !*ts.CleartextAvailable || !strings.HasPrefix(ts.Note, "Family-scoped") {
		t.Errorf("transport_security = %+v", ts)
	}
	if _, ok := ts.Extra["cleartext_methods"]; !ok {
		t.Errorf("cleartext_methods not kept: %v", ts.Extra)
	}
	var nilTS *TransportSecurity
	if nilTS.RequiresBTSP() {
		t.Error("nil RequiresBTSP = true")
	}
	c = mustParse(t, json.RawMessage(`{"primal":"x","version":"1","methods":["a.b"],"transport_security":{"btsp_required":false,"btsp_version":2.0}}`))
	if c.TransportSecurity.RequiresBTSP() || c.TransportSecurity.BTSPVersion != "2.0" {
		t.Errorf("transport_security = %+v", c.TransportSecurity)
	}
}

func TestParsePriority(t *testing.T) {
	tests := []struct {
		name   string
		raw    string
		format Format
		want   []string
	}{
		{"methods beat everything", `{"primal":"p","version":"1","methods":["a.x"],"provided_capabilities":[{"type":"b","methods":["y"]}],"capabilities":["c.z"]}`, FormatStandard, []string{"a.x"}},
		{"provided beats capabilities", `{"provided_capabilities":[{"type":"b","methods":["y","b.z"]}],"capabilities":["c.z"]}`, FormatE, []string{"b.y", "b.z"}},
		{"groups without methods do not count", `{"provided_capabilities":["dag",{"type":"x","methods":[]}],"capabilities":["c.z"]}`, FormatB, []string{"c.z"}},
		{"capabilities beat method_info", `{"capabilities":["c.z"],"method_info":[{"name":"d.w"}]}`, FormatB, []string{"c.z"}},
		{"method_info beats semantic_mappings", `{"method_info":[{"name":"d.w"}],"semantic_mappings":{"e":{"v":{}}}}`, FormatC, []string{"d.w"}},
		{"semantic_mappings", `{"semantic_mappings":{"e":{"v":{}},"f":["g"]}}`, FormatD, []string{"e.v", "f.g"}},
		{"bare array", `["z.a","a.z","a.z"]`, FormatA, []string{"a.z", "z.a"}},
		{"methods not an array falls through", `{"methods":{"x":1},"capabilities":["c.z"]}`, FormatB, []string{"c.z"}},
		{"null methods falls through", `{"methods":null,"provided_capabilities":[{"type":"t","methods":["m"]}]}`, FormatE, []string{"t.m"}},
		{"capabilities token map", `{"capabilities":{"network.relay":["relay.serve"],"ipc.tarpc":"rpc.methods"}}`, FormatB, []string{"relay.serve", "rpc.methods"}},
		{"capabilities as objects", `{"capabilities":[{"name":"a.b"},{"method":"c.d"},{"type":"e","methods":["f",{"name":"g"}]},7]}`, FormatB, []string{"a.b", "c.d", "e.f", "e.g"}},
		{"nothing usable", `{"primal":"p","version":"1"}`, FormatUnknown, []string{}},
		{"empty object", `{}`, FormatUnknown, []string{}},
		{"whole response unwrapped", `{"jsonrpc":"2.0","id":1,"result":{"primal":"p","version":"1","methods":["a.b"]}}`, FormatStandard, []string{"a.b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, json.RawMessage(tt.raw))
			if c.Format != tt.format {
				t.Errorf("Format = %q, want %q", c.Format, tt.format)
			}
			if !reflect.DeepEqual(c.Methods, tt.want) {
				t.Errorf("Methods = %#v, want %#v", c.Methods, tt.want)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	for _, raw := range []string{``, `nul`, `"capabilities"`, `42`, `true`, `null`, `{"a":`, `[1,]`, `{"jsonrpc":"2.0","result":"x"}`} {
		c, err := Parse(json.RawMessage(raw))
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want error", raw, c)
			continue
		}
		if !errors.Is(err, ErrNotCapabilities) {
			t.Errorf("Parse(%q) error %v is not ErrNotCapabilities", raw, err)
		}
	}
}

func TestParseWarnsOnOddInput(t *testing.T) {
	tests := []struct {
		raw  string
		warn string
	}{
		{`{"primal":"p","version":"1","methods":["a.b",7,null,{"x":1}]}`, "not method names"},
		{`{"primal":"p","version":1.5,"methods":["a.b"]}`, "version is a number"},
		{`{"primal":"p","version":"1","methods":["a.b"],"cost_estimates":[1]}`, "cost_estimates is an array"},
		{`{"primal":"p","version":"1","methods":["a.b"],"cost_estimates":{"a.b":{"latency_ms":"fast"}}}`, "latency_ms is unexpectedly a string"},
		{`{"primal":"p","version":"1","methods":["a.b"],"transport_security":"yes"}`, "transport_security is a string"},
		{`{"primal":"p","version":"1","methods":["a.b"],"btsp_enabled":"maybe"}`, "btsp_enabled"},
		{`{"methods":["a.b"]}`, "lacks primal or version"},
		{`{"primal":"p","version":"1","methods":[]}`, "no methods advertised"},
		{`{"primal":"p","version":"1","methods":["a.b",""]}`, "empty names"},
	}
	for _, tt := range tests {
		c := mustParse(t, json.RawMessage(tt.raw))
		if !slices.ContainsFunc(c.Warnings, func(s string) bool { return strings.Contains(s, tt.warn) }) {
			t.Errorf("Parse(%s): warnings %q lack %q", tt.raw, c.Warnings, tt.warn)
		}
	}
	c := mustParse(t, payload(t, "rhizocrypt_l3.json"))
	if len(c.Warnings) != 0 {
		t.Errorf("clean payload has warnings: %q", c.Warnings)
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"primal":"p","version":"1","methods":[`)
	n := MaxMethods + 10
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"m.`)
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(`"`)
	}
	b.WriteString(`]}`)
	c := mustParse(t, json.RawMessage(b.String()))
	if len(c.Methods) > MaxMethods {
		t.Errorf("%d methods kept, bound is %d", len(c.Methods), MaxMethods)
	}
	if !slices.ContainsFunc(c.Warnings, func(s string) bool { return strings.Contains(s, "10 dropped") }) {
		t.Errorf("no drop warning: %q", c.Warnings)
	}

	long := strings.Repeat("é", MaxNameLen) // 2 bytes each
	c = mustParse(t, json.RawMessage(`{"primal":"p","version":"1","methods":["`+long+`"]}`))
	if len(c.Methods) != 1 || len(c.Methods[0]) > MaxNameLen || !strings.HasPrefix(long, c.Methods[0]) {
		t.Fatalf("long name not truncated cleanly: %d bytes", len(c.Methods[0]))
	}
	if !slices.ContainsFunc(c.Warnings, func(s string) bool { return strings.Contains(s, "truncated") }) {
		t.Errorf("no truncation warning: %q", c.Warnings)
	}

	var many strings.Builder
	many.WriteString(`{"primal":"p","version":"1","methods":["a.b"]`)
	for i := range 300 {
		many.WriteString(`,"k` + strings.Repeat("z", i) + `":1`)
	}
	many.WriteString(`}`)
	c = mustParse(t, json.RawMessage(many.String()))
	if len(c.Extra) > MaxExtraKeys {
		t.Errorf("%d extra keys kept", len(c.Extra))
	}
	if len(c.Warnings) > MaxWarnings+1 {
		t.Errorf("%d warnings", len(c.Warnings))
	}
}

func TestParseMethodMap(t *testing.T) {
	m, err := ParseMethodMap(json.RawMessage(`{"network.discovery":["discovery.peers","discovery.announce"],"ipc.tarpc":["rpc.methods"],"bad":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m["network.discovery"], []string{"discovery.announce", "discovery.peers"}) || len(m) != 2 {
		t.Errorf("map = %v", m)
	}
	if _, err := ParseMethodMap(json.RawMessage(`["a"]`)); err == nil {
		t.Error("array accepted")
	}
	if _, err := ParseMethodMap(json.RawMessage(`{"a":1}`)); err == nil {
		t.Error("map without method lists accepted")
	}
}

func TestCapabilitiesJSONKeys(t *testing.T) {
	c := mustParse(t, payload(t, "beardog_signed.json"))
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"primal", "version", "format", "methods", "provided_capabilities", "cost_estimates",
		"transport", "transport_security", "signed_announcement", "signature", "btsp_enabled", "family_id", "extra"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks key %q: %s", k, b)
		}
	}
	for k := range m {
		if strings.ToLower(k) != k || strings.Contains(k, "-") {
			t.Errorf("key %q is not snake_case", k)
		}
	}
	// Round trip of the exported fields is stable.
	var back Capabilities
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(&back)
	if string(b) != string(b2) {
		t.Errorf("unstable JSON:\n%s\n%s", b, b2)
	}
}

func TestParseNestedEnvelopeOnce(t *testing.T) {
	raw := `{"primal":"p","version":"1","methods":["a.b"]}`
	for range 2000 {
		raw = `{"jsonrpc":"2.0","result":` + raw + `}`
	}
	c := mustParse(t, json.RawMessage(raw))
	if c.Format != FormatUnknown || len(c.Methods) != 0 {
		t.Errorf("nested envelopes unwrapped more than once: %+v", c)
	}
}

func TestHas(t *testing.T) {
	c := mustParse(t, payload(t, "rhizocrypt_l3.json"))
	if !c.Has("dag.session.create") || c.Has("dag.session") || c.Has("") {
		t.Error("Has wrong")
	}
	var nilCaps *Capabilities
	if nilCaps.Has("a.b") {
		t.Error("nil Has true")
	}
}

func BenchmarkParseBearDog(b *testing.B) {
	raw := payload(b, "beardog_signed.json")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMaxMethods(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"primal":"p","version":"1","methods":[`)
	for i := range MaxMethods {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"domain` + string(rune('a'+i%26)) + `.method_` + strings.Repeat("x", i%13) + `"`)
	}
	sb.WriteString(`]}`)
	raw := json.RawMessage(sb.String())
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		c, err := Parse(raw)
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Tree()
	}
}

func TestParseDeclaredEmptyVersusAbsent(t *testing.T) {
	c := mustParse(t, json.RawMessage(`{"primal":"p","version":"1","methods":["a.b"],"provided_capabilities":[],"consumed_capabilities":[],"cost_estimates":{},"operation_dependencies":{}}`))
	if c.Provided == nil || c.Consumed == nil || c.CostEstimates == nil || c.OperationDependencies == nil {
		t.Errorf("declared-empty fields are nil: %+v", c)
	}
	c = mustParse(t, json.RawMessage(`{"primal":"p","version":"1","methods":["a.b"]}`))
	if c.Provided != nil || c.Consumed != nil || c.CostEstimates != nil || c.OperationDependencies != nil {
		t.Errorf("absent fields are not nil: %+v", c)
	}
	b, _ := json.Marshal(c)
	if !strings.Contains(string(b), `"consumed_capabilities":null`) {
		t.Errorf("absent consumed_capabilities not null: %s", b)
	}
}

func TestParseWarningsBoundedThroughEnvelope(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"jsonrpc":"2.0","id":1,"result":{"methods":["a.b"]`)
	for i := range 200 {
		b.WriteString(`,"semantic_mappings":1,"cost_estimates":{"m` + strings.Repeat("x", i) + `":{"cpu":[1]}}`)
	}
	b.WriteString(`,"provided_capabilities":[`)
	for i := range 200 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"methods":[]}`)
	}
	b.WriteString(`]}}`)
	c := mustParse(t, json.RawMessage(b.String()))
	if len(c.Warnings) != MaxWarnings+1 || !strings.Contains(c.Warnings[0], "whole JSON-RPC response") ||
		!strings.HasSuffix(c.Warnings[MaxWarnings], "more warnings omitted") {
		t.Errorf("%d warnings: first %q last %q", len(c.Warnings), c.Warnings[0], c.Warnings[len(c.Warnings)-1])
	}
}
