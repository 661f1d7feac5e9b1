package history

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The journal is how a call is recorded without touching the database: one
// small file a call, in a directory beside the database, folded into the
// database later by whoever reads the history (see Store.Fold).
//
// Durability: a record is written with write(2) to a temporary name and
// renamed into place; there is no fsync. The bytes are then in the kernel's
// page cache, which outlives the process: after a SIGKILL, a panic or an OOM
// kill the record is there for the next fold. Only an operating-system crash
// or a power loss can lose the last records, as with the database's own
// commits (synchronous=NORMAL). A record is never half there: until the
// rename it has a temporary name, which folding ignores (and removes once
// it is an hour old).
//
// Writers share nothing: no lock, no database connection, so any number of
// processes record at once, and one holding the database's write lock for
// ever delays none of them.

// JournalDir returns the journal directory of the database at dbPath.
func JournalDir(dbPath string) string { return dbPath + ".journal.d" }

// recordExt names a complete record file; setAsideExt a damaged one that a
// fold has set aside.
const (
	recordExt   = ".rec"
	setAsideExt = ".bad"
	tmpPrefix   = ".tmp-"
)

// recordMagic starts every record file (version 1 of the framing).
var recordMagic = []byte("PSJ1")

// recordHeader is the magic, the CRC-32C of the body and the body's length.
const recordHeader = 4 + 4 + 8

// maxRecordFile bounds the record files a fold reads.
const maxRecordFile = 1 << 30

// staleTmp is the age after which a temporary record file (its writer died
// before the rename) is removed by a fold.
const staleTmp = time.Hour

// Journal writes entries as record files for a database. It never opens the
// database. It is safe for concurrent use by goroutines and processes.
type Journal struct {
	dir  string
	opts Options
}

// OpenJournal opens (creating, 0700) the journal of the database at dbPath
// ("" means DefaultPath). opts are those the database would use: the entry
// limit and the known secrets apply when a record is written.
func OpenJournal(dbPath string, opts Options) (*Journal, error) {
	if dbPath == "" {
		p, err := DefaultPath()
		if err != nil {
			return nil, err
		}
		dbPath = p
	}
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		return nil, fmt.Errorf("open history journal for %s: %w", dbPath, err)
	}
	dir := JournalDir(abs)
	if err := makeDir(dir); err != nil {
		return nil, fmt.Errorf("open history journal %s: %w", dir, err)
	}
	return &Journal{dir: dir, opts: opts.withDefaults()}, nil
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

// Dir returns the journal directory.
func (j *Journal) Dir() string { return j.dir }

// Append redacts and cuts e as the store would (see the package doc) and
// writes it as one record file, mode 0600. It returns the record's id, by
// which the folded entry can be found (Store.GetRecord). When Append has
// returned nil, the entry reaches the database at the next fold even if
// this process is killed at once.
func (j *Journal) Append(e Entry) (string, error) {
	if e.Outcome != "" && !e.Outcome.Valid() {
		return "", fmt.Errorf("record call: unknown outcome %q", e.Outcome)
	}
	r := prepareEntry(e, j.opts)
	id := fmt.Sprintf("%020d-%d-%08x", time.Now().UnixNano(), os.Getpid(), rand.Uint32())
	chunks := encodeRecord(id, r.e)
	if err := writeRecord(j.dir, id, chunks); err != nil {
		return "", fmt.Errorf("record call: %w", err)
	}
	return id, nil
}

// Pending reports how many records wait to be folded. It reads only the
// directory.
func (j *Journal) Pending() (int, error) {
	names, err := recordNames(j.dir)
	return len(names), err
}

// Backlog reports how many records wait to be folded and their size.
func (j *Journal) Backlog() (n int, size int64, err error) {
	names, err := recordNames(j.dir)
	for _, name := range names {
		if info, err := os.Stat(filepath.Join(j.dir, name)); err == nil {
			size += info.Size()
		}
	}
	return len(names), size, err
}

func writeRecord(dir, id string, chunks [][]byte) error {
	var size int
	for _, c := range chunks {
		size += len(c)
	}
	crc := recordCRC(chunks, size)
	hdr := make([]byte, recordHeader)
	copy(hdr, recordMagic)
	binary.LittleEndian.PutUint32(hdr[4:], crc)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(size))
	tmp := filepath.Join(dir, tmpPrefix+id)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	werr := func() error {
		if _, err := f.Write(hdr); err != nil {
			return err
		}
		for _, c := range chunks {
			if _, err := f.Write(c); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, id+recordExt))
	}
	if werr != nil {
		os.Remove(tmp)
	}
	return werr
}

// encoder builds a record body as chunks: small fields are gathered in one
// buffer, large values (params, result, error data) are chunks of their own
// so that they are written without being copied.
type encoder struct {
	chunks [][]byte
	buf    []byte
}

func (w *encoder) int(v int64)    { w.buf = binary.AppendVarint(w.buf, v) }
func (w *encoder) uint(v uint64)  { w.buf = binary.AppendUvarint(w.buf, v) }
func (w *encoder) str(s string)   { w.uint(uint64(len(s))); w.buf = append(w.buf, s...) }
func (w *encoder) flag(b bool)    { w.buf = append(w.buf, boolByte(b)) }
func (w *encoder) done() [][]byte { return append(w.chunks, w.buf) }

