package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openTemp(t testing.TB, opts Options) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "h", "history.db"), opts)
}

// openAt opens the store at path, closed at the end of the test.
func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := Open(testCtx(t), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openJournal opens the journal of the database at path.
func openJournal(t testing.TB, path string, opts Options) *Journal {
	t.Helper()
	j, err := OpenJournal(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func sample(i int) Entry {
	return Entry{
		Time:      time.Unix(1_800_000_000+int64(i), 0),
		Duration:  time.Duration(i) * time.Millisecond,
		Target:    "beardog",
		Endpoint:  "unix:///run/user/1000/biomeos/beardog.sock",
		Wire:      "jsonrpc",
		Transport: "unix",
		Method:    "crypto.sign_ed25519",
		Params:    json.RawMessage(fmt.Sprintf(`{"message":"hello %d"}`, i)),
		Result:    json.RawMessage(`{"signature":"3J9xQw=="}`),
		Outcome:   OutcomeOK,
		Source:    SourceCLI,
	}
}

func TestFTS5CompiledIn(t *testing.T) {
	s := openTemp(t, Options{})
	var used int
	if err := s.db.QueryRow("SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&used); err != nil {
		t.Fatal(err)
	}
	if used != 1 {
		t.Fatal("modernc.org/sqlite was built without FTS5")
	}
	var n int
	if err := s.db.QueryRow("SELECT count(*) FROM calls_fts WHERE calls_fts MATCH 'x'").Scan(&n); err != nil {
		t.Fatalf("fts5 query: %v", err)
	}
}

func TestPragmas(t *testing.T) {
	if len(migrations) != SchemaVersion {
		t.Fatalf("%d migrations but SchemaVersion %d", len(migrations), SchemaVersion)
	}
	s := openTemp(t, Options{})
	for pragma, want := range map[string]string{
		"journal_mode": "wal", "synchronous": "1", "busy_timeout": "5000",
		"user_version": fmt.Sprint(SchemaVersion), "auto_vacuum": "2",
	} {
		var got string
		if err := s.db.QueryRow("PRAGMA " + pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %s, want %s", pragma, got, want)
		}
	}
}

func TestPermissionsIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "state", "primalscope")
	path := filepath.Join(dir, "history.db")
	s := openAt(t, path, Options{})
	if _, err := s.Add(testCtx(t), sample(1)); err != nil {
		t.Fatal(err)
	}
	check := func(p string, want os.FileMode) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", filepath.Base(p), got, want)
		}
	}
	check(dir, 0o700)
	check(path, 0o600)
	check(path+"-wal", 0o600)
	check(path+"-shm", 0o600)
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if p, _ := DefaultPath(); p != "/x/state/primalscope/history.db" {
		t.Errorf("DefaultPath = %s", p)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := DefaultPath(); p != "/home/u/.local/state/primalscope/history.db" {
		t.Errorf("DefaultPath fallback = %s", p)
	}
}

func TestOpenOddPathCharacters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a?b#c%d", "history.db")
	s := openAt(t, path, Options{})
	if _, err := s.Add(testCtx(t), sample(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at the given path: %v", err)
	}
}

func TestAddGetRoundTrip(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	e := sample(7)
	e.Prefix = true
	e.Transport = "unix+btsp(chacha20_poly1305)"
	e.Session, e.Pool = "sess-1", "pool-a"
	e.Family = "westgate-tower-155f"
	e.Result = nil
	e.Error = &RPCError{Code: -32601, Message: "Method not found", Data: json.RawMessage(`{"method":"x"}`)}
	e.Outcome = OutcomeError
	got := addGet(t, s, e)
	e.ID = got.ID
	e.ResponseSize = int64(len(e.Error.Data))
	gj, _ := json.Marshal(got)
	ej, _ := json.Marshal(e)
	if string(gj) != string(ej) {
		t.Errorf("round trip:\n got %s\nwant %s", gj, ej)
	}
	var back Entry
	if err := json.Unmarshal(gj, &back); err != nil {
		t.Fatal(err)
	}
	if bj, _ := json.Marshal(back); string(bj) != string(gj) {
		t.Errorf("JSON round trip:\n got %s\nwant %s", bj, gj)
	}
	if _, err := s.Get(ctx, 9999); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(9999) = %v, want ErrNotFound", err)
	}
	if _, err := s.Add(ctx, Entry{Method: "m", Outcome: "weird"}); err == nil {
		t.Error("unknown outcome accepted")
	}
}

