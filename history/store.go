package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"modernc.org/sqlite"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/internal/paths"
)

// Defaults for Options.
const (
	// DefaultMaxRows caps the number of stored calls.
	DefaultMaxRows = 100_000
	// DefaultMaxBytes caps the stored call data (params, results, errors and
	// names, as counted by the store; the file is somewhat larger because of
	// the indexes).
	DefaultMaxBytes = 512 << 20
	// DefaultEntryLimit is the size above which a result, error data or
	// params are stored cut.
	DefaultEntryLimit = 4 << 20
	// DefaultBusyTimeout is how long one statement waits for another
	// process's write lock before SQLITE_BUSY.
	DefaultBusyTimeout = 5 * time.Second
)

// trimChunk is how many calls one trimming transaction removes at most, so
// that a trim never holds the write lock for long.
const trimChunk = 500

// Errors callers tell apart.
var (
	// ErrNotFound: no call with that id, or no saved call with that name.
	ErrNotFound = errors.New("no such call in history")
	// ErrBadName: a saved-call name that is empty, starts with "@", parses as
	// an integer or holds spaces or control characters.
	ErrBadName = errors.New("bad saved-call name")
	// ErrNewerSchema: the database was written by a newer primalscope.
	ErrNewerSchema = errors.New("history database is from a newer primalscope")
	// ErrBusy: another process holds the write lock and the store was
	// opened not to wait (a negative Options.BusyTimeout).
	ErrBusy = errors.New("history is being written by another process")
)

// Options tune a Store. Zero values mean the defaults; a negative cap means
// no cap.
type Options struct {
	MaxRows    int64 // retention: most calls kept (DefaultMaxRows)
	MaxBytes   int64 // retention: most call data kept (DefaultMaxBytes)
	EntryLimit int   // per-entry size before cutting (DefaultEntryLimit)
	// BusyTimeout is how long to wait for another process's write lock
	// (DefaultBusyTimeout). Negative means never wait: a write that would
	// wait fails at once with ErrBusy (for a fold that is only worth doing
	// when it is free).
	BusyTimeout time.Duration
	// Secrets are literal values (a family seed, say) replaced by
	// "[redacted]" wherever they occur in an entry, whatever the key or
	// field. Values shorter than MinSecretLen are ignored.
	Secrets []string
}

// MinSecretLen is the shortest Options.Secrets value the store scrubs;
// shorter ones would blank out ordinary text.
const MinSecretLen = 8

