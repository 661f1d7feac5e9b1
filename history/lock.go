// Waiting for another process's write lock: SQLITE_BUSY, the writer and its
// retries.

package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"modernc.org/sqlite"

	"github.com/ecoPrimals/primalscope/internal/backoff"
)

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