func TestSearch(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	base := time.Now().Add(-time.Hour)
	entries := []Entry{
		{Target: "beardog", Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"message":"alpha"}`), Outcome: OutcomeOK},
		{Target: "songbird", Method: "discovery.peers", Params: json.RawMessage(`{}`), Outcome: OutcomeOK},
		{Target: "nestgate", Method: "storage.get", Params: json.RawMessage(`{"key":"zebra-config"}`), Outcome: OutcomeOK},
		{Target: "songbird", Method: "ipc.heartbeat", Error: &RPCError{Code: -32601, Message: "Unknown method ipc.heartbeat"}, Outcome: OutcomeError},
		{Target: "beardog", Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"message":"beta"}`), Outcome: OutcomeTimeout},
	}
	for i := range entries {
		entries[i].Time = base.Add(time.Duration(i) * 10 * time.Minute)
		entries[i].Result = json.RawMessage(`{"secretless":"result not indexed: gamma"}`)
	}
	ids, err := s.Add(ctx, entries...)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		q    Query
		want []int // indexes into entries, newest first
	}{
		{"all newest first", Query{}, []int{4, 3, 2, 1, 0}},
		{"limit", Query{Limit: 2}, []int{4, 3}},
		{"text in params", Query{Text: "zebra"}, []int{2}},
		{"text prefix", Query{Text: "zeb"}, []int{2}},
		{"dotted method", Query{Text: "storage.get"}, []int{2}},
		{"target text", Query{Text: "songbird"}, []int{3, 1}},
		{"error text", Query{Text: "unknown method"}, []int{3}},
		{"error code", Query{Text: "-32601"}, []int{3}},
		{"two words AND", Query{Text: "beardog beta"}, []int{4}},
		{"result not indexed", Query{Text: "gamma"}, []int{}},
		{"quotes are safe", Query{Text: `"alpha`}, []int{0}},
		{"punctuation only ignored", Query{Text: "..."}, []int{4, 3, 2, 1, 0}},
		{"target filter", Query{Target: "beardog"}, []int{4, 0}},
		{"method filter", Query{Method: "discovery.peers"}, []int{1}},
		{"outcome filter", Query{Outcome: OutcomeTimeout}, []int{4}},
		{"since", Query{Since: base.Add(25 * time.Minute)}, []int{4, 3}},
		{"text and filters", Query{Text: "crypto", Outcome: OutcomeOK}, []int{0}},
	}
	for _, c := range cases {
		got, err := s.Search(ctx, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var gotIDs, wantIDs []int64
		for _, e := range got {
			gotIDs = append(gotIDs, e.ID)
			if e.Result != nil {
				t.Errorf("%s: result returned without WithResults", c.name)
			}
		}
		for _, i := range c.want {
			wantIDs = append(wantIDs, ids[i])
		}
		if fmt.Sprint(gotIDs) != fmt.Sprint(wantIDs) {
			t.Errorf("%s: got %v, want %v", c.name, gotIDs, wantIDs)
		}
	}
	got, err := s.Search(ctx, Query{Limit: 1, WithResults: true})
	if err != nil || len(got) != 1 || got[0].Result == nil {
		t.Errorf("WithResults: %v %v", got, err)
	}
}

