package capability

// Parse: which wire format an answer is, and its method list, read in the
// standard's priority order (methods, provided_capabilities, capabilities,
// method_info, semantic_mappings, a bare array).

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

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
		for _, tok := range slices.Sorted(maps.Keys(c.CapabilityMethods)) {
			for _, m := range c.CapabilityMethods[tok] {
				col.add(m)
			}
		}
		c.Format = FormatB
	case len(c.MethodInfo) > 0 || kind(top["method_info"]) == 'a':
		for _, m := range slices.Sorted(maps.Keys(c.MethodInfo)) {
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
	for _, d := range slices.Sorted(maps.Keys(doms)) {
		v := doms[d]
		switch kind(v) {
		case 'o':
			ms, _ := object(v)
			for _, m := range slices.Sorted(maps.Keys(ms)) {
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
