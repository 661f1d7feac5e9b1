package demo

import (
	"encoding/json"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// Registry is the state of the demo's Songbird-like registry (peer.Registry).
type Registry = peer.Registry

// Registration is one primal registered with the registry.
type Registration = peer.Registration

// RegistryEvent is one entry of the registry's ipc.watch feed.
type RegistryEvent = peer.RegistryEvent

func orEmpty(p json.RawMessage) json.RawMessage {
	if len(p) == 0 {
		return json.RawMessage("{}")
	}
	return p
}