func TestSaveLookup(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	ids, err := s.Add(ctx, sample(1), sample(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "@abstract", "42", "-7", "+3", "007", "99999999999999999999", "has space", "tab\tname", "ctl\x1b"} {
		if err := s.Save(ctx, ids[0], bad); !errors.Is(err, ErrBadName) {
			t.Errorf("Save(%q) = %v, want ErrBadName", bad, err)
		}
	}
	if err := s.Save(ctx, 12345, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Save of a missing id = %v, want ErrNotFound", err)
	}
	if err := s.Save(ctx, ids[0], "daily-sign"); err != nil {
		t.Fatal(err)
	}
	e, err := s.Lookup(ctx, "daily-sign")
	if err != nil || e.ID != ids[0] {
		t.Fatalf("Lookup = %v, %v", e.ID, err)
	}
	if err := s.Save(ctx, ids[1], "daily-sign"); err != nil { // re-point
		t.Fatal(err)
	}
	if e, err := s.Resolve(ctx, "daily-sign"); err != nil || e.ID != ids[1] {
		t.Errorf("Resolve(name) = %v, %v", e.ID, err)
	}
	if e, err := s.Resolve(ctx, fmt.Sprint(ids[0])); err != nil || e.ID != ids[0] {
		t.Errorf("Resolve(id) = %v, %v", e.ID, err)
	}
	if _, err := s.Lookup(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup(nope) = %v", err)
	}
	list, err := s.Saved(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "daily-sign" || list[0].ID != ids[1] {
		t.Errorf("Saved = %v, %v", list, err)
	}
}

func TestTruncation(t *testing.T) {
	s := openTemp(t, Options{EntryLimit: 1024})
	big := `{"blob":"` + strings.Repeat("é", 3000) + `"}` // 2-byte runes: the cut must not split one
	e := sample(1)
	e.Result = json.RawMessage(big)
	e.Params = json.RawMessage(`{"x":"` + strings.Repeat("p", 2000) + `"}`)
	got := addGet(t, s, e)
	if !got.Truncated || !got.ParamsTruncated {
		t.Errorf("Truncated=%v ParamsTruncated=%v", got.Truncated, got.ParamsTruncated)
	}
	if got.ResponseSize != int64(len(big)) {
		t.Errorf("ResponseSize = %d, want %d", got.ResponseSize, len(big))
	}
	if len(got.Result) > 1024 || len(got.Result) < 1020 || !strings.HasPrefix(big, string(got.Result)) {
		t.Errorf("stored result is %d bytes", len(got.Result))
	}
	if !json.Valid(mustJSON(t, got)) {
		t.Error("JSON form of a cut entry is not valid JSON")
	}
	small := sample(2)
	got = addGet(t, s, small)
	if got.Truncated || got.ResponseSize != int64(len(small.Result)) {
		t.Errorf("small entry: truncated=%v size=%d", got.Truncated, got.ResponseSize)
	}
}

// addGet stores e and reads it back by the id Add gave.
func addGet(t *testing.T, s *Store, e Entry) Entry {
	t.Helper()
	ctx := testCtx(t)
	ids, err := s.Add(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != ids[0] {
		t.Fatalf("Get(%d) returned call %d", ids[0], got.ID)
	}
	return got
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRetention(t *testing.T) {
	s := openTemp(t, Options{MaxRows: 100})
	ctx := testCtx(t)
	first, err := s.Add(ctx, sample(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, first[0], "keep-me"); err != nil {
		t.Fatal(err)
	}
	// Trimmed as a fold trims: after the writes, in steps (Store.Trim).
	var last int64
	for i := 1; i < 250; i++ {
		ids, err := s.Add(ctx, sample(i))
		if err != nil {
			t.Fatal(err)
		}
		last = ids[0]
		if i%50 == 0 {
			if _, err := s.Trim(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.Trim(ctx); err != nil {
		t.Fatal(err)
	}
	tot, err := s.Totals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	s.db.QueryRow("SELECT count(*) FROM calls").Scan(&n)
	if n != tot.Rows {
		t.Errorf("totals say %d rows, table has %d", tot.Rows, n)
	}
	if tot.Rows > 100 || tot.Rows < 80 {
		t.Errorf("%d rows after trimming to a cap of 100", tot.Rows)
	}
	if _, err := s.Lookup(ctx, "keep-me"); err != nil {
		t.Errorf("saved call was trimmed: %v", err)
	}
	if _, err := s.Get(ctx, last); err != nil {
		t.Errorf("newest call was trimmed: %v", err)
	}
	if _, err := s.Get(ctx, first[0]+1); !errors.Is(err, ErrNotFound) {
		t.Errorf("oldest unnamed call survived: %v", err)
	}
	// The full-text index was trimmed too.
	var fts int64
	s.db.QueryRow("SELECT count(*) FROM calls_fts WHERE calls_fts MATCH 'hello'").Scan(&fts)
	if fts != n {
		t.Errorf("fts has %d rows, calls %d", fts, n)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

func TestRetentionBytes(t *testing.T) {
	s := openTemp(t, Options{MaxBytes: 64 << 10, MaxRows: -1})
	ctx := testCtx(t)
	pad := strings.Repeat("x", 1000)
	for i := 0; i < 200; i++ {
		e := sample(i)
		e.Result = json.RawMessage(`"` + pad + `"`)
		if _, err := s.Add(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := s.Trim(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tot, _ := s.Totals(ctx)
	if removed == 0 || tot.Bytes > 64<<10 || tot.Bytes < 50<<10 {
		t.Errorf("removed %d, %d bytes left for a cap of %d", removed, tot.Bytes, 64<<10)
	}
	if err := s.Check(ctx); err != nil {
		t.Error(err)
	}
}

func TestOpenFailures(t *testing.T) {
	ctx := testCtx(t)
	dir := t.TempDir()
	// A parent that is a file.
	file := filepath.Join(dir, "plain")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := Open(ctx, filepath.Join(file, "history.db"), Options{}); err == nil {
		t.Error("Open under a regular file succeeded")
	}
	// A corrupt database.
	bad := filepath.Join(dir, "corrupt.db")
	os.WriteFile(bad, []byte(strings.Repeat("this is not a database ", 400)), 0o600)
	if s, err := Open(ctx, bad, Options{}); err == nil {
		s.Close()
		t.Error("Open of a corrupt file succeeded")
	}
	// A database from a newer primalscope.
	newer := filepath.Join(dir, "newer.db")
	db, err := sql.Open("sqlite", "file:"+newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("PRAGMA user_version = 99")
	db.Close()
	if _, err := Open(ctx, newer, Options{}); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("Open of a newer schema = %v", err)
	}
}

// A database of schema 2 (before the family column), with a call and a
// saved name in it, is brought to the current schema when opened: its calls
// read as before (no family), new calls keep their family, and the name
// still finds its call.
func TestMigrateFromSchema2(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "v2.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migrations[:2] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("schema %d: %v", i+1, err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 2;
		INSERT INTO calls(time_ns, target, endpoint, wire, transport, method, params, outcome, source, bytes, record)
		VALUES (1700000000000000000, 'rhizocrypt', '/run/b/rhizocrypt.sock', 'jsonrpc', 'unix', 'health.liveness', NULL, 'ok', 'cli', 100, NULL);
		INSERT INTO saved(name, call_id, saved_ns) VALUES ('old-one', 1, 1);
		UPDATE totals SET rows = 1, bytes = 100;`); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion {
		t.Fatalf("user_version = %d, %v; want %d", v, err, SchemaVersion)
	}
	old, err := s.Resolve(ctx, "old-one")
	if err != nil || old.Target != "rhizocrypt" || old.Endpoint != "/run/b/rhizocrypt.sock" || old.Family != "" {
		t.Fatalf("the schema-2 call: %+v %v", old, err)
	}
	e := sample(2)
	e.Family = "westgate-tower-155f"
	ids, err := s.Add(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, ids[0]); err != nil || got.Family != e.Family {
		t.Errorf("a call after the migration: %+v %v", got, err)
	}
	s.Close()
	// Opening again does not migrate again.
	s2 := openAt(t, path, Options{})
	if es, err := s2.Search(ctx, Query{Limit: -1}); err != nil || len(es) != 2 {
		t.Errorf("after reopening: %d calls, %v", len(es), err)
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			s, err := Open(testCtx(t), path, Options{})
			if err == nil {
				_, err = s.Add(testCtx(t), sample(1))
				s.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The full-text index holds the first 64 KiB of the params: a word there
// is found, one past it is not, and the stored params are whole.
func TestSearchCoversParamsPrefix(t *testing.T) {
	ctx := testCtx(t)
	s := openTemp(t, Options{})
	filler := strings.Repeat("é", ftsIndexed) // two bytes each: the cut falls inside one
	params := `{"a":"nearword","b":"` + filler + `","c":"farword"}`
	if _, err := s.Add(ctx, Entry{Target: "t", Method: "m", Params: json.RawMessage(params)}); err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string]int{"nearword": 1, "farword": 0} {
		got, err := s.Search(ctx, Query{Text: word})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("search %q: %d calls, want %d", word, len(got), want)
		}
		for _, e := range got {
			if string(e.Params) != params {
				t.Error("stored params were cut")
			}
		}
	}
	if p := ftsPrefix("x" + filler); !utf8.ValidString(p) || len(p) > ftsIndexed {
		t.Errorf("ftsPrefix cut a character or kept too much: %d bytes", len(p))
	}
}
