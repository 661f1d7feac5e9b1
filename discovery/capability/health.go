package capability

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
)

// Health is a parsed health.liveness, health.readiness or health.check answer.
type Health struct {
	// Alive is true when the answer says the primal is alive.
	Alive bool `json:"alive"`
	// Ready is true when the answer says the primal is ready to serve.
	Ready bool `json:"ready"`
	// Status is the status text as sent, if any.
	Status string `json:"status,omitempty"`
	// Primal and Version are echoed by some primals.
	Primal  string `json:"primal,omitempty"`
	Version string `json:"version,omitempty"`
	// Subsystems maps a subsystem to its status text ("up"); booleans become
	// "up"/"down", objects their status field.
	Subsystems map[string]string `json:"subsystems,omitempty"`
	Warnings   []string          `json:"warnings,omitempty"`
}

// aliveWords and readyWords are status texts taken as positive.
var (
	aliveWords = map[string]bool{
		"alive": true, "healthy": true, "ok": true, "up": true, "live": true, "running": true,
		"ready": true, "pass": true, "passing": true, "serving": true, "green": true,
		"true": true, "yes": true, "online": true, "available": true, "good": true,
	}
	readyWords = map[string]bool{
		"ready": true, "ok": true, "up": true, "healthy": true, "serving": true, "pass": true,
		"passing": true, "green": true, "true": true, "yes": true, "online": true, "available": true,
	}
)

// ParseLiveness reads a health.liveness answer. {"status":"alive"},
// {"status":"healthy"}, {"alive":true}, {"alive":true,"primal":...}, "ok",
// true and similar positive answers mean Alive. An answer it cannot read is
// not alive, with a warning. It never fails.
func ParseLiveness(result json.RawMessage) Health {
	h, _ := parseHealth(result)
	return h
}

// ParseReadiness reads a health.readiness (or health.check) answer such as
// {"status":"ready","subsystems":{"ipc":"up"}}. Ready implies Alive. With no
// status or ready flag, the primal is ready when it lists subsystems and all
// are up. It never fails.
func ParseReadiness(result json.RawMessage) Health {
	h, readySaid := parseHealth(result)
	if !readySaid && len(h.Subsystems) > 0 {
		all := true
		for _, s := range h.Subsystems {
			if !readyWords[strings.ToLower(s)] {
				all = false
				break
			}
		}
		h.Ready = all
	}
	if h.Ready {
		h.Alive = true
	}
	return h
}

// parseHealth reads the fields common to all health answers; readySaid
// reports whether the answer stated readiness explicitly.
func parseHealth(result json.RawMessage) (h Health, readySaid bool) {
	w := &warner{}
	defer func() { h.Warnings = w.finish() }()
	if !json.Valid(result) {
		w.warnf("health answer is not valid JSON")
		return h, false
	}
	switch kind(result) {
	case 'b', 's', 'n':
		s, _ := scalarText(result)
		h.Status = w.text(s)
		word := strings.ToLower(strings.TrimSpace(s))
		h.Alive = aliveWords[word] || word == "1"
		h.Ready = readyWords[word]
		return h, kind(result) == 's'
	case 'o':
	default:
		w.warnf("health answer is %s", aKind(result))
		return h, false
	}
	m, _ := object(result)
	aliveSaid := false
	if v, ok := m["status"]; ok && !isNull(v) {
		if s, ok := scalarText(v); ok {
			h.Status = w.text(s)
			word := strings.ToLower(strings.TrimSpace(s))
			h.Alive, aliveSaid = aliveWords[word], true
			h.Ready, readySaid = readyWords[word], true
		} else if b, ok := boolean(v); ok {
			h.Alive, h.Ready, aliveSaid, readySaid = b, b, true, true
		} else {
			w.warnf("status is %s", aKind(v))
		}
	}
	for _, k := range []string{"alive", "healthy", "live", "ok"} {
		if b, ok := boolean(m[k]); ok {
			h.Alive, aliveSaid = b, true
			break
		}
	}
	if b, ok := boolean(m["ready"]); ok {
		h.Ready, readySaid = b, true
	}
	if !aliveSaid {
		w.warnf("no recognisable liveness signal")
	}
	h.Primal = parseText(w, "primal", m["primal"])
	h.Version = parseText(w, "version", m["version"])
	h.Subsystems = parseSubsystems(w, m["subsystems"])
	return h, readySaid
}

func parseSubsystems(w *warner, raw json.RawMessage) map[string]string {
	m, ok := objectField(w, "subsystems", raw)
	if !ok {
		return nil
	}
	out := make(map[string]string, min(len(m), MaxExtraKeys))
	skipped := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if len(out) >= MaxExtraKeys*16 || k == "" {
			skipped++
			continue
		}
		v := m[k]
		var s string
		switch kind(v) {
		case 'b':
			b, _ := boolean(v)
			s = "down"
			if b {
				s = "up"
			}
		case 's', 'n':
			s, _ = scalarText(v)
		case 'o':
			inner, _ := object(v)
			if t, ok := scalarText(inner["status"]); ok {
				s = t
			} else {
				s = string(compact(v))
			}
		default:
			s = string(compact(v))
		}
		out[w.name(k)] = w.text(s)
	}
	if skipped > 0 {
		w.warnf("subsystems: %d entries ignored", skipped)
	}
	return out
}