// blob writes b, telling nil (0) from empty (1) by its length plus one.
func (w *encoder) blob(b []byte) {
	if b == nil {
		w.uint(0)
		return
	}
	w.uint(uint64(len(b)) + 1)
	if len(b) < 4096 {
		w.buf = append(w.buf, b...)
		return
	}
	w.chunks = append(w.chunks, w.buf, b)
	w.buf = nil
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

func encodeRecord(id string, e Entry) [][]byte {
	w := &encoder{}
	w.str(id)
	w.int(e.Time.UnixNano())
	w.int(int64(e.Duration))
	w.str(e.Target)
	w.str(e.Endpoint)
	w.str(e.Wire)
	w.str(e.Transport)
	w.flag(e.Prefix)
	w.str(e.Method)
	w.blob(e.Params)
	w.blob(e.Result)
	w.flag(e.Error != nil)
	if e.Error != nil {
		w.int(e.Error.Code)
		w.str(e.Error.Message)
		w.blob(e.Error.Data)
	}
	w.str(e.Session)
	w.str(e.Pool)
	w.str(string(e.Outcome))
	w.int(e.ResponseSize)
	w.flag(e.Truncated)
	w.flag(e.ParamsTruncated)
	w.str(string(e.Source))
	return w.done()
}

// errBadRecord: a record file that is not a complete record.
var errBadRecord = errors.New("damaged journal record")

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: bad %s", errBadRecord, what)
	}
}

func (d *decoder) int(what string) int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n uint64, what string) []byte {
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) str(what string) string { return string(d.bytes(d.uint(what), what)) }

func (d *decoder) flag(what string) bool {
	b := d.bytes(1, what)
	if len(b) != 1 || b[0] > 1 {
		d.fail(what)
		return false
	}
	return b[0] == 1
}

func (d *decoder) blob(what string) []byte {
	n := d.uint(what)
	if n == 0 {
		return nil
	}
	return d.bytes(n-1, what)
}

// decodeRecord checks a record file's framing and checksum and returns its
// id and entry.
func decodeRecord(file []byte) (string, Entry, error) {
	if len(file) < recordHeader || !bytes.Equal(file[:4], recordMagic) {
		return "", Entry{}, fmt.Errorf("%w: no record header", errBadRecord)
	}
	body := file[recordHeader:]
	if n := binary.LittleEndian.Uint64(file[8:]); n != uint64(len(body)) {
		return "", Entry{}, fmt.Errorf("%w: %d bytes of a %d-byte record", errBadRecord, len(body), n)
	}
	if recordCRC([][]byte{body}, len(body)) != binary.LittleEndian.Uint32(file[4:]) {
		return "", Entry{}, fmt.Errorf("%w: checksum mismatch", errBadRecord)
	}
	d := &decoder{b: body}
	var e Entry
	id := d.str("id")
	e.Time = time.Unix(0, d.int("time"))
	e.Duration = time.Duration(d.int("duration"))
	e.Target = d.str("target")
	e.Endpoint = d.str("endpoint")
	e.Wire = d.str("wire")
	e.Transport = d.str("transport")
	e.Prefix = d.flag("prefix")
	e.Method = d.str("method")
	e.Params = d.blob("params")
	e.Result = d.blob("result")
	if d.flag("error flag") {
		e.Error = &RPCError{Code: d.int("error code"), Message: d.str("error message"), Data: d.blob("error data")}
	}
	e.Session = d.str("session")
	e.Pool = d.str("pool")
	e.Outcome = Outcome(d.str("outcome"))
	e.ResponseSize = d.int("response size")
	e.Truncated = d.flag("truncated")
	e.ParamsTruncated = d.flag("params truncated")
	e.Source = Source(d.str("source"))
	if d.err == nil && len(d.b) != 0 {
		d.fail("length (data after the record)")
	}
	if d.err == nil && (!e.Outcome.Valid() || !validRecordID(id)) {
		d.fail("outcome or id")
	}
	if d.err != nil {
		return "", Entry{}, d.err
	}
	return id, e, nil
}

func validRecordID(id string) bool {
	return id != "" && len(id) < 128 && !strings.ContainsAny(id, "/\\\x00") && !strings.HasPrefix(id, ".")
}

// recordNames lists the record files waiting in dir, oldest first (names
// start with the time they were written).
func recordNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history journal: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, recordExt) && !strings.HasPrefix(n, ".") && e.Type().IsRegular() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

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
	// little; the rest wait for the next.
	Limit int
}

// FoldStats says what a fold did.
type FoldStats struct {
	// Folded is how many records were taken from the journal (entries added
	// to the database, or found there already).
	Folded int
	// SetAside describes each damaged record found, renamed to *.bad so that
	// it is reported once and never read again.
	SetAside []string
}

// foldBatchBytes bounds the record bytes one fold transaction holds.
const foldBatchBytes = 32 << 20

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
	names, err := recordNames(dir)
	if err != nil || len(names) == 0 {
		return st, err
	}
	removeStaleTmp(dir)
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
			b, err := readRecordFile(p)
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
			batch = append(batch, countRow(e))
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
				if !more {
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

func readRecordFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > maxRecordFile {
		return nil, fmt.Errorf("%w: larger than %d bytes", errBadRecord, maxRecordFile)
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

// GetRecord returns the call folded from the journal record id, or
// ErrNotFound (not folded yet, or trimmed since).
func (s *Store) GetRecord(ctx context.Context, id string) (Entry, error) {
	q := "SELECT " + fmt.Sprintf(columns, "c.result") + " FROM calls c WHERE c.record = ?"
	e, err := scanEntry(s.db.QueryRowContext(ctx, q, id))
	if err != nil {
		if isNoRows(err) {
			return Entry{}, fmt.Errorf("record %s: %w", strconv.Quote(id), ErrNotFound)
		}
		return Entry{}, fmt.Errorf("read record %s: %w", strconv.Quote(id), err)
	}
	return e, nil
}
