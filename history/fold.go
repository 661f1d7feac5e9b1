// Folding the journal into the database: each record once, damaged ones set
// aside.

package history

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// maxRecordFile returns the largest record file a store with entry limit
// limit can have written: params, result, error message and error data
// are each cut to the limit, and the other fields (names, ids) are small.
// A journal record is input like any other (another process, or a user
// with access to the state folder, can leave anything there): a larger
// one is set aside from its size, unread. The limit is never taken below
// the default, so lowering it in the config sets aside no record written
// before.
func maxRecordFile(limit int) int64 {
	return 4*int64(max(limit, DefaultEntryLimit)) + 1<<20
}

// staleTmp is the age after which a temporary record file (its writer died
// before the rename) is removed by a fold.
const staleTmp = time.Hour

// removeStaleTmp removes temporary record files whose writer died before
// renaming them.
func removeStaleTmp(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTmp {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// FoldOptions tune a fold.
type FoldOptions struct {
	// NoWait: when another process holds the write lock, stop with ErrBusy
	// instead of waiting for it as long as the store's BusyTimeout.
	NoWait bool
	// LockWait, with NoWait, is how long each transaction of the fold may
	// wait for the lock (0: not at all). It bounds the waiting, not the
	// work: a long journal is folded whole once the lock is had.
	LockWait time.Duration
	// Limit, when positive, is about the most records one fold takes (it
	// stops after the batch that reaches it), for a fold that should cost
	// little whatever the backlog; the rest wait for the next. Such a fold
	// lists at most maxFoldScan names of the journal (the oldest of them
	// first: the oldest of all while the backlog is no larger), leaves
	// stale temporary files to a full fold, and trims at most one step.
	Limit int
}

// maxFoldScan bounds the journal names a limited fold lists.
const maxFoldScan = 1024

// FoldStats says what a fold did.
type FoldStats struct {
	// Folded is how many records were taken from the journal (entries added
	// to the database, or found there already).
	Folded int
	// SetAside describes each damaged record found, renamed to *.bad so that
	// it is reported once and never read again.
	SetAside []string
}

// foldBatchBytes bounds the record bytes one fold transaction holds (and
// so the memory a fold holds: with 32 MiB a call folding the 10 MB
// answer's 4 MiB records peaked at 110 MB resident, 0.96x jq's whole run,
// in the same 0.66 s as with 8 MiB, at 60 MB).
const foldBatchBytes = 8 << 20

// foldBatchFiles bounds the records one fold transaction holds.
const foldBatchFiles = 256

// Fold moves the journal's records into the database, oldest first, in a
// few transactions, then trims the store if it is over a cap. Each record
// is inserted at most once (its id is unique in the database, so a fold
// killed between the commit and the removal of the files, or two processes
// folding at once, add nothing twice) and its file is removed after the
// commit. A damaged record is set aside (see FoldStats.SetAside), never an
// error. With o.NoWait, or when the store was opened with a negative
// BusyTimeout, a fold that finds another process holding the write lock
// for longer than o.LockWait stops with ErrBusy (the records stay for the
// next fold).
func (s *Store) Fold(ctx context.Context, o FoldOptions) (FoldStats, error) {
	var st FoldStats
	dir := JournalDir(s.path)
	scan := 0
	if o.Limit > 0 {
		scan = maxFoldScan
	}
	names, err := recordNamesMax(dir, scan)
	if err != nil || len(names) == 0 {
		return st, err
	}
	if o.Limit <= 0 {
		removeStaleTmp(dir)
	}
	w := s.writer()
	w.lockWait = o.LockWait
	if o.NoWait && !w.noWait {
		// busy_timeout is per connection: take one and make it not wait.
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return st, fmt.Errorf("fold history journal: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "PRAGMA busy_timeout = 0"); err != nil {
			conn.Close()
			return st, fmt.Errorf("fold history journal: %w", err)
		}
		defer func() {
			// Put the wait back before the connection returns to the pool;
			// if that fails, the connection is not reused.
			_, err := conn.ExecContext(context.WithoutCancel(ctx),
				"PRAGMA busy_timeout = "+strconv.FormatInt(s.opts.BusyTimeout.Milliseconds(), 10))
			if err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn })
			}
			conn.Close()
		}()
		w = writer{db: conn, noWait: true, lockWait: o.LockWait}
	}
	for len(names) > 0 && (o.Limit <= 0 || st.Folded < o.Limit) {
		if err := ctx.Err(); err != nil {
			return st, fmt.Errorf("fold history journal: %w", err)
		}
		var batch []row
		var ids, files []string
		size := 0
		maxFiles := foldBatchFiles
		if o.Limit > 0 {
			maxFiles = min(maxFiles, o.Limit-st.Folded)
		}
		for len(names) > 0 && len(files) < maxFiles && (size < foldBatchBytes || len(files) == 0) {
			name := names[0]
			names = names[1:]
			p := filepath.Join(dir, name)
			b, err := readRecordFile(p, maxRecordFile(s.opts.EntryLimit))
			if errors.Is(err, fs.ErrNotExist) {
				continue // folded by another process meanwhile
			}
			if err != nil {
				st.SetAside = append(st.SetAside, setAside(p, err))
				continue
			}
			id, e, err := decodeRecord(b)
			if err == nil && id+recordExt != name {
				err = fmt.Errorf("%w: named %s but holds %s", errBadRecord, name, id)
			}
			if err != nil {
				st.SetAside = append(st.SetAside, setAside(p, err))
				continue
			}
			// Redacted and cut again, as a call is when it is recorded: a
			// well-formed record proves only that it was framed right,
			// not that it went through Journal.Append (a planted one, or
			// one written before a secret key was known).
			batch = append(batch, prepareEntry(e, s.opts))
			ids = append(ids, id)
			files = append(files, p)
			size += len(b)
		}
		if len(batch) == 0 {
			continue
		}
		tot, err := s.insert(ctx, w, batch, ids)
		if err != nil {
			return st, fmt.Errorf("fold history journal: %w", err)
		}
		for _, f := range files {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return st, fmt.Errorf("fold history journal: %w", err)
			}
		}
		st.Folded += len(files)
		if s.over(tot) {
			for {
				_, more, err := s.trimStep(ctx, w)
				if err != nil {
					return st, err
				}
				// A limited fold trims one step (trimChunk calls, more than
				// it adds): a store at its cap is brought down over several
				// folds, not by the one call that crossed it.
				if !more || o.Limit > 0 {
					break
				}
			}
		}
	}
	if s.checkpointDue(1) {
		_ = s.Checkpoint(ctx) // retried after the next write
	}
	return st, nil
}

// readRecordFile reads the record file p whole. It opens it with statedir
// (a link is never followed, a named pipe never opened, another user's
// file refused), refuses one larger than limit from its size, unread, and
// reads it into a buffer of that size: readfile.All would grow its buffer
// from 512 bytes, which for a fold of 16 records of 4 MiB cost 93 MB more
// allocation (BenchmarkFoldLarge).
func readRecordFile(p string, limit int64) ([]byte, error) {
	f, info, err := statedir.Open(p, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, fmt.Errorf("%w: %d bytes, larger than %d (the entry limit and framing): not read", errBadRecord, info.Size(), limit)
	}
	b := make([]byte, info.Size())
	n, err := f.ReadAt(b, 0)
	if int64(n) == info.Size() {
		err = nil
	}
	return b[:n], err
}

// setAside renames a damaged record out of the way and describes it.
func setAside(p string, why error) string {
	msg := fmt.Sprintf("history journal record %s set aside: %v", filepath.Base(p), why)
	if err := os.Rename(p, p+setAsideExt); err != nil {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			msg += " (and it could not be moved: " + err.Error() + ")"
		}
	}
	return msg
}
