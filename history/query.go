// Reading calls back: one by id, and search by text and filters.

package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
)

const columns = `c.id, c.time_ns, c.duration_ns, c.target, c.endpoint, c.wire, c.transport,
	c.prefix, c.method, c.params, %s, c.err_code, c.err_message, c.err_data, c.session, c.pool,
	c.outcome, c.response_size, c.truncated, c.params_truncated, c.source, c.family`

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
		&outcome, &e.ResponseSize, &trunc, &ptrun, &source, &e.Family); err != nil {
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

// getOne reads, result included, the one call that from (the FROM and
// WHERE clauses, with one placeholder) selects with arg, or ErrNotFound;
// what names the call in errors.
func (s *Store) getOne(ctx context.Context, from string, arg any, what string) (Entry, error) {
	q := "SELECT " + fmt.Sprintf(columns, "c.result") + " " + from
	e, err := scanEntry(s.db.QueryRowContext(ctx, q, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("read %s: %w", what, err)
	}
	return e, nil
}

// Get returns the call with that id, or ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (Entry, error) {
	return s.getOne(ctx, "FROM calls c WHERE c.id = ?", id, "call "+strconv.FormatInt(id, 10))
}

// GetRecord returns the call folded from the journal record id, or
// ErrNotFound (not folded yet, or trimmed since).
func (s *Store) GetRecord(ctx context.Context, id string) (Entry, error) {
	return s.getOne(ctx, "FROM calls c WHERE c.record = ?", id, "record "+strconv.Quote(id))
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

// Endpoints lists the distinct endpoints calls were made at since since
// (zero: ever), the most recently used first, at most limit of them: where
// to look for the calls one target got under other names (a capability
// symlink, an alias). Past limit, the ones used longest ago are left out.
func (s *Store) Endpoints(ctx context.Context, since time.Time, limit int) ([]string, error) {
	var from int64 // zero: every call
	if !since.IsZero() {
		from = since.UnixNano()
	}
	rows, err := s.db.QueryContext(ctx, "SELECT endpoint FROM calls WHERE endpoint != '' AND time_ns >= ? GROUP BY endpoint ORDER BY max(time_ns) DESC LIMIT ?", from, limit)
	if err != nil {
		return nil, fmt.Errorf("history endpoints: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ep string
		if err := rows.Scan(&ep); err != nil {
			return nil, fmt.Errorf("history endpoints: %w", err)
		}
		out = append(out, ep)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history endpoints: %w", err)
	}
	return out, nil
}
