// The database schema: the migrations and how an older database is brought
// up to date.

package history

import (
	"context"
	"fmt"
)

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
	// The family id a call was made with, to reach its target again.
	`ALTER TABLE calls ADD COLUMN family TEXT NOT NULL DEFAULT '';`,
}

// SchemaVersion is the user_version this package writes: the number of
// migrations.
const SchemaVersion = 3

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