func (o Options) withDefaults() Options {
	if o.MaxRows == 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.EntryLimit == 0 {
		o.EntryLimit = DefaultEntryLimit
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	return o
}

// Store is an open history database. It is safe for concurrent use.
type Store struct {
	db   *sql.DB
	path string
	opts Options
	// sinceCheckpoint estimates the bytes written to the WAL since the last
	// checkpoint this Store ran.
	sinceCheckpoint atomic.Int64
}

// checkpointEvery is how much WAL (estimated) is written between two
// checkpoints: about SQLite's default of 1000 pages.
const checkpointEvery = 4 << 20

// DefaultPath returns $XDG_STATE_HOME/primalscope/history.db, or
// ~/.local/state/primalscope/history.db when XDG_STATE_HOME is unset or not
// absolute (paths.HistoryFile).
func DefaultPath() (string, error) { return DefaultPathEnv(os.Getenv) }

// DefaultPathEnv is DefaultPath reading the environment through getenv.
func DefaultPathEnv(getenv func(string) string) (string, error) {
	if p := paths.HistoryFile(getenv); p != "" {
		return p, nil
	}
	return "", errors.New("history path: neither $XDG_STATE_HOME nor $HOME is set (to an absolute path)")
}

// Open opens (creating if needed) the history database at path ("" means
// DefaultPath) and brings its schema up to date. Missing directories are
// created 0700; the file and its -wal and -shm files are made 0600.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	if path == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	path = abs
	opts = opts.withDefaults()
	fresh, err := prepareFiles(path)
	if err != nil {
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(path, opts.BusyTimeout, fresh))
	if err != nil {
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	// A few connections: one for the writer, the rest for readers (WAL lets
	// readers run beside a writer).
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	s := &Store{db: db, path: path, opts: opts}
	// A connection's first statements switch a new database to WAL, which
	// another process doing the same can make fail with SQLITE_BUSY at once.
	if err := s.retry(ctx, func() error { return s.migrate(ctx) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	if err := s.chmodFiles(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open history %s: %w", path, err)
	}
	return s, nil
}

// dsn builds the modernc.org/sqlite URI for path.
//
// Durability: journal_mode=WAL with synchronous=NORMAL. A transaction is
// committed once its frames, commit marker included, are written to the -wal
// file with write(2); NORMAL skips the fsync at each commit and syncs only at
// checkpoints. write(2) puts the bytes in the kernel's page cache, which
// survives the death of the process: after a SIGKILL (or a panic, or an OOM
// kill) the next opener finds the frames in the -wal file and every committed
// transaction is there. Only an operating-system crash or a power loss can
// lose the last commits (never corrupt the database: WAL replays only
// checksummed, complete transactions). That is the right trade for a history:
// a commit costs no fsync, so recording stays cheap, and a killed primalscope
// loses nothing it reported as recorded.
func dsn(path string, busy time.Duration, fresh bool) string {
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	q := []string{
		"_pragma=busy_timeout(" + strconv.FormatInt(max(busy.Milliseconds(), 0), 10) + ")",
	}
	if fresh {
		// Freed pages go back to the file system after a trim. This takes
		// effect only on a new database (the driver applies it first), and
		// on an existing one it would take the write lock at every connect,
		// so it is asked for only when the file is empty.
		q = append(q, "_auto_vacuum=INCREMENTAL")
	}
	q = append(q,
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		// No checkpoint inside a commit: the Recorder checkpoints after it
		// has told the caller the entry is committed (see Store.checkpointDue).
		"_pragma=wal_autocheckpoint(0)",
		"_pragma=foreign_keys(ON)",
		"_txlock=immediate",
	)
	return "file:" + esc + "?" + strings.Join(q, "&")
}

// prepareFiles creates the directory (0700) and the database file (0600),
// and reports whether the file is empty (a database yet to be made).
func prepareFiles(path string) (fresh bool, err error) {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return false, err
		}
		if err := os.Chmod(dir, 0o700); err != nil { // umask-independent
			return false, err
		}
	} else if err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	st, serr := f.Stat()
	cerr := f.Close()
	if serr != nil {
		return false, serr
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return false, err
	}
	return st.Size() == 0, cerr
}

// chmodFiles makes the database and its WAL companions 0600.
func (s *Store) chmodFiles() error {
	for _, p := range []string{s.path, s.path + "-wal", s.path + "-shm"} {
		if err := os.Chmod(p, 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// Path returns the database file's absolute path.
func (s *Store) Path() string { return s.path }

// Options returns the options in force, defaults filled in.
func (s *Store) Options() Options { return s.opts }

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close history: %w", err)
	}
	return nil
}

// migrations are applied in order; migration i brings user_version to i+1.
var migrations = []string{
	`CREATE TABLE calls(
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		time_ns INTEGER NOT NULL,
		duration_ns INTEGER NOT NULL DEFAULT 0,
		target TEXT NOT NULL DEFAULT '',
		endpoint TEXT NOT NULL DEFAULT '',
		wire TEXT NOT NULL DEFAULT '',
		transport TEXT NOT NULL DEFAULT '',
		prefix INTEGER NOT NULL DEFAULT 0,
		method TEXT NOT NULL DEFAULT '',
		params TEXT,
		result TEXT,
		err_code INTEGER,
		err_message TEXT,
		err_data TEXT,
		session TEXT NOT NULL DEFAULT '',
		pool TEXT NOT NULL DEFAULT '',
		outcome TEXT NOT NULL,
		response_size INTEGER NOT NULL DEFAULT 0,
		truncated INTEGER NOT NULL DEFAULT 0,
		params_truncated INTEGER NOT NULL DEFAULT 0,
		source TEXT NOT NULL DEFAULT '',
		bytes INTEGER NOT NULL DEFAULT 0
	);
	CREATE INDEX calls_time ON calls(time_ns);
	CREATE INDEX calls_target ON calls(target);
	CREATE INDEX calls_method ON calls(method);
	CREATE TABLE saved(
		name TEXT PRIMARY KEY,
		call_id INTEGER NOT NULL REFERENCES calls(id),
		saved_ns INTEGER NOT NULL
	);
	CREATE INDEX saved_call ON saved(call_id);
	CREATE TABLE totals(
		k INTEGER PRIMARY KEY CHECK (k = 1),
		rows INTEGER NOT NULL,
		bytes INTEGER NOT NULL
	);
	INSERT INTO totals(k, rows, bytes) VALUES (1, 0, 0);
	CREATE VIRTUAL TABLE calls_fts USING fts5(
		target, method, params, error,
		content='', contentless_delete=1
	);`,
	// The journal record a call was folded from: a record is folded once.
	`ALTER TABLE calls ADD COLUMN record TEXT;
	CREATE UNIQUE INDEX calls_record ON calls(record) WHERE record IS NOT NULL;`,
}

// SchemaVersion is the user_version this package writes: the number of
// migrations.
const SchemaVersion = 2

func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	var v int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("%w (schema %d, this build knows %d)", ErrNewerSchema, v, len(migrations))
	}
	if v == len(migrations) {
		return nil
	}
	return s.retry(ctx, func() error {
		tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one migrator at a time
		if err != nil {
			return fmt.Errorf("begin migration: %w", err)
		}
		defer tx.Rollback()
		// Read again under the write lock: another process may have migrated.
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(migrations) {
			return fmt.Errorf("%w (schema %d, this build knows %d)", ErrNewerSchema, v, len(migrations))
		}
		for i := v; i < len(migrations); i++ {
			if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
				return fmt.Errorf("migrate to schema %d: %w", i+1, err)
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", i+1)); err != nil {
				return fmt.Errorf("set schema version %d: %w", i+1, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit migration: %w", err)
		}
		return nil
	})
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended
// code): another connection holds a lock we need.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == 5 || c == 6
	}
	return false
}

