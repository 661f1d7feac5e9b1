// Opening and closing the store: its options, errors, files and connection
// settings, and the integrity check.

package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/statedir"
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
	path, err := absPath(path)
	if err != nil {
		return nil, fmt.Errorf("open history: %w", err)
	}
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
		// No checkpoint inside a commit: Add and Fold checkpoint after the
		// commit, when the WAL has grown enough (see Store.checkpointDue).
		"_pragma=wal_autocheckpoint(0)",
		"_pragma=foreign_keys(ON)",
		"_txlock=immediate",
	)
	return "file:" + esc + "?" + strings.Join(q, "&")
}

// absPath returns the database path a caller gave: DefaultPath when it is
// "", otherwise path made absolute.
func absPath(path string) (string, error) {
	if path == "" {
		return DefaultPath()
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return abs, nil
}

// makeDir creates dir and missing parents 0700 whatever the umask.
func makeDir(dir string) error {
	if st, err := os.Stat(dir); err == nil {
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	if err := makeDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// prepareFiles creates the directory (0700) and the database file (0600),
// and reports whether the file is empty (a database yet to be made). The
// database and its companions (-wal, -shm, -journal) must not be links
// (out of the state folder), other kinds of file or another user's: that
// is an error matching statedir.ErrUnsafe, and nothing is opened.
func prepareFiles(path string) (fresh bool, err error) {
	if err := makeDir(filepath.Dir(path)); err != nil {
		return false, err
	}
	for _, p := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if err := statedir.CheckFile(p); err != nil {
			return false, err
		}
	}
	f, st, err := statedir.Open(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	merr := f.Chmod(0o600)
	cerr := f.Close()
	if merr != nil {
		return false, merr
	}
	return st.Size() == 0, cerr
}

// StateWarnings returns what is wrong with the folder holding the database
// at dbPath ("" means DefaultPath) that does not stop its use: it is
// group- or world-writable, or not the user's (see statedir.Check). A
// command says them once, when it first opens its history.
func StateWarnings(dbPath string) []string {
	abs, err := absPath(dbPath)
	if err != nil {
		return nil
	}
	return statedir.Check(filepath.Dir(abs))
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
