// Package history keeps every call primalscope makes in an embedded SQLite
// database (modernc.org/sqlite, pure Go), finds calls again by full-text
// search and filters, names them, diffs a replayed answer against the stored
// one and exports a call as a command line, a socat line or a JSON envelope.
//
// The database lives at DefaultPath ($XDG_STATE_HOME/primalscope/history.db,
// falling back to ~/.local/state/primalscope/history.db) unless the caller
// gives another path. The directory is created 0700 and the database file and
// its -wal and -shm companions are kept 0600 whatever the umask.
//
// Defaults (see Options):
//   - DefaultMaxRows = 100,000 calls and DefaultMaxBytes = 512 MiB of stored
//     call data; above either cap the oldest calls that have no saved name are
//     trimmed first (down to 90% of the cap), by the fold (Store.Fold), in
//     small transactions after the records it moved, never by a caller.
//   - DefaultEntryLimit = 4 MiB: a result, error data or params larger than
//     that is stored cut to that many bytes with its full size noted
//     (Entry.ResponseSize, Entry.Truncated, Entry.ParamsTruncated).
//
// Secrets: before anything is stored, every object member whose key looks
// secret (see IsSecretKey) in params, results, error data and error
// messages that echo JSON is replaced by "[redacted]", at any depth; every
// value so redacted from the params (MinValueLen bytes or longer) and every
// Options.Secrets value is scrubbed wherever else it appears in the entry.
// A value is cut to the entry limit first and only the kept part is
// redacted, in one pass. An Entry has no field for BTSP material.
//
// Recording: a command that makes calls writes each to the Journal beside
// the database (one record file a call, no lock, no database connection);
// Store.Fold moves the records into the database exactly once, and is run
// by whoever reads the history (the TUI records the same way). Several processes may write the same database at once (WAL, a busy
// timeout, retries on SQLITE_BUSY, BEGIN IMMEDIATE transactions).
package history
