// Saved calls: names given to calls, which are never trimmed.

package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

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
	return s.getOne(ctx, "FROM saved s JOIN calls c ON c.id = s.call_id WHERE s.name = ?",
		name, "saved call "+strconv.Quote(name))
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
