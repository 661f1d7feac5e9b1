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
//     trimmed first (down to 90% of the cap), by the Recorder's writer
//     goroutine, in small transactions between writes, never by a caller.
//   - DefaultEntryLimit = 4 MiB: a result, error data or params larger than
//     that is stored cut to that many bytes with its full size noted
//     (Entry.ResponseSize, Entry.Truncated, Entry.ParamsTruncated).
//
// Secrets: before anything is stored, every object member whose key looks
// secret (see IsSecretKey) in params, results and error data is replaced by
// "[redacted]", at any depth. An Entry has no field for BTSP material.
//
// Writes go through a Recorder, which owns one writer goroutine and a bounded
// queue so that recording never slows a call: Record returns at once, and
// Pending.Wait lets a caller wait, bounded, until the entry is committed.
// Several processes may write the same database at once (WAL, a busy timeout,
// retries on SQLITE_BUSY, BEGIN IMMEDIATE transactions).
package history
