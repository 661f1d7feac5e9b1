package history

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// plantRecord writes e, unredacted and uncut, as a well-formed record file
// (correct framing and CRC) into dir, as someone with write access to the
// journal could, and returns its path.
func plantRecord(t *testing.T, dir, id string, e Entry) string {
	t.Helper()
	if err := writeRecord(dir, id, encodeRecord(id, e)); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, id+recordExt)
}

func TestFoldSetsAsideOversizedRecordUnread(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{EntryLimit: 64 << 10})
	j := openJournal(t, s.Path(), Options{})
	// A sparse record file far larger than any record the store writes
	// (the entry limit plus framing): it costs no disk, and must cost no
	// memory either.
	const size = 256 << 20
	p := filepath.Join(j.Dir(), "00000000000000000001-1-00000000"+recordExt)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(recordMagic)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := j.Append(sample(1)); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	st, err := s.Fold(ctx, FoldOptions{})
	runtime.ReadMemStats(&after)
	if err != nil || st.Folded != 1 || len(st.SetAside) != 1 || !strings.Contains(st.SetAside[0], "larger than") {
		t.Fatalf("Fold = %+v, %v; want the good record folded and the large one set aside as too large", st, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > size/4 {
		t.Fatalf("the fold allocated %d bytes for a %d-byte record it should not read", got, size)
	}
	if _, err := os.Lstat(p + setAsideExt); err != nil {
		t.Fatalf("not set aside: %v", err)
	}
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || len(st.SetAside) != 0 {
		t.Fatalf("second Fold = %+v, %v: reported twice", st, err)
	}
}

func TestFoldSetsAsideSymlinkAndFIFORecordsOnce(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	outside := t.TempDir()
	target := plantRecord(t, outside, "00000000000000000002-1-00000000", sample(2))
	link := filepath.Join(j.Dir(), "00000000000000000002-1-00000000"+recordExt)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(j.Dir(), "00000000000000000003-1-00000000"+recordExt)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := s.Fold(ctx, FoldOptions{})
	if err != nil || st.Folded != 0 || len(st.SetAside) != 2 {
		t.Fatalf("Fold = %+v, %v; want the link and the FIFO set aside", st, err)
	}
	joined := strings.Join(st.SetAside, "\n")
	if !strings.Contains(joined, "symbolic link") || !strings.Contains(joined, "named pipe") {
		t.Fatalf("messages %q do not say what was found", joined)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("the outside file was touched: %v", err)
	}
	if n, _ := j.Pending(); n != 0 {
		t.Fatalf("%d records still pending", n)
	}
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || len(st.SetAside) != 0 {
		t.Fatalf("second Fold = %+v, %v: reported twice", st, err)
	}
	if es, err := s.Search(ctx, Query{Limit: -1}); err != nil || len(es) != 0 {
		t.Fatalf("folded through the link: %d entries, %v", len(es), err)
	}
}

func TestJournalDirSymlinkOutOfStateFolderRefused(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	outside := t.TempDir()
	// Records planted in another user's folder, reached by a link where
	// the journal belongs.
	plantRecord(t, outside, "00000000000000000004-1-00000000", sample(4))
	if err := os.Symlink(outside, JournalDir(s.Path())); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenJournal(s.Path(), Options{}); !errors.Is(err, statedir.ErrUnsafe) {
		t.Fatalf("OpenJournal through a link = %v, want ErrUnsafe", err)
	}
	if _, err := s.Fold(ctx, FoldOptions{}); !errors.Is(err, statedir.ErrUnsafe) {
		t.Fatalf("Fold through a link = %v, want ErrUnsafe", err)
	}
	if es, _ := s.Search(ctx, Query{Limit: -1}); len(es) != 0 {
		t.Fatalf("folded %d entries from outside the state folder", len(es))
	}
	if m, _ := filepath.Glob(filepath.Join(outside, "*")); len(m) != 1 {
		t.Fatalf("outside folder now holds %q", m)
	}
}

func TestOpenRefusesHistoryDBSymlink(t *testing.T) {
	state, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "theirs.db")
	if err := os.WriteFile(target, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o666)
	for _, name := range []string{"history.db", "history.db-wal"} {
		dir := filepath.Join(state, name+".case")
		os.Mkdir(dir, 0o700)
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(testCtx(t), filepath.Join(dir, "history.db"), Options{})
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, statedir.ErrUnsafe) {
			t.Fatalf("%s a link: Open = %v, want ErrUnsafe", name, err)
		}
	}
	if info, err := os.Stat(target); err != nil || info.Size() != 0 || info.Mode().Perm() != 0o666 {
		t.Fatalf("the outside file was written or changed: %v %v", info, err)
	}
}

func TestFoldRedactsWellFormedRecord(t *testing.T) {
	ctx := testCtx(t)
	const seed = "c2VlZC1vZi10aGUtZmFtaWx5LTAxMjM0NTY3"
	s := openTemp(t, Options{Secrets: []string{seed}})
	j := openJournal(t, s.Path(), Options{})
	e := sample(5)
	e.Params = json.RawMessage(`{"password":"hunter2-hunter2","api_key":"ak-0123456789","session_token":"st-abcdefghij","family_seed":"` + seed + `"}`)
	e.Result = json.RawMessage(`{"echo":"hunter2-hunter2","seed":"` + seed + `","note":"the seed is ` + seed + `"}`)
	e.Error = &RPCError{Code: -1, Message: "bad password hunter2-hunter2 for " + seed}
	plantRecord(t, j.Dir(), "00000000000000000005-1-00000000", e)
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 1 {
		t.Fatalf("Fold = %+v, %v", st, err)
	}
	got, err := s.GetRecord(ctx, "00000000000000000005-1-00000000")
	if err != nil {
		t.Fatal(err)
	}
	all, _ := json.Marshal(got)
	for _, secret := range []string{"hunter2-hunter2", "ak-0123456789", "st-abcdefghij", seed} {
		if strings.Contains(string(all), secret) {
			t.Errorf("folded entry holds %q in clear: %s", secret, all)
		}
	}
}
func TestStateWarnings(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	if w := StateWarnings(db); len(w) != 0 {
		t.Fatalf("a private folder warned: %q", w)
	}
	os.Chmod(dir, 0o777)
	if w := StateWarnings(db); len(w) != 1 || !strings.Contains(w[0], "writable") {
		t.Fatalf("warnings %q, want one about a world-writable state folder", w)
	}
}

// A record another user left in the journal is set aside unread.
func TestFoldSetsAsideAnotherUsersRecord(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("planting another user's file needs root")
	}
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	j := openJournal(t, s.Path(), Options{})
	p := plantRecord(t, j.Dir(), "00000000000000000006-1-00000000", sample(6))
	if err := os.Chown(p, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	st, err := s.Fold(ctx, FoldOptions{})
	if err != nil || st.Folded != 0 || len(st.SetAside) != 1 || !strings.Contains(st.SetAside[0], "uid 12345") {
		t.Fatalf("Fold = %+v, %v; want the record set aside naming its owner", st, err)
	}
}
