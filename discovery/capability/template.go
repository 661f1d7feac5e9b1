package capability

// A params template from a method's params description (format C's
// method_info params): what a person starts editing.

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Bounds of a template.
const (
	maxTemplateDepth = 6
	maxTemplateKeys  = 64
	maxTemplateBytes = 4 << 10
)

// schemaWords are JSON Schema keywords: an object made of them (with
// "type") describes one value rather than naming params.
var schemaWords = map[string]bool{
	"type": true, "properties": true, "required": true, "description": true, "title": true,
	"default": true, "enum": true, "const": true, "examples": true, "example": true, "items": true,
	"additionalProperties": true, "format": true, "minimum": true, "maximum": true, "pattern": true,
	"minLength": true, "maxLength": true, "minItems": true, "maxItems": true, "$schema": true,
	"$id": true, "oneOf": true, "anyOf": true, "allOf": true, "nullable": true,
}

// ParamsTemplate builds the params to start from for a method whose
// params are described by desc, in any of the shapes primals send: a JSON
// Schema ({"type":"object","properties":{...}}, with default, const, enum
// or examples where given), a name → type map ({"entry":"object"}), a list
// of names (["id"]) or of descriptors ([{"name":"id","type":"string"}]).
// Each value is its default, example or first allowed value, else the zero
// value of its type ("" 0 false {} [], null when unknown). ok is false when
// desc describes no object or array of params, or the template would be
// large.
func ParamsTemplate(desc json.RawMessage) (tmpl json.RawMessage, ok bool) {
	if len(desc) > MaxExtraBytes || !json.Valid(desc) {
		return nil, false
	}
	v, ok := templateOf(desc, 0)
	if !ok {
		return nil, false
	}
	if _, isObj := v.(ordered); !isObj {
		if _, isArr := v.([]any); !isArr {
			return nil, false
		}
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > maxTemplateBytes {
		return nil, false
	}
	return b, true
}

// ordered is a JSON object that keeps its keys in the order given.
type ordered struct {
	keys []string
	vals map[string]any
}

func (o ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *ordered) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, had := o.vals[k]; !had {
		if len(o.keys) >= maxTemplateKeys {
			return
		}
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// objectFields reads a JSON object's members in order (ok false when raw
// is not an object).
func objectFields(raw json.RawMessage) (keys []string, vals map[string]json.RawMessage, ok bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	vals = map[string]json.RawMessage{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, nil, false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, nil, false
		}
		if _, had := vals[k]; !had {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return keys, vals, true
}

// templateOf is the template value of one description.
func templateOf(desc json.RawMessage, depth int) (any, bool) {
	if depth > maxTemplateDepth {
		return nil, false
	}
	desc = bytes.TrimSpace(desc)
	if len(desc) == 0 {
		return nil, false
	}
	switch desc[0] {
	case '{':
		keys, vals, ok := objectFields(desc)
		if !ok {
			return nil, false
		}
		if isSchema(keys, vals) {
			return schemaValue(vals, depth)
		}
		// A name → type (or nested description) map.
		var o ordered
		for _, k := range keys {
			v, _ := templateOf(vals[k], depth+1)
			o.set(k, v)
		}
		return o, true
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(desc, &items) != nil {
			return nil, false
		}
		// A list of param names, or of param descriptors.
		var o ordered
		for _, it := range items {
			var name string
			if json.Unmarshal(it, &name) == nil {
				if name != "" {
					o.set(name, nil)
				}
				continue
			}
			_, vals, ok := objectFields(it)
			if !ok {
				return nil, false
			}
			if json.Unmarshal(vals["name"], &name) != nil || name == "" {
				return nil, false
			}
			v, _ := schemaValue(vals, depth+1)
			o.set(name, v)
		}
		return o, true
	case '"':
		var typ string
		if json.Unmarshal(desc, &typ) != nil {
			return nil, false
		}
		return zeroOf(typ), true
	}
	return nil, false
}

// isSchema reports whether an object describes one value (JSON Schema)
// rather than naming params.
func isSchema(keys []string, vals map[string]json.RawMessage) bool {
	if _, ok := vals["properties"]; ok {
		return true
	}
	if _, ok := vals["type"]; !ok {
		return false
	}
	for _, k := range keys {
		if !schemaWords[k] {
			return false
		}
	}
	return true
}

// schemaValue is the template value a JSON Schema (or a param descriptor)
// describes.
func schemaValue(vals map[string]json.RawMessage, depth int) (any, bool) {
	for _, k := range []string{"default", "const", "example"} {
		if v, ok := vals[k]; ok {
			return json.RawMessage(v), true
		}
	}
	for _, k := range []string{"examples", "enum"} {
		var first []json.RawMessage
		if json.Unmarshal(vals[k], &first) == nil && len(first) > 0 {
			return first[0], true
		}
	}
	typ := typeName(vals["type"])
	if props, ok := vals["properties"]; ok && (typ == "" || typ == "object") {
		keys, pvals, ok := objectFields(props)
		if !ok {
			return ordered{}, true
		}
		// Required properties first, each group in the order given.
		var req []string
		_ = json.Unmarshal(vals["required"], &req)
		need := map[string]bool{}
		for _, r := range req {
			need[r] = true
		}
		sort.SliceStable(keys, func(i, j int) bool { return need[keys[i]] && !need[keys[j]] })
		var o ordered
		for _, k := range keys {
			v, _ := templateOf(pvals[k], depth+1)
			o.set(k, v)
		}
		return o, true
	}
	return zeroOf(typ), true
}

// typeName is a schema's type: the first non-null one of a list.
func typeName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		for _, t := range list {
			if t != "null" {
				return t
			}
		}
	}
	return ""
}

// zeroOf is the zero value of a type named in JSON Schema's words or a
// language's ("u64", "bool", "hex string", "Vec<u8>"...); nil when unknown.
func zeroOf(typ string) any {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case t == "object" || t == "map" || strings.HasPrefix(t, "map<") || strings.HasPrefix(t, "hashmap"):
		return ordered{}
	case t == "array" || t == "list" || strings.HasPrefix(t, "vec<") || strings.HasSuffix(t, "[]"):
		return []any{}
	case t == "boolean" || t == "bool":
		return false
	case t == "number" || t == "integer" || t == "int" || t == "float" || t == "double" ||
		len(t) >= 2 && (t[0] == 'u' || t[0] == 'i' || t[0] == 'f') && strings.Trim(t[1:], "0123456789") == "" && len(t) <= 4:
		return 0
	case t == "string" || strings.Contains(t, "string") || t == "str" || t == "base64" || t == "hex":
		return ""
	}
	return nil
}
