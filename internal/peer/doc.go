// Package peer runs the simulated peers of the primal ecosystem, in process:
// JSON-RPC primals that answer as the Capability Wire Standard says (every
// capability format, signed announcements), a lean NDJSON daemon, a Neural
// API, family-scoped sockets behind a BTSP handshake, the riboCipher prefix
// policies, a holon WebSocket server, the biomeOS API's SSE stream and a
// stdio Bus daemon with real worker processes.
//
// These are the simulated peers `primalscope demo` serves (internal/demo);
// the binary links this package for that, and WorkerMain lets the binary
// act as a stdio Bus worker. The test fakes, including the hostile and
// crashing peers, live in ipc/ipctest, which builds on this package.
// Behavior lets a server misbehave the way some real deployments do (a
// stale primal that never answers, a slow one), which the demo shows too.
package peer
