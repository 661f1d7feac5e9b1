package capability

// The types a capabilities.list answer parses into, and what they answer
// about themselves (Has, Cost.Summary, TransportSecurity.RequiresBTSP).

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
)

// Format names the wire shape a capabilities.list answer was read from.
type Format string

// Formats, in the order the standard says to look for them.
const (
	// FormatStandard is the Capability Wire Standard envelope {primal, version, methods}.
	FormatStandard Format = "standard"
	// FormatE is {provided_capabilities:[{type, methods}]} (older BearDog, rhizoCrypt).
	FormatE Format = "E"
	// FormatB is {capabilities:[...], methods?:[...]} without the full envelope (sweetGrass).
	FormatB Format = "B"
	// FormatC is {method_info:[{name, ...}]}.
	FormatC Format = "C"
	// FormatD is {semantic_mappings:{domain:{method:{}}}} (loamSpine tests).
	FormatD Format = "D"
	// FormatA is a bare array of method names (Songbird).
	FormatA Format = "A"
	// FormatUnknown is an object from which no method list could be read.
	FormatUnknown Format = "unknown"
)

// ErrNotCapabilities is returned (wrapped) when a result cannot be a
// capabilities.list answer at all: not JSON, or a JSON scalar.
var ErrNotCapabilities = errors.New("not a capabilities.list result")

// Capabilities is a primal's parsed self-description.
type Capabilities struct {
	// Primal is the canonical primal name, if given.
	Primal string `json:"primal,omitempty"`
	// Version is the primal's version, if given (numbers are kept as text).
	Version string `json:"version,omitempty"`
	// Format is the wire shape the method list was read from.
	Format Format `json:"format"`
	// Methods is every callable method advertised, sorted and de-duplicated.
	Methods []string `json:"methods"`
	// MethodInfo holds per-method details from format C, keyed by method name.
	MethodInfo map[string]MethodInfo `json:"method_info,omitempty"`
	// The four Level 3 fields below are nil (JSON null) when the answer
	// lacks them and empty when it declares them empty, so that a
	// compliance check can tell the two apart.

	// Provided is the provided_capabilities grouping, in wire order.
	Provided []Group `json:"provided_capabilities"`
	// Consumed lists the methods this primal needs from others, sorted.
	Consumed []string `json:"consumed_capabilities"`
	// CostEstimates maps a method or a domain to its cost hints.
	CostEstimates map[string]Cost `json:"cost_estimates"`
	// OperationDependencies maps a method to the methods that must run first.
	OperationDependencies map[string][]string `json:"operation_dependencies"`
	// Protocol is the advertised IPC protocol (e.g. "jsonrpc-2.0").
	Protocol string `json:"protocol,omitempty"`
	// Protocols is BearDog's plural "protocols" list.
	Protocols []string `json:"protocols,omitempty"`
	// Transport lists the advertised transports (a single string becomes one entry).
	Transport []string `json:"transport,omitempty"`
	// TransportSecurity says whether BTSP is needed before JSON-RPC.
	TransportSecurity *TransportSecurity `json:"transport_security,omitempty"`
	// SignedAnnouncement is the signed_announcement object, if well formed.
	SignedAnnouncement *SignedAnnouncement `json:"signed_announcement,omitempty"`
	// Signature is the verdict on SignedAnnouncement, set by Parse.
	Signature Verdict `json:"signature"`
	// CapabilityMethods is Songbird's capability token → methods map, if present.
	CapabilityMethods map[string][]string `json:"capability_methods,omitempty"`
	// HTTPAPI lists biomeOS HTTP API paths, if present.
	HTTPAPI []string `json:"http_api,omitempty"`
	// BTSPEnabled is the legacy btsp_enabled flag, if present.
	BTSPEnabled *bool `json:"btsp_enabled,omitempty"`
	// FamilyID and NodeID are echoed by some primals (BearDog).
	FamilyID string `json:"family_id,omitempty"`
	NodeID   string `json:"node_id,omitempty"`
	// Extra keeps unrecognised top-level keys raw (bounded).
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
	// Warnings lists anything odd that did not stop parsing.
	Warnings []string `json:"warnings,omitempty"`

	// signed is the method list as sent, for signature verification.
	signed         []string
	signedOverflow bool
}

// MethodInfo is per-method detail from format C.
type MethodInfo struct {
	Description string                     `json:"description,omitempty"`
	Params      json.RawMessage            `json:"params,omitempty"`
	Extra       map[string]json.RawMessage `json:"extra,omitempty"`
}

// Group is one provided_capabilities entry.
type Group struct {
	// Type is the group's domain name (e.g. "dag").
	Type string `json:"type"`
	// Version and Description are optional group metadata.
	Version     string `json:"version,omitempty"`
	Description string `json:"description,omitempty"`
	// Methods are the names as sent (usually short, within Type).
	Methods []string `json:"methods"`
}

// Cost is a cost hint for a method or a domain.
type Cost struct {
	// CPU is "low", "medium" or "high" (numbers are kept as text).
	CPU         string   `json:"cpu,omitempty"`
	LatencyMS   *float64 `json:"latency_ms,omitempty"`
	MemoryBytes *float64 `json:"memory_bytes,omitempty"`
	GPUEligible *bool    `json:"gpu_eligible,omitempty"`
	// Extra keeps unknown or ill-typed keys raw.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Summary is the cost for people, on one line: "cpu low ~5 ms mem 4 MiB
// gpu"; peer text in it is sanitized (render.Sanitize). "" for nil.
func (c *Cost) Summary() string {
	if c == nil {
		return ""
	}
	var p []string
	if c.CPU != "" {
		p = append(p, "cpu "+render.Sanitize(c.CPU))
	}
	if c.LatencyMS != nil {
		p = append(p, fmt.Sprintf("~%g ms", *c.LatencyMS))
	}
	if f := c.MemoryBytes; f != nil {
		if *f >= 0 && *f < 1<<62 {
			p = append(p, "mem "+human.Bytes(int64(*f)))
		} else {
			p = append(p, fmt.Sprintf("mem %g B", *f))
		}
	}
	if c.GPUEligible != nil && *c.GPUEligible {
		p = append(p, "gpu")
	}
	return strings.Join(p, " ")
}

// TransportSecurity is the transport_security object.
type TransportSecurity struct {
	BTSPRequired        *bool  `json:"btsp_required,omitempty"`
	BTSPVersion         string `json:"btsp_version,omitempty"`
	BTSPServerAvailable *bool  `json:"btsp_server_available,omitempty"`
	CleartextAvailable  *bool  `json:"cleartext_available,omitempty"`
	Note                string `json:"note,omitempty"`
	// Extra keeps other keys raw (e.g. BearDog's cleartext_methods).
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// RequiresBTSP reports whether the peer said a BTSP handshake is mandatory.
func (t *TransportSecurity) RequiresBTSP() bool {
	return t != nil && t.BTSPRequired != nil && *t.BTSPRequired
}

// Has reports whether method is among the advertised methods.
func (c *Capabilities) Has(method string) bool {
	if c == nil {
		return false
	}
	_, found := slices.BinarySearch(c.Methods, method)
	return found
}
