package capability

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// Format names the wire shape a capabilities.list answer was read from.
type Format string

// Formats, in the order the standard says to look for them.
const (
	// FormatStandard is the Capability Wire Standard envelope {primal, version, methods}.
	FormatStandard Format = "standard"
	// FormatE is {provided_capabilities:[{type, methods}]} (older BearDog, rhizoCrypt).
	FormatE Format = "E"
	// FormatB is {capabilities:[...], methods?:[...]} without the full envelope (sweetGrass).
	FormatB Format = "B"
	// FormatC is {method_info:[{name, ...}]}.
	FormatC Format = "C"
	// FormatD is {semantic_mappings:{domain:{method:{}}}} (loamSpine tests).
	FormatD Format = "D"
	// FormatA is a bare array of method names (Songbird).
	FormatA Format = "A"
	// FormatUnknown is an object from which no method list could be read.
	FormatUnknown Format = "unknown"
)

// ErrNotCapabilities is returned (wrapped) when a result cannot be a
// capabilities.list answer at all: not JSON, or a JSON scalar.
var ErrNotCapabilities = errors.New("not a capabilities.list result")

// Capabilities is a primal's parsed self-description.
type Capabilities struct {
	// Primal is the canonical primal name, if given.
	Primal string `json:"primal,omitempty"`
	// Version is the primal's version, if given (numbers are kept as text).
	Version string `json:"version,omitempty"`
	// Format is the wire shape the method list was read from.
	Format Format `json:"format"`
	// Methods is every callable method advertised, sorted and de-duplicated.
	Methods []string `json:"methods"`
	// MethodInfo holds per-method details from format C, keyed by method name.
	MethodInfo map[string]MethodInfo `json:"method_info,omitempty"`
	// The four Level 3 fields below are nil (JSON null) when the answer
	// lacks them and empty when it declares them empty, so that a
	// compliance check can tell the two apart.

	// Provided is the provided_capabilities grouping, in wire order.
	Provided []Group `json:"provided_capabilities"`
	// Consumed lists the methods this primal needs from others, sorted.
	Consumed []string `json:"consumed_capabilities"`
	// CostEstimates maps a method or a domain to its cost hints.
	CostEstimates map[string]Cost `json:"cost_estimates"`
	// OperationDependencies maps a method to the methods that must run first.
	OperationDependencies map[string][]string `json:"operation_dependencies"`
	// Protocol is the advertised IPC protocol (e.g. "jsonrpc-2.0").
	Protocol string `json:"protocol,omitempty"`
	// Protocols is BearDog's plural "protocols" list.
	Protocols []string `json:"protocols,omitempty"`
	// Transport lists the advertised transports (a single string becomes one entry).
	Transport []string `json:"transport,omitempty"`
	// TransportSecurity says whether BTSP is needed before JSON-RPC.
	TransportSecurity *TransportSecurity `json:"transport_security,omitempty"`
	// SignedAnnouncement is the signed_announcement object, if well formed.
	SignedAnnouncement *SignedAnnouncement `json:"signed_announcement,omitempty"`
	// Signature is the verdict on SignedAnnouncement, set by Parse.
	Signature Verdict `json:"signature"`
	// CapabilityMethods is Songbird's capability token → methods map, if present.
	CapabilityMethods map[string][]string `json:"capability_methods,omitempty"`
	// HTTPAPI lists biomeOS HTTP API paths, if present.
	HTTPAPI []string `json:"http_api,omitempty"`
	// BTSPEnabled is the legacy btsp_enabled flag, if present.
	BTSPEnabled *bool `json:"btsp_enabled,omitempty"`
	// FamilyID and NodeID are echoed by some primals (BearDog).
	FamilyID string `json:"family_id,omitempty"`
	NodeID   string `json:"node_id,omitempty"`
	// Extra keeps unrecognised top-level keys raw (bounded).
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	// Warnings lists anything odd that did not stop parsing.
	Warnings []string `json:"warnings,omitempty"`

	// signed is the method list as sent, for signature verification.
	signed         []string
	signedOverflow bool
}

// MethodInfo is per-method detail from format C.
type MethodInfo struct {
	Description string                     `json:"description,omitempty"`
	Params      json.RawMessage            `json:"params,omitempty"`
	Extra       map[string]json.RawMessage `json:"extra,omitempty"`
}

