package render

import (
	"bytes"
	"encoding/json"
)

// JQInput decodes one JSON document into the values gojq works on: objects,
// arrays, strings, booleans, nil, and numbers as int (integers that float64
// holds exactly) or float64. The command line's --jq and the TUI's filter
// both read their input with it, so they agree on every number.
func JQInput(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return jqNumbers(v), nil
}

// jqNumbers turns json.Number into int or float64, in place.
func jqNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= -1<<53 && i <= 1<<53 {
			return int(i)
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = jqNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = jqNumbers(e)
		}
	}
	return v
}
