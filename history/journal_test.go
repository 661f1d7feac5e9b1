package history

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func journalFiles(t *testing.T, dir, ext string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestJournalAppendFold(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "state", "history.db")
	j := openJournal(t, path, Options{})
	if st, err := os.Stat(j.Dir()); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("journal dir: %v %v", st, err)
	}
	var ids []string
	for i := 0; i < 3; i++ {
		e := sample(i)
		if i == 1 {
			e.Error = &RPCError{Code: -32602, Message: "bad", Data: json.RawMessage(`{"n":1}`)}
			e.Result, e.Outcome = nil, OutcomeError
		}
		if i == 2 {
			e.Result = nil
			e.Params = nil
		}
		id, err := j.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	files := journalFiles(t, j.Dir(), recordExt)
	if len(files) != 3 {
		t.Fatalf("%d record files", len(files))
	}
	for _, f := range files {
		if st, _ := os.Stat(f); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v", f, st.Mode())
		}
	}
	if n, _ := j.Pending(); n != 3 {
		t.Errorf("Pending = %d", n)
	}
	if _, err := j.Append(Entry{Outcome: "weird"}); err == nil {
		t.Error("an unknown outcome was journalled")
	}

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Fold(ctx, FoldOptions{})
	if err != nil || st.Folded != 3 || len(st.SetAside) != 0 {
		t.Fatalf("Fold = %+v, %v", st, err)
	}
	if left := journalFiles(t, j.Dir(), ""); len(left) != 0 {
		t.Errorf("left in the journal: %v", left)
	}
	for i, id := range ids {
		got, err := s.GetRecord(ctx, id)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		want := prepareEntry(sample(i), Options{}).e
		if got.Method != want.Method || !got.Time.Equal(want.Time) || got.Duration != want.Duration || got.Target != want.Target {
			t.Errorf("record %d: %+v", i, got)
		}
		switch i {
		case 0:
			if string(got.Params) != string(want.Params) || string(got.Result) != string(want.Result) || got.Error != nil {
				t.Errorf("record 0: %s %s %v", got.Params, got.Result, got.Error)
			}
		case 1:
			if got.Error == nil || got.Error.Code != -32602 || string(got.Error.Data) != `{"n":1}` || got.Outcome != OutcomeError || got.Result != nil {
				t.Errorf("record 1: %+v", got)
			}
		case 2:
			if got.Params != nil || got.Result != nil {
				t.Errorf("record 2: nil params and result came back as %q %q", got.Params, got.Result)
			}
		}
	}
	// Found by full-text search too, and counted.
	if es, _ := s.Search(ctx, Query{Text: "hello"}); len(es) != 2 { // record 2 has no params
		t.Errorf("search found %d", len(es))
	}
	if tot, _ := s.Totals(ctx); tot.Rows != 3 {
		t.Errorf("totals: %+v", tot)
	}
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 0 {
		t.Errorf("second Fold = %+v, %v", st, err)
	}
	if _, err := s.GetRecord(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetRecord(nope) = %v", err)
	}
}

// A fold killed after its commit but before removing the files leaves
// records that are in the database already: the next fold adds nothing.
func TestFoldIsOnce(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	if _, err := j.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	f := journalFiles(t, j.Dir(), recordExt)[0]
	b, _ := os.ReadFile(f)
	if _, err := s.Fold(ctx, FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, b, 0o600) // as if the removal never happened
	st, err := s.Fold(ctx, FoldOptions{})
	if err != nil || st.Folded != 1 {
		t.Fatalf("refold: %+v %v", st, err)
	}
	var n int
	s.db.QueryRow("SELECT count(*) FROM calls").Scan(&n)
	tot, _ := s.Totals(ctx)
	if n != 1 || tot.Rows != 1 {
		t.Errorf("%d rows (totals %d) after folding one record twice", n, tot.Rows)
	}
	var fts int
	s.db.QueryRow("SELECT count(*) FROM calls_fts WHERE calls_fts MATCH 'hello'").Scan(&fts)
	if fts != 1 {
		t.Errorf("%d full-text rows", fts)
	}
}

func TestFoldSetsAsideDamagedRecords(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	for i := 0; i < 4; i++ {
		if _, err := j.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	files := journalFiles(t, j.Dir(), recordExt)
	b, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], b[:len(b)-3], 0o600) // cut short
	b, _ = os.ReadFile(files[1])
	b[len(b)-1] ^= 0x40 // one bit flipped
	os.WriteFile(files[1], b, 0o600)
	os.WriteFile(filepath.Join(j.Dir(), "0-garbage.rec"), []byte("not a record"), 0o600)
	os.WriteFile(filepath.Join(j.Dir(), "1-empty.rec"), nil, 0o600)
	// A record renamed: its id no longer matches its name.
	os.Rename(files[2], filepath.Join(j.Dir(), "9-renamed.rec"))
	// A temporary file of a writer that died mid-write, an hour ago.
	tmp := filepath.Join(j.Dir(), tmpPrefix+"x")
	os.WriteFile(tmp, []byte("half"), 0o600)
	old := time.Now().Add(-2 * staleTmp)
	os.Chtimes(tmp, old, old)

	st, err := s.Fold(ctx, FoldOptions{})
	if err != nil || st.Folded != 1 || len(st.SetAside) != 5 {
		t.Fatalf("Fold = %+v, %v", st, err)
	}
	for _, m := range st.SetAside {
		if !strings.Contains(m, "set aside") {
			t.Errorf("message %q", m)
		}
	}
	if bad := journalFiles(t, j.Dir(), setAsideExt); len(bad) != 5 {
		t.Errorf("%d files set aside", len(bad))
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Error("a stale temporary record was kept")
	}
	// Reported once: the next fold finds nothing.
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 0 || len(st.SetAside) != 0 {
		t.Errorf("second Fold = %+v, %v", st, err)
	}
}