// retry runs f with withBusyRetry, or once when the store does not wait
// for locks; then SQLITE_BUSY becomes ErrBusy.
func (s *Store) retry(ctx context.Context, f func() error) error {
	return s.writer().retry(ctx, f)
}

// dbtx is what a write needs of a *sql.DB or of one *sql.Conn.
type dbtx interface {
	BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// writer is where writes go and whether they wait for another process's
// write lock: with noWait the connection does not wait (busy_timeout 0)
// and retry tries again, with short pauses, only for lockWait.
type writer struct {
	db       dbtx
	noWait   bool
	lockWait time.Duration
}

// writer returns the store's default writer.
func (s *Store) writer() writer { return writer{db: s.db, noWait: s.opts.BusyTimeout < 0} }

func (w writer) retry(ctx context.Context, f func() error) error {
	if !w.noWait {
		return withBusyRetry(ctx, f)
	}
	until := time.Now().Add(w.lockWait)
	pace := backoff.Backoff{Min: 2 * time.Millisecond, Max: 50 * time.Millisecond}
	for {
		err := f()
		if !isBusy(err) {
			return err
		}
		pause := pace.Next()
		if time.Now().Add(pause).After(until) {
			return fmt.Errorf("%w (%w)", ErrBusy, err)
		}
		if !backoff.Sleep(ctx, pause) {
			return fmt.Errorf("%w (%w)", ErrBusy, ctx.Err())
		}
	}
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// withBusyRetry runs f again, with a growing pause, while it fails with
// SQLITE_BUSY and ctx allows; each try has already waited the busy timeout.
func withBusyRetry(ctx context.Context, f func() error) error {
	pace := backoff.Backoff{Min: 5 * time.Millisecond, Max: 640 * time.Millisecond}
	for try := 0; ; try++ {
		err := f()
		if err == nil || !isBusy(err) || try >= 20 {
			return err
		}
		if !backoff.Sleep(ctx, pace.Next()) {
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		}
	}
}

// row is an Entry ready for the database: redacted, cut, counted.
type row struct {
	e       Entry
	errText string // for the full-text index
	bytes   int64
}

// Placeholders stored when a value cannot be checked for secrets.
const (
	unparsedParams = `"[not stored: params were not valid JSON]"`
	unparsedValue  = `"[not stored: not valid JSON]"`
)

// prepare redacts, cuts and counts e. It never fails: what cannot be checked
// for secrets is replaced by a placeholder.
func (s *Store) prepare(e Entry) row { return prepareEntry(e, s.opts) }

// prepareEntry makes e ready to store, in one pass over what is stored:
//
//  1. The params (small, typed by the user) are redacted whole: every value
//     under a secret-looking key becomes "[redacted]" and is remembered, as
//     are the known secrets (opts.Secrets, the family seed); then they are
//     cut to the entry limit.
//  2. The result and the error data are cut to the entry limit first
//     (without copying), then only the kept part is redacted: secret keys,
//     and every remembered value wherever it appears.
//  3. The error message, which peers often make by echoing the params, gets
//     the same treatment as text; so do the target, endpoint, method,
//     session and pool.
//
// A large answer is thus read once and copied at most once (only when a
// secret is found in it). The full-text index and exports are built from
// what prepareEntry returns, so they hold no secret either.
func prepareEntry(e Entry, opts Options) row {
	opts = opts.withDefaults()
	limit := opts.EntryLimit
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Outcome == "" {
		e.Outcome = OutcomeOK
		if e.Error != nil {
			e.Outcome = OutcomeError
		}
	}
	if e.ResponseSize == 0 {
		e.ResponseSize = int64(len(e.Result))
		if e.Error != nil {
			e.ResponseSize += int64(len(e.Error.Data))
		}
	}
	var vals []string
	for _, sec := range opts.Secrets {
		if len(sec) >= MinSecretLen {
			vals = append(vals, sec)
		}
	}
	var params []byte
	if len(e.Params) > 0 {
		if !json.Valid(e.Params) {
			params = []byte(unparsedParams)
		} else {
			params = redactScan(e.Params, nil, false, &vals)
		}
	}
	sc := newScrubber(vals)
	if len(params) > 0 {
		params = redactScan(params, sc.in(params), false, nil)
		e.Params, e.ParamsTruncated = cutView(params, limit)
	}
	var cutAny bool
	if len(e.Result) > 0 {
		var r []byte
		r, cutAny = cutView(e.Result, limit)
		e.Result = redactScan(r, sc.in(r), false, nil)
		e.Truncated = e.Truncated || cutAny
	}
	if e.Error != nil {
		er := *e.Error
		m, _ := cutView([]byte(er.Message), limit)
		er.Message = string(redactScan(m, sc.in(m), true, nil))
		if len(er.Data) > 0 {
			var d []byte
			d, cutAny = cutView(er.Data, limit)
			er.Data = redactScan(d, sc.in(d), false, nil)
			e.Truncated = e.Truncated || cutAny
		}
		e.Error = &er
	}
	for _, f := range []*string{&e.Target, &e.Endpoint, &e.Method, &e.Session, &e.Pool} {
		*f = sc.scrubText(*f)
	}
	return countRow(e)
}

// countRow fills in the full-text error text and the size counted for
// retention of an entry already prepared.
func countRow(e Entry) row {
	r := row{e: e}
	if e.Error != nil {
		r.errText = e.Error.Message
		if e.Error.Code != 0 {
			r.errText = strconv.FormatInt(e.Error.Code, 10) + " " + r.errText
		}
		if len(e.Error.Data) > 0 {
			r.errText += " " + string(e.Error.Data)
		}
	}
	r.bytes = 64 + int64(len(e.Target)+len(e.Endpoint)+len(e.Wire)+len(e.Transport)+len(e.Method)+
		len(e.Params)+len(e.Result)+len(e.Session)+len(e.Pool)+len(e.Source)) + int64(len(r.errText))
	return r
}

// Totals are the store's counters, as kept for retention.
type Totals struct {
	Rows  int64 // calls stored
	Bytes int64 // call data stored, as counted for MaxBytes
}

// Add stores entries in one transaction and returns their ids. It redacts
// and cuts them first (see the package doc). It retries while another
// process holds the write lock. It does not trim: the Recorder does, or call
// Trim.
func (s *Store) Add(ctx context.Context, entries ...Entry) ([]int64, error) {
	ids, _, err := s.add(ctx, entries)
	if err == nil && s.checkpointDue(1) {
		_ = s.Checkpoint(ctx) // a failed checkpoint is retried after the next write
	}
	return ids, err
}

// checkpointDue reports whether the WAL has grown by factor times
// checkpointEvery since the last checkpoint.
func (s *Store) checkpointDue(factor int64) bool {
	return s.sinceCheckpoint.Load() >= factor*checkpointEvery
}

// Checkpoint copies the WAL back into the database file (PRAGMA
// wal_checkpoint(PASSIVE): it never waits for readers or writers). Commits
// do not checkpoint by themselves; the Recorder calls this between writes.
func (s *Store) Checkpoint(ctx context.Context) error {
	s.sinceCheckpoint.Store(0)
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		return fmt.Errorf("checkpoint history: %w", err)
	}
	return nil
}

func (s *Store) add(ctx context.Context, entries []Entry) ([]int64, Totals, error) {
	rows := make([]row, len(entries))
	for i, e := range entries {
		if e.Outcome != "" && !e.Outcome.Valid() {
			return nil, Totals{}, fmt.Errorf("add to history: unknown outcome %q", e.Outcome)
		}
		rows[i] = s.prepare(e)
	}
	ids, tot, err := s.insertRows(ctx, s.writer(), rows, nil)
	if err != nil {
		return nil, Totals{}, fmt.Errorf("add to history: %w", err)
	}
	return ids, tot, nil
}

// insert adds rows folded from the journal records recs, skipping those
// already in the database.
func (s *Store) insert(ctx context.Context, w writer, rows []row, recs []string) (Totals, error) {
	_, tot, err := s.insertRows(ctx, w, rows, recs)
	return tot, err
}

// insertRows adds rows (with their journal record ids when recs is not
// nil) in one transaction and returns their ids (0 for a record already
// there) and the new totals.
func (s *Store) insertRows(ctx context.Context, w writer, rows []row, recs []string) ([]int64, Totals, error) {
	var ids []int64
	var tot Totals
	var written int64
	err := w.retry(ctx, func() error {
		ids, written = ids[:0], 0
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		var added, n int64
		for i, r := range rows {
			rec := ""
			if recs != nil {
				rec = recs[i]
			}
			id, err := insertRow(ctx, tx, r, rec)
			if err != nil {
				return err
			}
			ids = append(ids, id)
			if id != 0 {
				added += r.bytes
				n++
				written += 2*r.bytes + 1024 // the row, its index entries, the pages around them
			}
		}
		if err := tx.QueryRowContext(ctx,
			"UPDATE totals SET rows = rows + ?, bytes = bytes + ? WHERE k = 1 RETURNING rows, bytes",
			n, added).Scan(&tot.Rows, &tot.Bytes); err != nil {
			return fmt.Errorf("count: %w", err)
		}
		return tx.Commit()
	})
	if err != nil {
		return nil, Totals{}, err
	}
	s.sinceCheckpoint.Add(written)
	return ids, tot, nil
}

// insertRow adds one call and its full-text entry. A call from a journal
// record (rec not empty) that is already there is skipped: id 0.
func insertRow(ctx context.Context, tx *sql.Tx, r row, rec string) (int64, error) {
	e := r.e
	var code, msg, data any
	if e.Error != nil {
		code, msg, data = e.Error.Code, e.Error.Message, nullText(e.Error.Data)
	}
	var record any
	if rec != "" {
		record = rec
	}
	res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO calls(time_ns, duration_ns, target, endpoint, wire,
		transport, prefix, method, params, result, err_code, err_message, err_data, session, pool,
		outcome, response_size, truncated, params_truncated, source, bytes, record)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		e.Time.UnixNano(), int64(e.Duration), e.Target, e.Endpoint, e.Wire,
		e.Transport, e.Prefix, e.Method, nullText(e.Params), nullText(e.Result), code, msg, data,
		e.Session, e.Pool, string(e.Outcome), e.ResponseSize, e.Truncated, e.ParamsTruncated,
		string(e.Source), r.bytes, record)
	if err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return 0, nil // folded before
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	if _, err := tx.ExecContext(ctx,
		"INSERT INTO calls_fts(rowid, target, method, params, error) VALUES (?,?,?,?,?)",
		id, e.Target+" "+e.Endpoint, e.Method, ftsPrefix(string(e.Params)), ftsPrefix(r.errText)); err != nil {
		return 0, fmt.Errorf("index: %w", err)
	}
	return id, nil
}

