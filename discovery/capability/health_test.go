package capability

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseLiveness(t *testing.T) {
	tests := []struct {
		raw    string
		alive  bool
		status string
		primal string
	}{
		{`{"status":"alive"}`, true, "alive", ""},
		{`{"status":"healthy"}`, true, "healthy", ""},
		{`{"alive":true}`, true, "", ""},
		{`{"alive":true,"primal":"beardog"}`, true, "", "beardog"},
		{`{"status":"OK"}`, true, "OK", ""},
		{`{"status":"up","primal":"nestgate","version":"0.4.2"}`, true, "up", "nestgate"},
		{`{"ok":true}`, true, "", ""},
		{`{"healthy":"true"}`, true, "", ""},
		{`"ok"`, true, "ok", ""},
		{`true`, true, "true", ""},
		{`{"status":"dead"}`, false, "dead", ""},
		{`{"status":"unhealthy","primal":"squirrel"}`, false, "unhealthy", "squirrel"},
		{`{"alive":false}`, false, "", ""},
		{`false`, false, "false", ""},
		{`{}`, false, "", ""},
		{`null`, false, "", ""},
		{`[1,2]`, false, "", ""},
		{`not json`, false, "", ""},
	}
	for _, tt := range tests {
		h := ParseLiveness(json.RawMessage(tt.raw))
		if h.Alive != tt.alive || h.Status != tt.status || h.Primal != tt.primal {
			t.Errorf("ParseLiveness(%s) = %+v, want alive=%v status=%q primal=%q", tt.raw, h, tt.alive, tt.status, tt.primal)
		}
	}
	if h := ParseLiveness(json.RawMessage(`{}`)); len(h.Warnings) == 0 {
		t.Error("no warning for an unreadable liveness answer")
	}
}

func TestParseReadiness(t *testing.T) {
	tests := []struct {
		name       string
		raw        string
		ready      bool
		alive      bool
		subsystems map[string]string
	}{
		{"songbird ready", `{"status":"ready","subsystems":{"ipc":"up","discovery":"up","federation":"up","tls":"up"}}`, true, true,
			map[string]string{"ipc": "up", "discovery": "up", "federation": "up", "tls": "up"}},
		{"not ready", `{"status":"starting","subsystems":{"ipc":"up","storage":"down"}}`, false, false,
			map[string]string{"ipc": "up", "storage": "down"}},
		{"ready flag", `{"ready":true}`, true, true, nil},
		{"ready false with healthy status", `{"status":"healthy","ready":false}`, false, true, nil},
		{"subsystems only, all up", `{"subsystems":{"ipc":true,"dag":{"status":"up","sessions":3}}}`, true, true,
			map[string]string{"ipc": "up", "dag": "up"}},
		{"subsystems only, one down", `{"subsystems":{"ipc":true,"dag":false}}`, false, false,
			map[string]string{"ipc": "up", "dag": "down"}},
		{"health.check shape", `{"status":"healthy","primal":"songbird","version":"0.2.1","uptime_seconds":null,"subsystems":{"relay":"up"}}`, true, true,
			map[string]string{"relay": "up"}},
		{"odd subsystem values", `{"status":"ready","subsystems":{"a":[1],"b":null,"c":2}}`, true, true,
			map[string]string{"a": "[1]", "b": "null", "c": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := ParseReadiness(json.RawMessage(tt.raw))
			if h.Ready != tt.ready || h.Alive != tt.alive || !reflect.DeepEqual(h.Subsystems, tt.subsystems) {
				t.Errorf("ParseReadiness = %+v, want ready=%v alive=%v subsystems=%v", h, tt.ready, tt.alive, tt.subsystems)
			}
		})
	}
}
