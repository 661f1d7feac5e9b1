package ipc

import (
	"fmt"
	"time"
)

// Wire selects how requests are written. Every wire is read the same way.
type Wire uint8

const (
	// WireJSONRPC writes JSON-RPC 2.0 requests with numeric ids (the default).
	WireJSONRPC Wire = iota
	// WireLean writes the lean NDJSON wire: no "jsonrpc" field, uint64 ids.
	WireLean
	// WireHolon writes Holon-RPC envelopes: "jsonrpc":"2.0" and string ids.
	WireHolon
)

func (w Wire) String() string {
	switch w {
	case WireLean:
		return "lean"
	case WireHolon:
		return "holon"
	}
	return "jsonrpc"
}

// ParseWire reads a --wire value. "auto" and "" mean WireJSONRPC for writing,
// which lean daemons also accept.
func ParseWire(s string) (Wire, error) {
	switch s {
	case "", "auto", "jsonrpc":
		return WireJSONRPC, nil
	case "lean":
		return WireLean, nil
	case "holon":
		return WireHolon, nil
	}
	return 0, fmt.Errorf("unknown wire %q (want auto, jsonrpc, lean or holon)", s)
}

// Direction says which way a traced frame went.
type Direction uint8

const (
	// Out is a frame primalscope sent.
	Out Direction = iota + 1
	// In is a frame the peer sent.
	In
	// Stderr is a line a stdio peer wrote to its standard error.
	Stderr
	// Note is something primalscope observed about the connection (a
	// protocol warning, a handshake step, the connection ending).
	Note
)

func (d Direction) String() string {
	switch d {
	case Out:
		return "out"
	case In:
		return "in"
	case Stderr:
		return "stderr"
	case Note:
		return "note"
	}
	return "?"
}

// MarshalText renders a Direction by name in JSON output.
func (d Direction) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// TraceEvent is one frame, both ways, as reported to a trace hook.
type TraceEvent struct {
	Time time.Time `json:"time"`
	Dir  Direction `json:"dir"`
	// Data is the frame's bytes (never key material). It must not be modified.
	Data []byte `json:"-"`
	// Size is the frame's length in bytes.
	Size int `json:"size"`
	// Warning names a protocol deviation seen in this frame, if any.
	Warning string `json:"warning,omitempty"`
	// Kept says Data is a frame a Conn read and handed on in a Message
	// (its Raw): its bytes are never reused nor changed, so a consumer
	// may keep the slice rather than copy it. False when Data may be a
	// buffer its producer reuses (frames written, other transports).
	Kept bool `json:"-"`
}
