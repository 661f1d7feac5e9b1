// Writing calls: the insert transaction, the full-text entry and checkpoints.

package history

import (
	"context"
	"database/sql"
	"fmt"
	"unicode/utf8"
)

// checkpointEvery is how much WAL (estimated) is written between two
// checkpoints: about SQLite's default of 1000 pages.
const checkpointEvery = 4 << 20

// Add stores entries in one transaction and returns their ids. It redacts
// and cuts them first (see the package doc). It retries while another
// process holds the write lock. It does not trim: Fold does, or call Trim.
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
// do not checkpoint by themselves; Add and Fold call this when due.
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
		outcome, response_size, truncated, params_truncated, source, bytes, record, family)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		e.Time.UnixNano(), int64(e.Duration), e.Target, e.Endpoint, e.Wire,
		e.Transport, e.Prefix, e.Method, nullText(e.Params), nullText(e.Result), code, msg, data,
		e.Session, e.Pool, string(e.Outcome), e.ResponseSize, e.Truncated, e.ParamsTruncated,
		string(e.Source), r.bytes, record, e.Family)
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