// ftsIndexed is how much of the params and of the error text the
// full-text index holds: search finds words in their first 64 KiB.
// Tokenizing megabytes of params would make storing a call (a fold) cost
// more than storing its text.
const ftsIndexed = 64 << 10

// ftsPrefix returns the first ftsIndexed bytes of s, cut at a character
// boundary.
func ftsPrefix(s string) string {
	if len(s) <= ftsIndexed {
		return s
	}
	i := ftsIndexed
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

func nullText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

const columns = `c.id, c.time_ns, c.duration_ns, c.target, c.endpoint, c.wire, c.transport,
	c.prefix, c.method, c.params, %s, c.err_code, c.err_message, c.err_data, c.session, c.pool,
	c.outcome, c.response_size, c.truncated, c.params_truncated, c.source`

type scanner interface{ Scan(dest ...any) error }

func scanEntry(sc scanner) (Entry, error) {
	var (
		e                    Entry
		tns, dns             int64
		params, result       sql.NullString
		code                 sql.NullInt64
		msg, data            sql.NullString
		outcome, source      string
		prefix, trunc, ptrun bool
	)
	if err := sc.Scan(&e.ID, &tns, &dns, &e.Target, &e.Endpoint, &e.Wire, &e.Transport,
		&prefix, &e.Method, &params, &result, &code, &msg, &data, &e.Session, &e.Pool,
		&outcome, &e.ResponseSize, &trunc, &ptrun, &source); err != nil {
		return Entry{}, err
	}
	e.Time = time.Unix(0, tns)
	e.Duration = time.Duration(dns)
	e.Prefix, e.Truncated, e.ParamsTruncated = prefix, trunc, ptrun
	e.Outcome, e.Source = Outcome(outcome), Source(source)
	if params.Valid {
		e.Params = json.RawMessage(params.String)
	}
	if result.Valid {
		e.Result = json.RawMessage(result.String)
	}
	if code.Valid || msg.Valid {
		e.Error = &RPCError{Code: code.Int64, Message: msg.String}
		if data.Valid {
			e.Error.Data = json.RawMessage(data.String)
		}
	}
	return e, nil
}

// Get returns the call with that id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (Entry, error) {
	q := "SELECT " + fmt.Sprintf(columns, "c.result") + " FROM calls c WHERE c.id = ?"
	e, err := scanEntry(s.db.QueryRowContext(ctx, q, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("call %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read call %d: %w", id, err)
	}
	return e, nil
}

// Query selects calls. Zero fields do not filter.
type Query struct {
	// Text is searched (full-text, each word as a prefix, all words must
	// match) in the target and endpoint, method, and the first 64 KiB of
	// the params and of the error text (ftsIndexed).
	Text    string
	Target  string  // exact target name or endpoint
	Method  string  // exact method
	Outcome Outcome // exact outcome
	Since   time.Time
	// Limit is the most calls returned, newest first (default 50; negative
	// means no limit).
	Limit int
	// WithResults includes each call's result; without it Result is nil (the
	// rest of the entry is there), which keeps listings cheap.
	WithResults bool
}

// ftsQuery turns free text into an FTS5 expression: each word becomes a
// quoted prefix phrase, so punctuation ("storage.get", "-32601") is safe.
// Words with no letter or digit are dropped; "" means no text condition.
func ftsQuery(text string) string {
	var terms []string
	for _, w := range strings.Fields(text) {
		if strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			continue
		}
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"*`)
	}
	return strings.Join(terms, " AND ")
}

