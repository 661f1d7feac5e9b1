package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// seedHistory writes entries straight into the store at path.
func seedHistory(t *testing.T, path string, entries ...history.Entry) []int64 {
	t.Helper()
	ctx := context.Background()
	s, err := history.Open(ctx, path, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.Add(ctx, entries...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// countHistory counts the calls in history, after folding the journal as
// the history command does.
func countHistory(t *testing.T, path string) int {
	t.Helper()
	s, err := history.Open(context.Background(), path, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Fold(context.Background(), history.FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	es, err := s.Search(context.Background(), history.Query{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestHistoryListSaveExport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h", "history.db")
	env := map[string]string{"HOME": t.TempDir(), "PRIMALSCOPE_HISTORY": path}

	r := runCLI(t, env, "", "history", "--json")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("empty history --json: %+v", r)
	}
	now := time.Now()
	ids := seedHistory(t, path,
		history.Entry{Time: now.Add(-3 * time.Hour), Target: "beardog", Endpoint: "unix:///run/b/beardog.sock", Wire: "jsonrpc",
			Transport: "unix", Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"message":"hi it's me"}`),
			Result: json.RawMessage(`{"signature":"x"}`), Outcome: history.OutcomeOK},
		history.Entry{Time: now.Add(-time.Hour), Target: "songbird", Endpoint: "tcp://127.0.0.1:9200", Wire: "jsonrpc",
			Transport: "tcp", Method: "ipc.heartbeat", Error: &history.RPCError{Code: -32601, Message: "Unknown method \x1b[31m"},
			Outcome: history.OutcomeError},
		history.Entry{Time: now, Target: "nestgate", Endpoint: "unix:///run/b/nestgate.sock", Method: "storage.put",
			Params: json.RawMessage(`{"key":"k","password":"hunter2"}`), Outcome: history.OutcomeTimeout},
	)

	r = runCLI(t, env, "", "history")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.HasPrefix(lines[1], strconv.FormatInt(ids[2], 10)+" ") || !strings.Contains(lines[3], "crypto.sign_ed25519") {
		t.Fatalf("history table: %+v", r)
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Errorf("colour or raw escapes on a pipe: %q", r.stdout)
	}
	r = runCLI(t, env, "", "history", "unknown", "method")
	if r.code != 0 || !strings.Contains(r.stdout, "ipc.heartbeat") || strings.Contains(r.stdout, "beardog") {
		t.Errorf("history QUERY: %+v", r)
	}
	r = runCLI(t, env, "", "history", "--json", "--target", "beardog", "--since", "1d")
	var got []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got) != 1 || got[0].ID != ids[0] || got[0].Result == nil {
		t.Errorf("history --json --target: %+v (%v)", r, err)
	}
	r = runCLI(t, env, "", "history", "--json", "--outcome", "timeout")
	if !strings.Contains(r.stdout, `"[redacted]"`) || strings.Contains(r.stdout, "hunter2") {
		t.Errorf("secret params: %s", r.stdout)
	}
	r = runCLI(t, env, "", "history", "--since", "2h", "--limit", "1")
	if lines := strings.Split(strings.TrimSpace(r.stdout), "\n"); r.code != 0 || len(lines) != 2 {
		t.Errorf("--since --limit: %+v", r)
	}
	for _, bad := range [][]string{{"--outcome", "meh"}, {"--since", "yesterday"}, {"--limit", "-1"}} {
		if r := runCLI(t, env, "", append([]string{"history"}, bad...)...); r.code != 2 {
			t.Errorf("history %v: exit %d, want 2", bad, r.code)
		}
	}

	id0 := strconv.FormatInt(ids[0], 10)
	if r := runCLI(t, env, "", "history", "save", id0, "daily-sign"); r.code != 0 || !strings.Contains(r.stdout, "daily-sign") {
		t.Errorf("save: %+v", r)
	}
	for _, bad := range [][]string{{id0, "42"}, {id0, "@abs"}, {"99999", "ghost"}, {"abc", "x"}, {id0}} {
		if r := runCLI(t, env, "", append([]string{"history", "save"}, bad...)...); r.code != 2 {
			t.Errorf("save %v: exit %d, want 2 (%s)", bad, r.code, r.stderr)
		}
	}
	r = runCLI(t, env, "", "history")
	if !strings.Contains(r.stdout, "daily-sign") {
		t.Errorf("table lacks the saved name:\n%s", r.stdout)
	}

	exports := map[string]string{
		"command": `primalscope call /run/b/beardog.sock crypto.sign_ed25519 '{"message":"hi it'\''s me"}'`,
		"socat":   `printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"crypto.sign_ed25519","params":{"message":"hi it'\''s me"}}' | socat - UNIX-CONNECT:/run/b/beardog.sock`,
		"json":    `{"jsonrpc":"2.0","id":1,"method":"crypto.sign_ed25519","params":{"message":"hi it's me"}}`,
	}
	for as, want := range exports {
		r := runCLI(t, env, "", "history", "export", "daily-sign", "--as", as)
		if r.code != 0 || strings.TrimSpace(r.stdout) != want {
			t.Errorf("export --as %s:\n got %q (%d %s)\nwant %q", as, r.stdout, r.code, r.stderr, want)
		}
	}
	r = runCLI(t, env, "", "history", "export", strconv.FormatInt(ids[2], 10))
	if r.code != 0 || !strings.Contains(r.stderr, "redacted") {
		t.Errorf("export of redacted params: %+v", r)
	}
	if r := runCLI(t, env, "", "history", "export", "daily-sign", "--as", "curl"); r.code != 2 {
		t.Errorf("export --as curl: %+v", r)
	}
	if r := runCLI(t, env, "", "history", "export", "nope"); r.code != 2 {
		t.Errorf("export of an unknown name: %+v", r)
	}
}

func TestReplay(t *testing.T) {
	eco := ecosystem(t)
	sd := "--socket-dir=" + eco.Dir
	path := filepath.Join(t.TempDir(), "history.db")
	env := map[string]string{"HOME": t.TempDir(), "PRIMALSCOPE_HISTORY": path}
	ids := seedHistory(t, path,
		history.Entry{Target: "beardog", Endpoint: "unix:///gone.sock", Method: "health.liveness",
			Result: json.RawMessage(`{"status":"dead","uptime":3}`), Outcome: history.OutcomeOK},
		history.Entry{Target: "beardog", Method: "no.such.method", Outcome: history.OutcomeTimeout},
		history.Entry{Target: "beardog", Method: "health.liveness", Params: json.RawMessage(`{"token":"t"}`), Outcome: history.OutcomeOK},
		history.Entry{Target: "/nonexistent/dir/x.sock", Method: "health.liveness", Outcome: history.OutcomeOK},
	)
	before := countHistory(t, path)

	id := strconv.FormatInt(ids[0], 10)
	r := runCLI(t, env, "", "replay", sd, id)
	if r.code != 0 || !strings.Contains(r.stdout, `~ .status: "dead" → "alive"`) || !strings.Contains(r.stdout, "- .uptime: 3") {
		t.Fatalf("replay: %+v", r)
	}
	if countHistory(t, path) != before+1 {
		t.Error("the replayed call was not recorded")
	}
	r = runCLI(t, env, "", "replay", sd, "--no-history", "--json", id)
	var doc replayDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || r.code != 0 || doc.Replayed != ids[0] ||
		len(doc.Changes) != 2 || doc.Outcome != history.OutcomeOK || doc.ID != 0 {
		t.Fatalf("replay --json: %+v %+v %v", r, doc, err)
	}
	if countHistory(t, path) != before+1 {
		t.Error("--no-history recorded the replay")
	}
	// A call that timed out before now gets an error: exit 1, shown as a change.
	r = runCLI(t, env, "", "replay", sd, strconv.FormatInt(ids[1], 10))
	if r.code != 1 || !strings.Contains(r.stdout, "+ .: ") {
		t.Errorf("replay to an error: %+v", r)
	}
	if r := runCLI(t, env, "", "replay", sd, strconv.FormatInt(ids[2], 10)); r.code != 2 || !strings.Contains(r.stderr, "--params") {
		t.Errorf("replay of redacted params: %+v", r)
	}
	if r := runCLI(t, env, "", "replay", sd, strconv.FormatInt(ids[2], 10), "--params", `{"token":"real"}`); r.code != 0 {
		t.Errorf("replay with --params: %+v", r)
	}
	if r := runCLI(t, env, "", "replay", sd, "9999"); r.code != 2 {
		t.Errorf("replay of an unknown id: %+v", r)
	}
	if r := runCLI(t, env, "", "replay", sd, strconv.FormatInt(ids[3], 10)); r.code != 3 {
		t.Errorf("replay to a dead socket: %+v", r)
	}
	// --target sends it elsewhere.
	r = runCLI(t, env, "", "replay", sd, id, "--target", "songbird")
	if r.code != 0 || !strings.Contains(r.stderr, "songbird") {
		t.Errorf("replay --target: %+v", r)
	}
}

func TestParseSinceAndSize(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2h":                   now.Add(-2 * time.Hour),
		"1.5d":                 now.Add(-36 * time.Hour),
		"2026-11-20T10:00:00Z": time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseSince("-3h", now); err == nil {
		t.Error("a negative duration was accepted")
	}
}

func TestHistoryConfigSection(t *testing.T) {
	cfgHome := t.TempDir()
	path := filepath.Join(t.TempDir(), "from-config.db")
	if err := os.MkdirAll(filepath.Join(cfgHome, "primalscope"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeHistoryFile(t, filepath.Join(cfgHome, "primalscope", "config.toml"),
		"[history]\npath = \""+path+"\"\nmax_rows = 10\nmax_bytes = \"1MiB\"\nentry_limit = 2048\n")
	a := &app{io: &stdio{err: &strings.Builder{}}, getenv: func(k string) string {
		return map[string]string{"XDG_CONFIG_HOME": cfgHome, "HOME": t.TempDir()}[k]
	}}
	hs := a.historySettings()
	if hs.Path != path || hs.MaxRows != 10 || hs.MaxBytes != 1<<20 || hs.EntryLimit != 2048 {
		t.Errorf("settings: %+v", hs)
	}
	s, err := a.openHistory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Path() != path || s.Options().MaxRows != 10 || s.Options().EntryLimit != 2048 {
		t.Errorf("store at %s with %+v", s.Path(), s.Options())
	}
}

func writeHistoryFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestStoreHistoryForTUI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	errs := &strings.Builder{}
	a := &app{io: &stdio{err: errs}, historyPath: path, getenv: func(string) string { return "" }}
	ctx := context.Background()
	h, closeH := a.tuiHistory(ctx)
	sh, ok := h.(*storeHistory)
	if !ok {
		t.Fatalf("got %T (%s)", h, errs)
	}
	sh.Record(history.Entry{Target: "beardog", Method: "crypto.sign", Params: json.RawMessage(`{"seed":"S","m":1}`),
		Outcome: history.OutcomeOK, Result: json.RawMessage(`{"a":1}`), Source: history.SourceTUI})
	sh.Record(history.Entry{Target: "beardog", Method: "crypto.sign", Params: json.RawMessage(`{"m":2}`), Outcome: history.OutcomeError,
		Error: &history.RPCError{Code: -1, Message: "boom"}, Source: history.SourceTUI})
	closeH() // flushes
	h, closeH = a.tuiHistory(ctx)
	defer closeH()
	got, err := h.Search(ctx, "crypto", 0)
	if err != nil || len(got) != 2 || got[0].Error == nil || got[0].Outcome != "error" {
		t.Fatalf("Search: %+v %v", got, err)
	}
	p, ok, err := h.LastParams(ctx, "beardog", "crypto.sign")
	if err != nil || !ok || string(p) != `{"m":2}` {
		t.Errorf("LastParams = %s %v %v", p, ok, err)
	}
	one, err := h.Get(ctx, got[1].ID)
	if err != nil || string(one.Result) != `{"a":1}` || !strings.Contains(string(one.Params), "[redacted]") {
		t.Errorf("Get = %+v %v", one, err)
	}
	if _, err := h.Get(ctx, 999); !errors.Is(err, history.ErrNotFound) {
		t.Errorf("Get(999) = %v, want history.ErrNotFound", err)
	}
	if err := h.Save(ctx, got[1].ID, "x"); err != nil {
		t.Error(err)
	}
}

func TestRecordingHelpers(t *testing.T) {
	errs := &strings.Builder{}
	a := &app{io: &stdio{err: errs}, noHistory: true, getenv: func(string) string { return "" }, wire: "lean"}
	if rec := a.startRecording(context.Background()); rec != nil {
		t.Error("--no-history recorded")
	}
	// Recording never opens the database, so only a journal that cannot be
	// made (here: its directory's parent is a file) stops it.
	a.noHistory = false
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte(strings.Repeat("not a database ", 500)), 0o600)
	a.historyPath = filepath.Join(file, "history.db")
	rec := a.startRecording(context.Background())
	if rec != nil || !strings.Contains(errs.String(), "warning: history") {
		t.Errorf("a journal that cannot be made: rec=%v, stderr %q", rec, errs)
	}
	rec.record(context.Background(), history.Entry{}) // nil-safe
	rec.close()
	if rec.folded(context.Background(), "x") != 0 {
		t.Error("a nil recorder folded")
	}
	// A broken database: the call is still journalled; the fold that would
	// follow warns and leaves the records.
	errs.Reset()
	a.historyPath = file
	rec = a.startRecording(context.Background())
	if rec == nil {
		t.Fatalf("no recorder beside a broken database: %s", errs)
	}
	if id := rec.record(context.Background(), history.Entry{Target: "x", Method: "m"}); id == "" {
		t.Errorf("not journalled: %s", errs)
	}
	if _, err := a.openHistory(context.Background()); err == nil {
		t.Error("a broken database opened")
	}

	tg := target{Arg: "beardog", Name: "beardog", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}}
	req := ipc.Request{Method: "m", Params: json.RawMessage(`{}`), Pool: "p"}
	e := a.callEntry(tg, nil, req, nil, &ipc.TimeoutError{Method: "m", After: time.Second}, time.Now())
	if e.Outcome != history.OutcomeTimeout || e.Wire != "lean" || e.Transport != "unix" || e.Pool != "p" || e.Error == nil {
		t.Errorf("timeout entry: %+v", e)
	}
	resp := &ipc.Response{Error: &ipc.RPCError{Code: -32601, Message: "nope"}, Raw: json.RawMessage(`{"x":1}`)}
	e = a.callEntry(tg, nil, req, resp, resp.Error, time.Now())
	if e.Outcome != history.OutcomeError || e.Error.Code != -32601 || e.ResponseSize != 7 {
		t.Errorf("peer error entry: %+v", e)
	}
	if o := outcomeOf(context.Canceled); o != history.OutcomeCancelled {
		t.Errorf("cancelled: %s", o)
	}
}

func TestKnownSeedIsScrubbed(t *testing.T) {
	const seed = "SENTINEL-SEED-0123456789"
	path := filepath.Join(t.TempDir(), "history.db")
	a := &app{io: &stdio{err: &strings.Builder{}}, historyPath: path,
		getenv: func(k string) string { return map[string]string{"FAMILY_SEED": seed}[k] }}
	rec := a.startRecording(context.Background())
	if rec == nil {
		t.Fatal("no recorder")
	}
	id := rec.record(context.Background(), history.Entry{Target: "beardog", Method: "btsp.x",
		Params: json.RawMessage(`["` + seed + `"]`), Error: &history.RPCError{Message: "seed " + seed + " refused"}})
	rec.close()
	if id == "" {
		t.Fatal("not recorded")
	}
	recs, _ := filepath.Glob(filepath.Join(history.JournalDir(path), "*"))
	if len(recs) != 1 {
		t.Fatalf("journal holds %v", recs)
	}
	files := append(recs, path, path+"-wal")
	if rec.folded(context.Background(), id) == 0 {
		t.Fatal("not folded")
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), seed) {
			t.Errorf("the family seed is in %s", filepath.Base(f))
		}
	}
}
