package capability

import (
	"encoding/json"
	"fmt"
)

// Identity methods a caller may record in Identity.Method.
const (
	// MethodIdentityGet is the standard identity.get.
	MethodIdentityGet = "identity.get"
	// MethodIdentity is the older identity method.
	MethodIdentity = "identity"
)

// Identity is what a primal says about who it is.
type Identity struct {
	// Method is the method that answered (MethodIdentityGet or
	// MethodIdentity). ParseIdentity cannot know it and leaves it empty:
	// the caller that sent the request sets it.
	Method  string `json:"method,omitempty"`
	Primal  string `json:"primal,omitempty"`
	Version string `json:"version,omitempty"`
	// Domain is the primary capability domain (identity.get).
	Domain string `json:"domain,omitempty"`
	// License is an SPDX identifier (identity.get).
	License string `json:"license,omitempty"`
	// FamilyID and NodeID come from the older identity answer
	// (family_id, or BearDog's family / node).
	FamilyID string `json:"family_id,omitempty"`
	NodeID   string `json:"node_id,omitempty"`
	// Capabilities is the older identity answer's capability list, sorted.
	Capabilities []string `json:"capabilities,omitempty"`
	// Legacy is true when the answer has the older identity shape.
	Legacy bool `json:"legacy"`
	// Extra keeps unrecognised keys raw (bounded), e.g. encryption_tag.
	Extra    map[string]json.RawMessage `json:"extra,omitempty"`
	Warnings []string                   `json:"warnings,omitempty"`
}

var knownIdentity = map[string]bool{
	"primal": true, "name": true, "primal_name": true, "version": true, "domain": true,
	"license": true, "family_id": true, "family": true, "node_id": true, "node": true,
	"capabilities": true,
}

// ParseIdentity reads the result of identity.get ({primal, version, domain?,
// license?}) or of the older identity ({primal, version, family_id,
// capabilities}). It fails only if result is not a JSON object; a missing
// primal or version is a warning. The caller sets Identity.Method.
func ParseIdentity(result json.RawMessage) (*Identity, error) {
	if !json.Valid(result) {
		return nil, fmt.Errorf("parse identity result: invalid JSON")
	}
	m, ok := object(result)
	if !ok {
		return nil, fmt.Errorf("parse identity result: got %s, want object", kindName(result))
	}
	w := &warner{}
	id := &Identity{}
	first := func(field string, keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k]; ok && !isNull(v) {
				s, ok := scalarText(v)
				if !ok {
					w.warnf("%s is %s, not a string", k, aKind(v))
					continue
				}
				return w.name(s)
			}
		}
		return ""
	}
	id.Primal = first("primal", "primal", "name", "primal_name")
	id.Version = first("version", "version")
	id.Domain = first("domain", "domain")
	id.License = first("license", "license")
	id.FamilyID = first("family_id", "family_id", "family")
	id.NodeID = first("node_id", "node_id", "node")
	id.Capabilities = parseNameList(w, "capabilities", m["capabilities"])
	for _, k := range []string{"family_id", "family", "node", "capabilities", "encryption_tag"} {
		if _, ok := m[k]; ok {
			id.Legacy = true
		}
	}
	if id.Primal == "" {
		w.warnf("no primal name")
	}
	if id.Version == "" {
		w.warnf("no version")
	}
	id.Extra = keepExtra(w, "identity", m, knownIdentity)
	id.Warnings = w.finish()
	return id, nil
}
