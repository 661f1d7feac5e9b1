package capability

// Songbird's capability token → methods map, inside a capabilities.list
// answer or as the result of capabilities.methods.

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

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
	for _, tok := range slices.Sorted(maps.Keys(m)) {
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