// Search returns the calls matching q, newest first.
func (s *Store) Search(ctx context.Context, q Query) ([]Entry, error) {
	res := "NULL"
	if q.WithResults {
		res = "c.result"
	}
	var (
		sb   strings.Builder
		args []any
	)
	sb.WriteString("SELECT " + fmt.Sprintf(columns, res))
	order := "c.id"
	if m := ftsQuery(q.Text); m != "" {
		// Walk the full-text matches newest first and stop at the limit.
		sb.WriteString(" FROM calls_fts CROSS JOIN calls c ON c.id = calls_fts.rowid WHERE calls_fts MATCH ?")
		args = append(args, m)
		order = "calls_fts.rowid"
	} else {
		sb.WriteString(" FROM calls c WHERE 1")
	}
	if q.Target != "" {
		sb.WriteString(" AND (c.target = ? OR c.endpoint = ?)")
		args = append(args, q.Target, q.Target)
	}
	if q.Method != "" {
		sb.WriteString(" AND c.method = ?")
		args = append(args, q.Method)
	}
	if q.Outcome != "" {
		sb.WriteString(" AND c.outcome = ?")
		args = append(args, string(q.Outcome))
	}
	if !q.Since.IsZero() {
		sb.WriteString(" AND c.time_ns >= ?")
		args = append(args, q.Since.UnixNano())
	}
	sb.WriteString(" ORDER BY " + order + " DESC")
	limit := q.Limit
	if limit == 0 {
		limit = 50
	}
	if limit > 0 {
		sb.WriteString(" LIMIT ?")
		args = append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, sb.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("search history: %w", err)
	}
	defer rows.Close()
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, fmt.Errorf("search history: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search history: %w", err)
	}
	return out, nil
}

