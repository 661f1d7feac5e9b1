package capability

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseIdentity(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Identity
	}{
		{
			name: "identity.get rhizoCrypt",
			raw:  `{"primal":"rhizocrypt","version":"0.14.0","domain":"dag","license":"AGPL-3.0-or-later"}`,
			want: Identity{Primal: "rhizocrypt", Version: "0.14.0", Domain: "dag", License: "AGPL-3.0-or-later"},
		},
		{
			name: "identity.get NestGate without license",
			raw:  `{"primal":"nestgate","version":"0.4.2","domain":"storage"}`,
			want: Identity{Primal: "nestgate", Version: "0.4.2", Domain: "storage"},
		},
		{
			name: "older identity Songbird",
			raw:  `{"primal":"songbird","version":"0.2.1","family_id":"default","capabilities":["ipc.register","ipc.list","discovery.peers","ipc.list"]}`,
			want: Identity{Primal: "songbird", Version: "0.2.1", FamilyID: "default", Legacy: true,
				Capabilities: []string{"discovery.peers", "ipc.list", "ipc.register"}},
		},
		{
			name: "older identity BearDog",
			raw:  `{"primal":"beardog","family":"nat0","node":"tower1","encryption_tag":"beardog:family:nat0","version":"0.15.0"}`,
			want: Identity{Primal: "beardog", Version: "0.15.0", FamilyID: "nat0", NodeID: "tower1", Legacy: true,
				Extra: map[string]json.RawMessage{"encryption_tag": json.RawMessage(`"beardog:family:nat0"`)}},
		},
		{
			name: "name instead of primal, numeric version",
			raw:  `{"name":"sweetgrass","version":7}`,
			want: Identity{Primal: "sweetgrass", Version: "7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, err := ParseIdentity(json.RawMessage(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "name instead of primal, numeric version" {
				id.Warnings = nil
			}
			if !reflect.DeepEqual(*id, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *id, tt.want)
			}
		})
	}
}

func TestParseIdentityOdd(t *testing.T) {
	for _, raw := range []string{``, `[]`, `"beardog"`, `null`, `{"primal":`} {
		if id, err := ParseIdentity(json.RawMessage(raw)); err == nil {
			t.Errorf("ParseIdentity(%q) = %+v, want error", raw, id)
		}
	}
	id, err := ParseIdentity(json.RawMessage(`{"primal":{"x":1},"capabilities":"all"}`))
	if err != nil {
		t.Fatal(err)
	}
	if id.Primal != "" || len(id.Warnings) < 3 {
		t.Errorf("odd identity = %+v", id)
	}
	// The caller records which method answered.
	id.Method = MethodIdentityGet
	b, _ := json.Marshal(id)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m["method"] != "identity.get" {
		t.Errorf("JSON = %s", b)
	}
}
