// The journal's record files: writing them, their framing, and listing them.

package history

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/internal/statedir"
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

// Journal writes entries as record files for a database. It never opens the
// database. It is safe for concurrent use by goroutines and processes.
type Journal struct {
	dir  string
	opts Options
}

// OpenJournal opens (creating, 0700) the journal of the database at dbPath
// ("" means DefaultPath). opts are those the database would use: the entry
// limit and the known secrets apply when a record is written. A journal
// directory that is a symbolic link (out of the state folder), not a
// directory or another user's is refused (statedir.ErrUnsafe).
func OpenJournal(dbPath string, opts Options) (*Journal, error) {
	abs, err := absPath(dbPath)
	if err != nil {
		return nil, fmt.Errorf("open history journal: %w", err)
	}
	dir := JournalDir(abs)
	if err := makeDir(filepath.Dir(dir)); err != nil {
		return nil, fmt.Errorf("open history journal %s: %w", dir, err)
	}
	if err := statedir.Dir(dir); err != nil {
		return nil, fmt.Errorf("open history journal %s: %w", dir, err)
	}
	return &Journal{dir: dir, opts: opts.withDefaults()}, nil
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
	id := newRecordID()
	chunks := encodeRecord(id, r.e)
	if err := writeRecord(j.dir, id, chunks); err != nil {
		return "", fmt.Errorf("record call: %w", err)
	}
	return id, nil
}

// newRecordID names a new record: the time first, so that names sort
// oldest first, then what keeps names apart across processes.
func newRecordID() string {
	return fmt.Sprintf("%020d-%d-%08x", time.Now().UnixNano(), os.Getpid(), rand.Uint32())
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
		if info, err := os.Lstat(filepath.Join(j.dir, name)); err == nil {
			size += info.Size()
		}
	}
	return len(names), size, err
}

// BacklogAtLeast reports whether n records, or records of size bytes in
// all, wait to be folded. It stops counting as soon as either is reached:
// it lists the directory in small chunks and looks at the size of at most
// n records, so its cost does not grow with the backlog (Backlog's does).
func (j *Journal) BacklogAtLeast(n int, size int64) (bool, error) {
	d, err := os.Open(j.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read history journal: %w", err)
	}
	defer d.Close()
	count, total := 0, int64(0)
	for {
		ents, err := d.ReadDir(64)
		for _, e := range ents {
			if !isRecordName(e) {
				continue
			}
			count++
			if info, err := e.Info(); err == nil {
				total += info.Size()
			}
			if count >= n || total >= size {
				return true, nil
			}
		}
		if err != nil { // io.EOF at the end
			return false, nil
		}
	}
}

// isRecordName reports a journal record's name, whatever the entry is: a
// link, a named pipe or a directory under a record's name is listed too,
// for the fold to set aside and report once (never skipped for ever).
func isRecordName(e fs.DirEntry) bool {
	n := e.Name()
	return strings.HasSuffix(n, recordExt) && !strings.HasPrefix(n, ".")
}

func writeRecord(dir, id string, chunks [][]byte) error {
	f, tmp, err := createRecordFile(dir, id)
	if err != nil {
		return err
	}
	return finishRecord(f, tmp, dir, id, chunks)
}

// createRecordFile creates the temporary file of record id, mode 0600.
func createRecordFile(dir, id string) (*os.File, string, error) {
	tmp := filepath.Join(dir, tmpPrefix+id)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return f, tmp, err
}

// finishRecord writes the record's framing and chunks to f, the new and
// empty temporary file tmp, closes it and renames it into place as record
// id; on failure it removes tmp.
func finishRecord(f *os.File, tmp, dir, id string, chunks [][]byte) error {
	var size int
	for _, c := range chunks {
		size += len(c)
	}
	crc := recordCRC(chunks, size)
	hdr := make([]byte, recordHeader)
	copy(hdr, recordMagic)
	binary.LittleEndian.PutUint32(hdr[4:], crc)
	binary.LittleEndian.PutUint64(hdr[8:], uint64(size))
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
	// Fields added after version 1 of the framing follow, in order; a
	// record that ends before them (written by an older primalscope) reads
	// them as empty.
	w.str(e.Family)
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

func (d *decoder) int(what string) int64   { return varint(d, binary.Varint, what) }
func (d *decoder) uint(what string) uint64 { return varint(d, binary.Uvarint, what) }

// varint takes one varint off d with read (binary.Varint or Uvarint).
func varint[T int64 | uint64](d *decoder, read func([]byte) (T, int), what string) T {
	v, n := read(d.b)
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
		e.Family = d.str("family")
	}
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
// start with the time they were written). Every name of a record is
// listed, whatever it names: a link, a named pipe or a directory in its
// place is set aside by the fold (and so reported once), never skipped for
// ever. A dir that is a link, not a directory or another user's is
// refused (statedir.ErrUnsafe): nothing is read through it.
func recordNames(dir string) ([]string, error) { return recordNamesMax(dir, 0) }

// recordNamesMax lists at most max record names of dir (all when max <= 0),
// oldest first: the oldest of all when the directory holds no more than
// max, else the oldest of the first max the directory lists.
func recordNamesMax(dir string, max int) ([]string, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err := statedir.Dir(dir); err != nil {
		return nil, fmt.Errorf("read history journal: %w", err)
	}
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read history journal: %w", err)
	}
	defer d.Close()
	var names []string
	for max <= 0 || len(names) < max {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			if isRecordName(e) && (max <= 0 || len(names) < max) {
				names = append(names, e.Name())
			}
		}
		if errors.Is(err, io.EOF) || err == nil && len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read history journal: %w", err)
		}
	}
	slices.Sort(names)
	return names, nil
}
