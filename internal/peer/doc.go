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
//
// # Neural API shapes
//
// The simulated Neural API (Neural) answers as ECOSYSTEM-FACTS.md says
// biomeOS does where it speaks; where it is silent the shapes below are
// chosen to be biomeOS-like (marked "chosen"). Direction everywhere: "from"
// is the consumer, caller or dependent; "to" the provider, callee or
// dependency.
//
// lifecycle.status: {primals:[{name, state, details:{pid, socket_path? |
// endpoint?}}], count, healthy}; state is "running" or "unhealthy" (a stale
// primal), healthy counts "running".
//
// topology.primals: [{name, state, details:{pid}, capabilities, depends_on}].
//
// lifecycle.get {name}: {name, pid, state, socket_path | endpoint,
// depends_on:[names], capabilities:[...], metrics}; metrics (chosen):
//
//	{"collected_at":"RFC 3339","window_s":60,"calls":N,"errors":N,
//	 "outbound":[{"callee":"beardog"|null,"capability":"crypto.sign_ed25519",
//	   "calls":N,"errors":N,             // cumulative since the Neural API started
//	   "calls_per_s":0.6,"error_rate":0.1, // over window_s; error_rate 0..1
//	   "latency_ms":{"p50":0.4,"p95":1.9,"max":3.2}|null, // last ≤256 calls in the window
//	   "last_call":"RFC 3339","last_error":"-32602 Invalid params: …"?}],
//	 "inbound":[{"caller":"rhizocrypt"|null, …the same fields…}]}
//
// outbound are the primal's own calls through capability.call, by callee
// and capability (callee null: nobody provides it, a gap); inbound the
// calls routed to it, by caller (null when the caller gave no name); calls
// and errors at the top are the outbound totals. calls_per_s is over the
// part of the window the route has been seen in (at least 1 s);
// latency_ms counts only calls that reached a provider (null for a gap, or
// no call in the window); last_error is "<code> <message>" for an error
// object.
//
// capability.call {capability, operation, args, caller?}: calls
// capability+"."+operation (capability alone when operation is empty) on
// the first provider whose capabilities hold the method or its domain, and
// answers the provider's result unchanged. caller (chosen) names the
// calling primal for the metrics. Errors (chosen): -32001 "No provider for
// capability: X"; -32000 "Provider P failed: …" with data {provider,
// reason:"timeout"|"unreachable"}; or the provider's own error. Every call
// is counted.
//
// capability.discover {capability} (chosen): {capability, providers:[{name,
// state, socket_path | endpoint}]}.
//
// topology.get (chosen): {family_id, timestamp, nodes:[{id, name, state,
// capabilities, socket_path? | endpoint?}], edges:[{from, to,
// kind:"depends_on"} | {from, to, kind:"route", capability, calls, errors}]}.
//
// graph.list (chosen): {graphs:[{id, name, every_s, status:"pending" |
// "running" | "completed" | "failed", runs, nodes:[{id, primal, depends_on,
// status:"pending" | "running" | "completed" | "failed" | "skipped", error?,
// duration_ms?}], last_run:{run_id, status, started_at, finished_at,
// failed_nodes} | null, history:[last 10 runs, oldest first]}]}.
//
// Events, through Neural.Publish (the demo streams them on the biomeOS
// API's SSE stream, each JSON object with its "type"): graph_started
// {graph_id, run_id, name, nodes, timestamp}; node_started {graph_id,
// run_id, node, primal, timestamp} (chosen); node_completed {graph_id,
// run_id, node, primal, duration_ms, timestamp}; node_failed {graph_id,
// run_id, node, primal, error, duration_ms, timestamp} (skipped nodes too,
// error "skipped: depends on failed node X"); graph_completed {graph_id,
// run_id, status, failed_nodes, duration_ms, timestamp} (chosen);
// topology_changed {reason:"graph_completed" | "health_changed", primals,
// edges, timestamp}; health_changed {primal, from, to, timestamp};
// primal_discovered {primal, socket_path? | endpoint?, timestamp}; and,
// with Neural.CallEvents (the test Composition sets it, the demo does not,
// to keep its stream readable), capability_called {caller | null, callee |
// null, capability, ok, error?, duration_ms, timestamp} for every routed
// call (chosen).
package peer