// ValidateName checks a saved-call name: not empty, at most 128 bytes, no
// spaces or control characters, not starting with "@" (that is an abstract
// socket) and not parsing as an integer (that is a call id).
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty", ErrBadName)
	case len(name) > 128:
		return fmt.Errorf("%w: longer than 128 bytes", ErrBadName)
	case strings.HasPrefix(name, "@"):
		return fmt.Errorf("%w %q: a leading @ means an abstract socket", ErrBadName, name)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("%w %q: spaces and control characters are not allowed", ErrBadName, name)
	}
	if _, err := strconv.ParseInt(name, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%w %q: a number means a call id", ErrBadName, name)
	}
	return nil
}

// Save gives the call id a name (replacing what the name meant before).
// A named call is never trimmed.
func (s *Store) Save(ctx context.Context, id int64, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return s.retry(ctx, func() error {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("save %q: %w", name, err)
		}
		defer tx.Rollback()
		var one int
		err = tx.QueryRowContext(ctx, "SELECT 1 FROM calls WHERE id = ?", id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("save %q: call %d: %w", name, id, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("save %q: %w", name, err)
		}
		if _, err := tx.ExecContext(ctx,
			"INSERT OR REPLACE INTO saved(name, call_id, saved_ns) VALUES (?,?,?)",
			name, id, time.Now().UnixNano()); err != nil {
			return fmt.Errorf("save %q: %w", name, err)
		}
		return tx.Commit()
	})
}