func TestDecodeRecordNeverPanics(t *testing.T) {
	in := sample(1)
	in.Family = "westgate-tower-155f"
	chunks := encodeRecord("1-2-3", prepareEntry(in, Options{}).e)
	rec := bytes.Join(chunks, nil)
	// A record of an older primalscope ends before the fields added since
	// (the family: its length byte and its bytes).
	v1 := len(rec) - 1 - len(in.Family)
	for n := 0; n < len(rec); n++ {
		// A body cut short, framed as if whole: the fields run out.
		_, e, err := decodeRecord(frame(rec[:n]))
		if n == v1 {
			if err != nil || e.Method != "crypto.sign_ed25519" || e.Family != "" {
				t.Fatalf("a record as an older primalscope writes it: %+v %v", e, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("a record body cut to %d bytes decoded", n)
		}
	}
	whole := frame(rec)
	if id, e, err := decodeRecord(whole); err != nil || id != "1-2-3" || e.Method != "crypto.sign_ed25519" || e.Family != in.Family {
		t.Fatalf("decode: %q %+v %v", id, e, err)
	}
	for n := 0; n < len(whole); n++ {
		// A file cut short: the header's length says so.
		if _, _, err := decodeRecord(whole[:n]); err == nil {
			t.Fatalf("a record file cut to %d bytes decoded", n)
		}
	}
	if _, _, err := decodeRecord(append(bytes.Clone(whole), 0)); err == nil {
		t.Fatal("a record file with a byte more decoded")
	}
}

// frame builds a record file around body with a correct checksum.
func frame(body []byte) []byte {
	dir, _ := os.MkdirTemp("", "frame")
	defer os.RemoveAll(dir)
	writeRecord(dir, "x", [][]byte{body})
	b, _ := os.ReadFile(filepath.Join(dir, "x"+recordExt))
	return b
}

// holdWriteLock takes the write lock of the database at path (BEGIN
// IMMEDIATE on a connection of a Store of its own), as another process
// would. COMMIT on the connection lets it go; the connection and the Store
// are closed at the end of the test.
func holdWriteLock(t *testing.T, ctx context.Context, path string) *sql.Conn {
	t.Helper()
	holder := openAt(t, path, Options{})
	conn, err := holder.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// Another process holding the write lock: a no-wait fold gives up at once
// and the records stay; they fold once the lock is gone.
func TestFoldNoWaitWhileLocked(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "history.db")
	conn := holdWriteLock(t, ctx, path)
	j := openJournal(t, path, Options{})
	if _, err := j.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		opts Options
		fo   FoldOptions
	}{{"negative BusyTimeout", Options{BusyTimeout: -1}, FoldOptions{}}, {"FoldOptions.NoWait", Options{}, FoldOptions{NoWait: true}}} {
		s, err := Open(ctx, path, c.opts)
		if err != nil {
			t.Fatalf("%s: open: %v", c.name, err)
		}
		t0 := time.Now()
		_, err = s.Fold(ctx, c.fo)
		if !errors.Is(err, ErrBusy) || time.Since(t0) > time.Second {
			t.Errorf("%s: Fold = %v after %s, want ErrBusy at once", c.name, err, time.Since(t0))
		}
		if c.fo.NoWait {
			// The connection went back to the pool waiting again.
			var ms int
			s.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&ms)
			if ms != int(DefaultBusyTimeout.Milliseconds()) {
				t.Errorf("busy_timeout left at %d", ms)
			}
		}
		s.Close()
	}
	if n, _ := j.Pending(); n != 1 {
		t.Fatalf("%d records pending", n)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	s, _ := Open(ctx, path, Options{BusyTimeout: -1})
	defer s.Close()
	if st, err := s.Fold(ctx, FoldOptions{NoWait: true}); err != nil || st.Folded != 1 {
		t.Errorf("after the lock: %+v %v", st, err)
	}
}

// Many writers and two folders at once: every record lands exactly once.
func TestConcurrentAppendAndFold(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "history.db")
	j := openJournal(t, path, Options{})
	const writers, each = 8, 50
	var wg sync.WaitGroup
	var mu sync.Mutex
	ids := map[string]bool{}
	stop := make(chan struct{})
	var folders sync.WaitGroup
	for f := 0; f < 2; f++ {
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		folders.Add(1)
		go func() {
			defer folders.Done()
			for {
				if _, err := s.Fold(ctx, FoldOptions{NoWait: true}); err != nil && !errors.Is(err, ErrBusy) {
					t.Error(err)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				e := sample(i)
				e.Target = fmt.Sprintf("w%d", w)
				id, err := j.Append(e)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[id] = true
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	folders.Wait()
	s, _ := Open(ctx, path, Options{})
	defer s.Close()
	if _, err := s.Fold(ctx, FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	var n int
	s.db.QueryRow("SELECT count(*) FROM calls").Scan(&n)
	tot, _ := s.Totals(ctx)
	if len(ids) != writers*each || n != writers*each || tot.Rows != int64(n) {
		t.Errorf("%d ids, %d rows, totals %d; want %d", len(ids), n, tot.Rows, writers*each)
	}
	for id := range ids {
		if _, err := s.GetRecord(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

// Retention applies to folded records.
func TestFoldTrims(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{MaxRows: 50})
	j := openJournal(t, s.Path(), Options{})
	for i := 0; i < 120; i++ {
		if _, err := j.Append(sample(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Fold(context.WithoutCancel(ctx), FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	tot, _ := s.Totals(ctx)
	if tot.Rows > 50 || tot.Rows < 40 {
		t.Errorf("%d rows kept for a cap of 50", tot.Rows)
	}
}

// LockWait bounds the wait for the lock: a lock let go within it is had.
func TestFoldLockWait(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "history.db")
	conn := holdWriteLock(t, ctx, path)
	j := openJournal(t, path, Options{})
	j.Append(sample(1))
	s, _ := Open(ctx, path, Options{})
	defer s.Close()
	t0 := time.Now()
	if _, err := s.Fold(ctx, FoldOptions{NoWait: true, LockWait: 200 * time.Millisecond}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Fold beside a held lock: %v", err)
	}
	if took := time.Since(t0); took < 150*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %s for a LockWait of 200ms", took)
	}
	time.AfterFunc(200*time.Millisecond, func() { conn.ExecContext(context.Background(), "COMMIT") })
	st, err := s.Fold(ctx, FoldOptions{NoWait: true, LockWait: 10 * time.Second})
	if err != nil || st.Folded != 1 {
		t.Errorf("Fold with the lock let go: %+v %v", st, err)
	}
}

func TestFoldLimit(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	for i := 0; i < 10; i++ {
		j.Append(sample(i))
	}
	if st, err := s.Fold(ctx, FoldOptions{Limit: 4}); err != nil || st.Folded != 4 {
		t.Fatalf("Fold(Limit 4) = %+v %v", st, err)
	}
	if n, _ := j.Pending(); n != 6 {
		t.Errorf("%d pending after folding 4 of 10", n)
	}
	// Oldest first.
	if es, _ := s.Search(ctx, Query{Limit: -1}); len(es) != 4 || !es[3].Time.Equal(sample(0).Time) {
		t.Errorf("folded %+v", es)
	}
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 6 {
		t.Errorf("the rest: %+v %v", st, err)
	}
}

// A limited fold at a store over its cap trims one step (trimChunk calls),
// not down to 90 % of the cap at once: no one call pays for trimming a
// whole store that reached its cap. A full fold still trims all the way.
func TestLimitedFoldTrimsOneStep(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{MaxRows: -1, MaxBytes: -1})
	es := make([]Entry, 2*trimChunk+100)
	for i := range es {
		es[i] = sample(i)
	}
	if _, err := s.Add(ctx, es...); err != nil {
		t.Fatal(err)
	}
	s.Close()
	capped := openAt(t, s.Path(), Options{MaxRows: 100})
	j := openJournal(t, s.Path(), Options{})
	j.Append(sample(len(es)))
	if _, err := capped.Fold(ctx, FoldOptions{NoWait: true, Limit: 64}); err != nil {
		t.Fatal(err)
	}
	tot, _ := capped.Totals(ctx)
	if want := int64(len(es) + 1 - trimChunk); tot.Rows != want {
		t.Fatalf("a limited fold left %d rows, want %d (one trim step)", tot.Rows, want)
	}
	j.Append(sample(len(es) + 1))
	if _, err := capped.Fold(ctx, FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	if tot, _ := capped.Totals(ctx); tot.Rows > 100 {
		t.Fatalf("a full fold left %d rows for a cap of 100", tot.Rows)
	}
}

// BacklogAtLeast says whether n records (or size bytes of them) wait,
// counting no further than needed.
func TestBacklogAtLeast(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "history.db"), Options{})
	if due, err := j.BacklogAtLeast(1, 1); err != nil || due {
		t.Fatalf("empty journal: %v %v", due, err)
	}
	for i := 0; i < 40; i++ {
		j.Append(sample(i))
	}
	for _, c := range []struct {
		n    int
		size int64
		want bool
	}{{32, 1 << 30, true}, {40, 1 << 30, true}, {41, 1 << 30, false}, {1000, 1, true}} {
		if due, err := j.BacklogAtLeast(c.n, c.size); err != nil || due != c.want {
			t.Errorf("BacklogAtLeast(%d, %d) = %v %v, want %v", c.n, c.size, due, err, c.want)
		}
	}
}
