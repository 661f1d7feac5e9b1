package capability

// Readers of the optional fields of a capabilities.list answer, each bounded
// and warning rather than failing: Level 3 groups, costs and dependencies,
// transport security, HTTP API paths, format C method_info.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

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
	items, ok := arrayField(w, field, raw)
	if !ok {
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
	items, ok := arrayField(w, "provided_capabilities", raw)
	if !ok {
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
	m, ok := objectField(w, "cost_estimates", raw)
	if !ok {
		return nil
	}
	out := make(map[string]Cost, min(len(m), MaxMethods))
	skipped := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
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
		for _, f := range slices.Sorted(maps.Keys(fields)) {
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
	m, ok := objectField(w, "operation_dependencies", raw)
	if !ok {
		return nil
	}
	out := make(map[string][]string, min(len(m), MaxMethods))
	skipped, total := 0, 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
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
	m, ok := objectField(w, "transport_security", raw)
	if !ok {
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
	items, ok := arrayField(w, "http_api", raw)
	if !ok {
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
		for _, k := range slices.Sorted(maps.Keys(m)) {
			inner, _ := object(m[k])
			add(k, inner)
		}
	default:
		w.warnf("method_info is %s, not an array", aKind(raw))
	}
	return out
}