// Lookup returns the call saved under name, or ErrNotFound.
func (s *Store) Lookup(ctx context.Context, name string) (Entry, error) {
	q := "SELECT " + fmt.Sprintf(columns, "c.result") + " FROM saved s JOIN calls c ON c.id = s.call_id WHERE s.name = ?"
	e, err := scanEntry(s.db.QueryRowContext(ctx, q, name))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("saved call %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read saved call %q: %w", name, err)
	}
	return e, nil
}

// Resolve returns the call ref names: an id when ref is an integer,
// otherwise a saved name.
func (s *Store) Resolve(ctx context.Context, ref string) (Entry, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
		return s.Get(ctx, id)
	}
	return s.Lookup(ctx, ref)
}

// SavedCall is a name given to a call.
type SavedCall struct {
	Name    string    `json:"name"`
	ID      int64     `json:"id"`
	SavedAt time.Time `json:"saved_at"`
}

// Saved lists the saved names, by name.
func (s *Store) Saved(ctx context.Context) ([]SavedCall, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, call_id, saved_ns FROM saved ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("list saved calls: %w", err)
	}
	defer rows.Close()
	var out []SavedCall
	for rows.Next() {
		var sc SavedCall
		var ns int64
		if err := rows.Scan(&sc.Name, &sc.ID, &ns); err != nil {
			return nil, fmt.Errorf("list saved calls: %w", err)
		}
		sc.SavedAt = time.Unix(0, ns)
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list saved calls: %w", err)
	}
	return out, nil
}

