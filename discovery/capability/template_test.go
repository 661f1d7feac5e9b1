package capability

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParamsTemplate(t *testing.T) {
	for _, tc := range []struct{ desc, want string }{
		// format C as primals send it (testdata/payloads/format_c.json)
		{`{"entry": "object"}`, `{"entry":{}}`},
		{`["id"]`, `{"id":null}`},
		{`{"message":"base64 string","count":"u32","force":"bool","tags":"Vec<String>","x":"whatever"}`,
			`{"message":"","count":0,"force":false,"tags":[],"x":null}`},
		// JSON Schema: required first, defaults, examples, enums, nesting
		{`{"type":"object","required":["name"],"properties":{"lang":{"type":"string","enum":["en","fr"]},"name":{"type":"string","examples":["world"]},"n":{"type":["integer","null"],"default":3},"opts":{"type":"object","properties":{"loud":{"type":"boolean"}}}}}`,
			`{"name":"world","lang":"en","n":3,"opts":{"loud":false}}`},
		{`{"properties":{"ids":{"type":"array","items":{"type":"string"}}}}`, `{"ids":[]}`},
		// descriptors
		{`[{"name":"id","type":"string"},{"name":"limit","type":"integer","default":10}]`, `{"id":"","limit":10}`},
		// a schema of an array of params
		{`{"type":"array"}`, `[]`},
	} {
		got, ok := ParamsTemplate(json.RawMessage(tc.desc))
		if !ok || string(got) != tc.want {
			t.Errorf("%s:\n got %s (ok %v)\nwant %s", tc.desc, got, ok, tc.want)
		}
	}
	// Descriptions of no params object, broken or hostile ones: no template.
	deep := strings.Repeat(`{"a":`, 50) + `"string"` + strings.Repeat(`}`, 50)
	for _, desc := range []string{``, `null`, `"string"`, `{"type":"string"}`, `[{"type":"string"}]`, `{`, `[1,2]`, deep} {
		if got, ok := ParamsTemplate(json.RawMessage(desc)); ok && desc != deep {
			t.Errorf("%q: template %s", desc, got)
		} else if ok && len(got) > maxTemplateBytes {
			t.Errorf("deep: %d bytes", len(got))
		}
	}
	wide := `{`
	for i := 0; i < 500; i++ {
		wide += `"k` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `":"string",`
	}
	wide = strings.TrimSuffix(wide, ",") + `}`
	if got, ok := ParamsTemplate(json.RawMessage(wide)); ok {
		var m map[string]any
		if json.Unmarshal(got, &m) != nil || len(m) > maxTemplateKeys {
			t.Errorf("wide: %d keys", len(m))
		}
	}
}

// FuzzParamsTemplate: any description gives no template or a valid,
// bounded JSON object or array, and never panics.
func FuzzParamsTemplate(f *testing.F) {
	for _, s := range []string{`{"entry":"object"}`, `["id"]`, `{"type":"object","properties":{"a":{"type":"string"}}}`,
		`[{"name":"id","type":"string"}]`, `{"a":{"b":{"c":"u8"}}}`, `{"type":["null","array"]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, desc []byte) {
		got, ok := ParamsTemplate(desc)
		if !ok {
			return
		}
		if !json.Valid(got) || len(got) > maxTemplateBytes || (got[0] != '{' && got[0] != '[') {
			t.Fatalf("%q → %q", desc, got)
		}
	})
}