// Group is one provided_capabilities entry.
type Group struct {
	// Type is the group's domain name (e.g. "dag").
	Type string `json:"type"`
	// Version and Description are optional group metadata.
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Methods are the names as sent (usually short, within Type).
	Methods []string `json:"methods"`
}

// Cost is a cost hint for a method or a domain.
type Cost struct {
	// CPU is "low", "medium" or "high" (numbers are kept as text).
	CPU         string   `json:"cpu,omitempty"`
	LatencyMS   *float64 `json:"latency_ms,omitempty"`
	MemoryBytes *float64 `json:"memory_bytes,omitempty"`
	GPUEligible *bool    `json:"gpu_eligible,omitempty"`
	// Extra keeps unknown or ill-typed keys raw.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Summary is the cost for people, on one line: "cpu low ~5 ms mem 4 MiB
// gpu"; peer text in it is sanitized (render.Sanitize). "" for nil.
func (c *Cost) Summary() string {
	if c == nil {
		return ""
	}
	var p []string
	if c.CPU != "" {
		p = append(p, "cpu "+render.Sanitize(c.CPU))
	}
	if c.LatencyMS != nil {
		p = append(p, fmt.Sprintf("~%g ms", *c.LatencyMS))
	}
	if f := c.MemoryBytes; f != nil {
		if *f >= 0 && *f < 1<<62 {
			p = append(p, "mem "+human.Bytes(int64(*f)))
		} else {
			p = append(p, fmt.Sprintf("mem %g B", *f))
		}
	}
	if c.GPUEligible != nil && *c.GPUEligible {
		p = append(p, "gpu")
	}
	return strings.Join(p, " ")
}

// TransportSecurity is the transport_security object.
type TransportSecurity struct {
	BTSPRequired        *bool  `json:"btsp_required,omitempty"`
	BTSPVersion         string `json:"btsp_version,omitempty"`
	BTSPServerAvailable *bool  `json:"btsp_server_available,omitempty"`
	CleartextAvailable  *bool  `json:"cleartext_available,omitempty"`
	Note                string `json:"note,omitempty"`
	// Extra keeps other keys raw (e.g. BearDog's cleartext_methods).
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// RequiresBTSP reports whether the peer said a BTSP handshake is mandatory.
func (t *TransportSecurity) RequiresBTSP() bool {
	return t != nil && t.BTSPRequired != nil && *t.BTSPRequired
}

// knownTop are the top-level keys Parse interprets.
var knownTop = map[string]bool{
	"primal": true, "version": true, "methods": true, "method_info": true,
	"provided_capabilities": true, "consumed_capabilities": true, "cost_estimates": true,
	"operation_dependencies": true, "protocol": true, "protocols": true, "transport": true,
	"transport_security": true, "signed_announcement": true, "capabilities": true,
	"capabilities.methods": true, "capability_methods": true, "http_api": true,
	"btsp_enabled": true, "family_id": true, "node_id": true, "semantic_mappings": true,
}

// Parse reads the result of capabilities.list (or capability.list) in any of
// the known shapes. The method list is taken, in the standard's priority order,
// from result.methods, provided_capabilities (type.method expanded),
// capabilities, method_info, semantic_mappings, or a bare array. All optional
// metadata is kept whatever the format. Parse fails only if result is not JSON
// or is a JSON scalar; everything else odd is reported in Warnings. The
// signed_announcement, if any, is verified and the verdict put in Signature.
func Parse(result json.RawMessage) (*Capabilities, error) {
	return parse(result, &warner{}, true)
}

// parse is Parse; unwrap allows one level of {jsonrpc, result} unwrapping.
func parse(result json.RawMessage, w *warner, unwrap bool) (*Capabilities, error) {
	if !json.Valid(result) {
		return nil, fmt.Errorf("parse capabilities.list result: %w: invalid JSON", ErrNotCapabilities)
	}
	c := &Capabilities{Format: FormatUnknown}
	switch kind(result) {
	case 'a':
		items, _ := array(result)
		col := newCollector(w)
		col.names(items, "result")
		c.Format = FormatA
		c.signed, c.signedOverflow = col.raw, col.over > 0
		c.Methods = col.finish()
	case 'o':
		top, _ := object(result)
		if inner, ok := unwrapEnvelope(top); ok && unwrap {
			w.warnf("result was a whole JSON-RPC response; read its result member")
			if kind(inner) == 'a' || kind(inner) == 'o' {
				return parse(inner, w, false)
			}
			return nil, fmt.Errorf("parse capabilities.list result: %w: result member is %s", ErrNotCapabilities, kindName(inner))
		}
		parseObject(c, w, top)
	default:
		return nil, fmt.Errorf("parse capabilities.list result: %w: got %s", ErrNotCapabilities, kindName(result))
	}
	if len(c.Methods) == 0 {
		w.warnf("no methods advertised")
	}
	if c.Methods == nil {
		c.Methods = []string{}
	}
	c.Signature = c.verifySigned()
	c.Warnings = w.finish()
	return c, nil
}

// Has reports whether method is among the advertised methods.
func (c *Capabilities) Has(method string) bool {
	if c == nil {
		return false
	}
	_, found := slices.BinarySearch(c.Methods, method)
	return found
}

// unwrapEnvelope recognises a whole {jsonrpc, result} response passed by mistake.
func unwrapEnvelope(top map[string]json.RawMessage) (json.RawMessage, bool) {
	_, hasRPC := top["jsonrpc"]
	res, hasRes := top["result"]
	if !hasRPC || !hasRes {
		return nil, false
	}
	if _, ok := top["methods"]; ok {
		return nil, false
	}
	return res, true
}

// collector gathers method names with bounds, keeping the raw list for signatures.
type collector struct {
	w    *warner
	list []string
	raw  []string
	over int
}

func newCollector(w *warner) *collector { return &collector{w: w} }

func (c *collector) add(s string) {
	if s == "" {
		c.w.emptyNames++
		return
	}
	if len(c.list) >= MaxMethods {
		c.over++
		return
	}
	c.raw = append(c.raw, s)
	c.list = append(c.list, c.w.name(s))
}

// names adds every string (or named object) of an array.
func (c *collector) names(items []json.RawMessage, where string) {
	bad := 0
	for _, it := range items {
		if s, ok := nameOf(it); ok {
			c.add(s)
		} else {
			bad++
		}
	}
	if bad > 0 {
		c.w.warnf("%s: %d entries that are not method names ignored", where, bad)
	}
}

func (c *collector) finish() []string {
	if c.over > 0 {
		c.w.warnf("more than %d methods: %d dropped", MaxMethods, c.over)
	}
	return sortUnique(c.list)
}

// qualify expands a group's method name to type.method, unless it already is.
func qualify(typ, m string) string {
	if typ == "" || strings.HasPrefix(m, typ+".") {
		return m
	}
	return typ + "." + m
}

func parseObject(c *Capabilities, w *warner, top map[string]json.RawMessage) {
	// Identity and simple metadata first: they do not depend on the format.
	if raw, ok := top["primal"]; ok && !isNull(raw) {
		if s, ok := scalarText(raw); ok {
			c.Primal = w.name(s)
		} else {
			w.warnf("primal is %s, not a string", aKind(raw))
		}
	}
	if raw, ok := top["version"]; ok && !isNull(raw) {
		if s, ok := scalarText(raw); ok {
			c.Version = w.name(s)
			if kind(raw) != 's' {
				w.warnf("version is %s, read as %s", aKind(raw), quote(s))
			}
		} else {
			w.warnf("version is %s, not a string", aKind(raw))
		}
	}
	c.Provided = parseGroups(w, top["provided_capabilities"])
	c.Consumed = parseNameList(w, "consumed_capabilities", top["consumed_capabilities"])
	c.CostEstimates = parseCosts(w, top["cost_estimates"])
	c.OperationDependencies = parseDeps(w, top["operation_dependencies"])
	c.Protocol = parseText(w, "protocol", top["protocol"])
	c.Protocols = parseNameList(w, "protocols", top["protocols"])
	c.Transport = parseStringOrList(w, "transport", top["transport"])
	c.TransportSecurity = parseTransportSecurity(w, top["transport_security"])
	c.HTTPAPI = parseHTTPAPI(w, top["http_api"])
	c.FamilyID = parseText(w, "family_id", top["family_id"])
	c.NodeID = parseText(w, "node_id", top["node_id"])
	if raw, ok := top["btsp_enabled"]; ok && !isNull(raw) {
		if b, ok := boolean(raw); ok {
			c.BTSPEnabled = &b
		} else {
			w.warnf("btsp_enabled is %s, not a bool", aKind(raw))
		}
	}
	c.SignedAnnouncement, c.Signature = parseSignedAnnouncement(top["signed_announcement"])
	c.CapabilityMethods = parseCapabilityMethods(w, top)
	c.MethodInfo = parseMethodInfo(w, top["method_info"])
	c.Extra = keepExtra(w, "result", top, knownTop)

	// The method list, in the standard's priority order.
	col := newCollector(w)
	methodsRaw, hasMethods := top["methods"]
	if hasMethods && kind(methodsRaw) != 'a' && !isNull(methodsRaw) {
		w.warnf("methods is %s, not an array; looked for a legacy format", aKind(methodsRaw))
		hasMethods = false
	}
	if hasMethods && isNull(methodsRaw) {
		hasMethods = false
	}
	capsRaw := top["capabilities"]
	groupMethods := 0
	for _, g := range c.Provided {
		groupMethods += len(g.Methods)
	}
	switch {
	case hasMethods:
		items, _ := array(methodsRaw)
		col.names(items, "methods")
		c.Format = FormatStandard
		if c.Primal == "" || c.Version == "" {
			if kind(capsRaw) == 'a' {
				c.Format = FormatB
			} else {
				w.warnf("standard envelope lacks primal or version")
			}
		}
	case groupMethods > 0:
		for _, g := range c.Provided {
			for _, m := range g.Methods {
				col.add(qualify(g.Type, m))
			}
		}
		c.Format = FormatE
	case kind(capsRaw) == 'a':
		items, _ := array(capsRaw)
		capabilityItems(col, items)
		c.Format = FormatB
	case kind(capsRaw) == 'o' && len(c.CapabilityMethods) > 0:
		for _, tok := range sortedKeys(c.CapabilityMethods) {
			for _, m := range c.CapabilityMethods[tok] {
				col.add(m)
			}
		}
		c.Format = FormatB
	case len(c.MethodInfo) > 0 || kind(top["method_info"]) == 'a':
		for _, m := range sortedKeys(c.MethodInfo) {
			col.add(m)
		}
		c.Format = FormatC
	case kind(top["semantic_mappings"]) == 'o':
		semanticMappings(w, col, top["semantic_mappings"])
		c.Format = FormatD
	}
	c.signed, c.signedOverflow = col.raw, col.over > 0
	c.Methods = col.finish()
}

// capabilityItems reads a format A/B capabilities array whose entries may be
// strings, {name} objects, or group-like {type|name, methods|operations} objects.
func capabilityItems(col *collector, items []json.RawMessage) {
	bad := 0
	for _, it := range items {
		if s, ok := str(it); ok {
			col.add(s)
			continue
		}
		m, ok := object(it)
		if !ok {
			bad++
			continue
		}
		var list json.RawMessage
		for _, k := range []string{"methods", "operations"} {
			if kind(m[k]) == 'a' {
				list = m[k]
				break
			}
		}
		if list != nil {
			typ := ""
			for _, k := range []string{"type", "name", "domain"} {
				if s, ok := str(m[k]); ok {
					typ = s
					break
				}
			}
			ops, _ := array(list)
			for _, op := range ops {
				if s, ok := nameOf(op); ok && s != "" {
					col.add(qualify(typ, s))
				} else {
					bad++
				}
			}
			continue
		}
		if s, ok := nameOf(it); ok {
			col.add(s)
			continue
		}
		bad++
	}
	if bad > 0 {
		col.w.warnf("capabilities: %d entries that are not method names ignored", bad)
	}
}

// semanticMappings reads format D: {domain: {method: {...}}}.
func semanticMappings(w *warner, col *collector, raw json.RawMessage) {
	doms, _ := object(raw)
	for _, d := range sortedKeys(doms) {
		v := doms[d]
		switch kind(v) {
		case 'o':
			ms, _ := object(v)
			for _, m := range sortedKeys(ms) {
				if m == "" {
					w.emptyNames++
					continue
				}
				col.add(qualify(d, m))
			}
		case 'a':
			items, _ := array(v)
			for _, it := range items {
				if s, ok := nameOf(it); ok && s != "" {
					col.add(qualify(d, s))
				}
			}
		default:
			w.warnf("semantic_mappings[%s] is %s, not an object", quote(d), aKind(v))
		}
	}
}

func parseText(w *warner, field string, raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	s, ok := scalarText(raw)
	if !ok {
		w.warnf("%s is %s, not a string", field, aKind(raw))
		return ""
	}
	return w.text(s)
}

// parseNameList reads an array of names (strings or {name} objects), sorted and unique.
func parseNameList(w *warner, field string, raw json.RawMessage) []string {
	if isNull(raw) {
		return nil
	}
	items, ok := array(raw)
	if !ok {
		w.warnf("%s is %s, not an array", field, aKind(raw))
		return nil
	}
	out := make([]string, 0, min(len(items), MaxMethods))
	bad, over := 0, 0
	for _, it := range items {
		s, ok := nameOf(it)
		if !ok {
			bad++
			continue
		}
		if s == "" {
			w.emptyNames++
			continue
		}
		if len(out) >= MaxMethods {
			over++
			continue
		}
		out = append(out, w.name(s))
	}
	if bad > 0 {
		w.warnf("%s: %d entries that are not names ignored", field, bad)
	}
	if over > 0 {
		w.warnf("%s: more than %d entries, %d dropped", field, MaxMethods, over)
	}
	return sortUnique(out)
}

// parseStringOrList reads a string or an array of strings, keeping order.
func parseStringOrList(w *warner, field string, raw json.RawMessage) []string {
	if isNull(raw) {
		return nil
	}
	if s, ok := str(raw); ok {
		return []string{w.name(s)}
	}
	items, ok := array(raw)
	if !ok {
		w.warnf("%s is %s, not a string or array", field, aKind(raw))
		return nil
	}
	var out []string
	bad := 0
	for _, it := range items {
		if s, ok := nameOf(it); ok && len(out) < MaxExtraKeys {
			out = append(out, w.name(s))
		} else {
			bad++
		}
	}
	if bad > 0 {
		w.warnf("%s: %d entries ignored", field, bad)
	}
	return out
}

func parseGroups(w *warner, raw json.RawMessage) []Group {
	if isNull(raw) {
		return nil
	}
	items, ok := array(raw)
	if !ok {
		w.warnf("provided_capabilities is %s, not an array", aKind(raw))
		return nil
	}
	out := []Group{}
	total, bad := 0, 0
	for i, it := range items {
		m, ok := object(it)
		if !ok {
			// A bare string names a group with no methods listed.
			if s, ok := str(it); ok && s != "" {
				out = append(out, Group{Type: w.name(s), Methods: []string{}})
				continue
			}
			bad++
			continue
		}
		g := Group{Methods: []string{}}
		for _, k := range []string{"type", "name", "domain"} {
			if s, ok := str(m[k]); ok {
				g.Type = w.name(s)
				break
			}
		}
		if g.Type == "" {
			w.warnf("provided_capabilities[%d] has no type", i)
		}
		g.Version = parseText(w, fmt.Sprintf("provided_capabilities[%d].version", i), m["version"])
		g.Description = parseText(w, fmt.Sprintf("provided_capabilities[%d].description", i), m["description"])
		ml := m["methods"]
		if isNull(ml) {
			ml = m["operations"]
		}
		if ms, ok := array(ml); ok {
			for _, x := range ms {
				s, ok := nameOf(x)
				if !ok || s == "" {
					bad++
					continue
				}
				if total >= MaxMethods {
					bad++
					continue
				}
				total++
				g.Methods = append(g.Methods, w.name(s))
			}
		} else if !isNull(ml) {
			w.warnf("provided_capabilities[%d].methods is %s, not an array", i, aKind(ml))
		}
		out = append(out, g)
	}
	if bad > 0 {
		w.warnf("provided_capabilities: %d entries ignored", bad)
	}
	return out
}

var knownCost = map[string]bool{"cpu": true, "latency_ms": true, "memory_bytes": true, "gpu_eligible": true}

func parseCosts(w *warner, raw json.RawMessage) map[string]Cost {
	if isNull(raw) {
		return nil
	}
	m, ok := object(raw)
	if !ok {
		w.warnf("cost_estimates is %s, not an object", aKind(raw))
		return nil
	}
	out := make(map[string]Cost, min(len(m), MaxMethods))
	skipped := 0
	for _, k := range sortedKeys(m) {
		if k == "" || len(out) >= MaxMethods {
			skipped++
			continue
		}
		fields, ok := object(m[k])
		if !ok {
			// Keep a bare hint ("high") as the cpu level.
			if s, ok := scalarText(m[k]); ok {
				out[w.name(k)] = Cost{CPU: w.text(s)}
				continue
			}
			skipped++
			continue
		}
		var c Cost
		for _, f := range sortedKeys(fields) {
			v := fields[f]
			good := true
			switch f {
			case "cpu":
				s, ok := scalarText(v)
				c.CPU, good = w.text(s), ok
			case "latency_ms":
				n, ok := number(v)
				if ok {
					c.LatencyMS = &n
				}
				good = ok
			case "memory_bytes":
				n, ok := number(v)
				if ok {
					c.MemoryBytes = &n
				}
				good = ok
			case "gpu_eligible":
				b, ok := boolean(v)
				if ok {
					c.GPUEligible = &b
				}
				good = ok
			}
			if !good && !isNull(v) {
				w.warnf("cost_estimates[%s].%s is unexpectedly %s; kept raw", quote(k), f, aKind(v))
			}
			if !good || !knownCost[f] {
				if c.Extra == nil {
					c.Extra = make(map[string]json.RawMessage)
				}
				if len(c.Extra) < MaxExtraKeys && len(v) <= MaxExtraBytes && len(f) <= MaxNameLen {
					c.Extra[f] = compact(v)
				}
			}
		}
		out[w.name(k)] = c
	}
	if skipped > 0 {
		w.warnf("cost_estimates: %d entries ignored", skipped)
	}
	return out
}

func parseDeps(w *warner, raw json.RawMessage) map[string][]string {
	if isNull(raw) {
		return nil
	}
	m, ok := object(raw)
	if !ok {
		w.warnf("operation_dependencies is %s, not an object", aKind(raw))
		return nil
	}
	out := make(map[string][]string, min(len(m), MaxMethods))
	skipped, total := 0, 0
	for _, k := range sortedKeys(m) {
		if k == "" || len(out) >= MaxMethods {
			skipped++
			continue
		}
		pre, n, ok := nameList(m[k])
		skipped += n
		if !ok {
			continue
		}
		for i := range pre {
			pre[i] = w.name(pre[i])
		}
		if total+len(pre) > MaxMethods {
			skipped++
			continue
		}
		total += len(pre)
		out[w.name(k)] = sortUnique(pre)
	}
	if skipped > 0 {
		w.warnf("operation_dependencies: %d entries ignored", skipped)
	}
	return out
}

var knownTS = map[string]bool{
	"btsp_required": true, "btsp_version": true, "btsp_server_available": true,
	"cleartext_available": true, "note": true,
}

func parseTransportSecurity(w *warner, raw json.RawMessage) *TransportSecurity {
	if isNull(raw) {
		return nil
	}
	m, ok := object(raw)
	if !ok {
		w.warnf("transport_security is %s, not an object", aKind(raw))
		return nil
	}
	t := &TransportSecurity{}
	flag := func(k string) *bool {
		v, present := m[k]
		if !present || isNull(v) {
			return nil
		}
		b, ok := boolean(v)
		if !ok {
			w.warnf("transport_security.%s is %s, not a bool", k, aKind(v))
			return nil
		}
		return &b
	}
	t.BTSPRequired = flag("btsp_required")
	t.BTSPServerAvailable = flag("btsp_server_available")
	t.CleartextAvailable = flag("cleartext_available")
	t.BTSPVersion = parseText(w, "transport_security.btsp_version", m["btsp_version"])
	t.Note = parseText(w, "transport_security.note", m["note"])
	t.Extra = keepExtra(w, "transport_security", m, knownTS)
	return t
}

func parseHTTPAPI(w *warner, raw json.RawMessage) []string {
	if isNull(raw) {
		return nil
	}
	if s, ok := str(raw); ok {
		return []string{w.name(s)}
	}
	items, ok := array(raw)
	if !ok {
		w.warnf("http_api is %s, not an array", aKind(raw))
		return nil
	}
	var out []string
	bad := 0
	for _, it := range items {
		s, ok := str(it)
		if !ok {
			if m, isObj := object(it); isObj {
				s, ok = str(m["path"])
			}
		}
		if !ok || s == "" || len(out) >= MaxMethods {
			bad++
			continue
		}
		out = append(out, w.name(s))
	}
	if bad > 0 {
		w.warnf("http_api: %d entries ignored", bad)
	}
	return sortUnique(out)
}

// parseCapabilityMethods finds Songbird's capability token → methods map:
// a top-level "capabilities.methods" or "capability_methods" object, a
// capabilities object with a "methods" object inside, or a capabilities
// object whose values are method arrays.
func parseCapabilityMethods(w *warner, top map[string]json.RawMessage) map[string][]string {
	for _, k := range []string{"capabilities.methods", "capability_methods"} {
		if raw, ok := top[k]; ok && !isNull(raw) {
			mm, err := methodMap(w, raw)
			if err != nil {
				w.warnf("%s: %v", k, err)
			}
			return mm
		}
	}
	caps, ok := object(top["capabilities"])
	if !ok {
		return nil
	}
	if inner, ok := caps["methods"]; ok && kind(inner) == 'o' {
		mm, _ := methodMap(w, inner)
		return mm
	}
	mm, err := methodMap(w, top["capabilities"])
	if err != nil {
		w.warnf("capabilities is an object but not a token → methods map")
		return nil
	}
	return mm
}

// ParseMethodMap reads the result of Songbird's capabilities.methods: an
// object mapping capability tokens (e.g. "network.discovery") to the methods
// that serve them. Each method list is sorted and de-duplicated.
func ParseMethodMap(result json.RawMessage) (map[string][]string, error) {
	w := &warner{}
	if kind(result) != 'o' || !json.Valid(result) {
		return nil, fmt.Errorf("parse capabilities.methods result: %w: got %s", ErrNotCapabilities, kindName(result))
	}
	return methodMap(w, result)
}

func methodMap(w *warner, raw json.RawMessage) (map[string][]string, error) {
	m, ok := object(raw)
	if !ok {
		return nil, fmt.Errorf("got %s, want object", kindName(raw))
	}
	out := make(map[string][]string, min(len(m), MaxMethods))
	total, bad := 0, 0
	for _, tok := range sortedKeys(m) {
		list, n, ok := nameList(m[tok])
		bad += n
		if !ok {
			continue
		}
		if tok == "" || total+len(list) > MaxMethods {
			bad++
			continue
		}
		total += len(list)
		for i := range list {
			list[i] = w.name(list[i])
		}
		out[w.name(tok)] = sortUnique(list)
	}
	if len(out) == 0 && bad > 0 {
		return nil, fmt.Errorf("no token → method entries")
	}
	if bad > 0 {
		w.warnf("capability method map: %d entries ignored", bad)
	}
	return out, nil
}

var knownMethodInfo = map[string]bool{"name": true, "method": true, "description": true, "params": true}

func parseMethodInfo(w *warner, raw json.RawMessage) map[string]MethodInfo {
	if isNull(raw) {
		return nil
	}
	var out map[string]MethodInfo
	add := func(name string, m map[string]json.RawMessage) {
		if name == "" {
			w.emptyNames++
			return
		}
		if len(out) >= MaxMethods {
			return
		}
		if out == nil {
			out = make(map[string]MethodInfo)
		}
		mi := MethodInfo{}
		if m != nil {
			mi.Description = parseText(w, "method_info.description", m["description"])
			if p, ok := m["params"]; ok && !isNull(p) && len(p) <= MaxExtraBytes {
				mi.Params = compact(p)
			}
			mi.Extra = keepExtra(w, "method_info", m, knownMethodInfo)
		}
		out[w.name(name)] = mi
	}
	switch kind(raw) {
	case 'a':
		items, _ := array(raw)
		bad := 0
		for _, it := range items {
			if s, ok := str(it); ok {
				add(s, nil)
				continue
			}
			m, ok := object(it)
			if !ok {
				bad++
				continue
			}
			name, ok := str(m["name"])
			if !ok {
				name, ok = str(m["method"])
			}
			if !ok {
				bad++
				continue
			}
			add(name, m)
		}
		if bad > 0 {
			w.warnf("method_info: %d entries without a name ignored", bad)
		}
	case 'o':
		// Tolerate {method: {description, params}}.
		m, _ := object(raw)
		for _, k := range sortedKeys(m) {
			inner, _ := object(m[k])
			add(k, inner)
		}
	default:
		w.warnf("method_info is %s, not an array", aKind(raw))
	}
	return out
}

// nameList reads a name or a list of names (strings, or objects with a
// name). It returns the names, how many items were not names, and false
// when v is neither a string nor an array.
func nameList(v json.RawMessage) (names []string, bad int, ok bool) {
	if s, ok := str(v); ok {
		return []string{s}, 0, true
	}
	items, ok := array(v)
	if !ok {
		return nil, 1, false
	}
	for _, it := range items {
		if s, ok := nameOf(it); ok && s != "" {
			names = append(names, s)
		} else {
			bad++
		}
	}
	return names, bad, true
}