// Totals returns the retention counters.
func (s *Store) Totals(ctx context.Context) (Totals, error) {
	var t Totals
	if err := s.db.QueryRowContext(ctx, "SELECT rows, bytes FROM totals WHERE k = 1").Scan(&t.Rows, &t.Bytes); err != nil {
		return Totals{}, fmt.Errorf("read history totals: %w", err)
	}
	return t, nil
}

// over reports whether t exceeds a cap.
func (s *Store) over(t Totals) bool {
	return (s.opts.MaxRows > 0 && t.Rows > s.opts.MaxRows) || (s.opts.MaxBytes > 0 && t.Bytes > s.opts.MaxBytes)
}

// Trim removes the oldest unnamed calls until the store is within 90% of its
// caps, in transactions of at most a few hundred calls. It returns how many
// calls it removed.
func (s *Store) Trim(ctx context.Context) (int, error) {
	total := 0
	for {
		n, more, err := s.trimStep(ctx, s.writer())
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}

// trimStep removes at most trimChunk calls when the store is over a cap.
// more reports whether another step is needed.
func (s *Store) trimStep(ctx context.Context, w writer) (removed int, more bool, err error) {
	var t Totals
	if err := w.db.QueryRowContext(ctx, "SELECT rows, bytes FROM totals WHERE k = 1").Scan(&t.Rows, &t.Bytes); err != nil {
		return 0, false, fmt.Errorf("trim history: %w", err)
	}
	if !s.over(t) {
		return 0, false, nil
	}
	err = w.retry(ctx, func() error {
		removed, more = 0, false
		tx, err := w.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// Re-read under the write lock: another process may have trimmed.
		if err := tx.QueryRowContext(ctx, "SELECT rows, bytes FROM totals WHERE k = 1").Scan(&t.Rows, &t.Bytes); err != nil {
			return err
		}
		if !s.over(t) {
			return nil
		}
		wantRows, wantBytes := s.opts.MaxRows/10*9, s.opts.MaxBytes/10*9
		rows, err := tx.QueryContext(ctx, `SELECT id, bytes FROM calls
			WHERE id NOT IN (SELECT call_id FROM saved) ORDER BY id LIMIT ?`, trimChunk)
		if err != nil {
			return err
		}
		var ids []int64
		var freed int64
		for rows.Next() {
			if (s.opts.MaxRows <= 0 || t.Rows-int64(len(ids)) <= wantRows) &&
				(s.opts.MaxBytes <= 0 || t.Bytes-freed <= wantBytes) {
				break
			}
			var id, b int64
			if err := rows.Scan(&id, &b); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
			freed += b
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil // only named calls left
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, "DELETE FROM calls WHERE id = ?", id); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "DELETE FROM calls_fts WHERE rowid = ?", id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "UPDATE totals SET rows = rows - ?, bytes = bytes - ? WHERE k = 1",
			len(ids), freed); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		removed = len(ids)
		more = len(ids) == trimChunk
		return nil
	})
	if err != nil {
		return removed, false, fmt.Errorf("trim history: %w", err)
	}
	if !more && removed > 0 {
		// Hand freed pages back to the file system (auto_vacuum=INCREMENTAL).
		_, _ = w.db.ExecContext(ctx, "PRAGMA incremental_vacuum")
	}
	return removed, more, nil
}

// Check runs PRAGMA integrity_check and returns an error unless it says ok.
func (s *Store) Check(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("check history: %w", err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return fmt.Errorf("check history: %w", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("check history: %w", err)
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("check history: %s", strings.Join(msgs, "; "))
	}
	return nil
}
