// Retention: the counters and the trim that keeps the store within its caps.

package history

import (
	"context"
	"fmt"
)

// trimChunk is how many calls one trimming transaction removes at most, so
// that a trim never holds the write lock for long.
const trimChunk = 500

// Totals are the store's counters, as kept for retention.
type Totals struct {
	Rows  int64 // calls stored
	Bytes int64 // call data stored, as counted for MaxBytes
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
