// Package capability turns what a primal says about itself into typed data:
// the result of capabilities.list (the Capability Wire Standard envelope and the
// legacy formats A–E), signed capability announcements, identity.get / identity
// answers and health.liveness / health.readiness answers.
//
// The package is pure: it does no I/O and keeps no state. Every parser treats its
// input as hostile: it never panics, bounds what it keeps (see MaxMethods and
// MaxNameLen) and reports anything odd but survivable in a Warnings field rather
// than failing. Strings are kept as the peer sent them (after truncation); callers
// that print them to a terminal must escape control sequences themselves.
//
// All exported types carry stable snake_case JSON tags so that they can be
// printed directly as machine output.
package capability
