// Package ipc is primalscope's client for the primal ecosystem: endpoints,
// dialers, framings and the multiplexed Conn that carries JSON-RPC 2.0 and the
// lean NDJSON wire over Unix sockets, TCP, WebSocket and stdio.
//
// The data path is: an endpoint string, parsed by ParseEndpoint; a dialer for
// its transport; an optional riboCipher prefix and BTSP handshake; a Framer
// that cuts the byte stream into messages; and one Conn that matches responses
// to calls by id and delivers everything else the peer pushes on a channel.
//
// Wire-specific packages beneath ipc (btsp, holon, ...) are leaves: they know
// nothing of ipc and satisfy its interfaces structurally, so ipc can import them.
package ipc
