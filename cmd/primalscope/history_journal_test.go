package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

var buildMu sync.Mutex

// psBinary returns a primalscope to run as a child process, and its
// environment: the test binary itself (TestMain runs main), or under -race
// a plain build of this package, so that hundreds of children do not each
// carry the race detector.
func psBinary(t *testing.T, home string) (string, []string) {
	t.Helper()
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+home, "XDG_CONFIG_HOME="+home,
		"PRIMALSCOPE_HISTORY="+filepath.Join(home, "history.db"))
	if !raceEnabled {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		return exe, append(env, "PRIMALSCOPE_TEST_AS_MAIN=1")
	}
	bin := filepath.Join(t.TempDir(), "primalscope")
	buildMu.Lock() // one build at a time; the second only links
	defer buildMu.Unlock()
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin, env
}

// echoPeer answers "echo" with the params it got and pad bytes of padding.
func echoPeer(t *testing.T, pad int) string {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "echo.sock")
	filler := strings.Repeat("p", pad)
	srv, err := ipctest.Listen(sock, ipctest.Config{Concurrent: true, Methods: map[string]ipctest.HandlerFunc{
		"echo": func(_ context.Context, params json.RawMessage) (any, error) {
			return json.RawMessage(`{"got":` + string(params) + `,"pad":"` + filler + `"}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return sock
}

// historyParams folds the journal as the history command does and returns
// how many times each params document is in history.
func historyParams(t *testing.T, home string) map[string]int {
	t.Helper()
	r := runCLI(t, map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")},
		"", "history", "--json", "--limit", "0")
	if r.code != 0 {
		t.Fatalf("history: %+v", r)
	}
	var es []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, e := range es {
		got[string(e.Params)]++
	}
	return got
}

func checkIntegrity(t *testing.T, home string) {
	t.Helper()
	s, err := history.Open(context.Background(), filepath.Join(home, "history.db"), history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Check(context.Background()); err != nil {
		t.Error(err)
	}
	if left, _ := filepath.Glob(filepath.Join(history.JournalDir(s.Path()), "*")); len(left) != 0 {
		t.Errorf("left in the journal after a fold: %v", left)
	}
}

// A call killed (SIGKILL) while it prints its answer has recorded it: the
// answer is 1 MiB, so the child is blocked writing to the full pipe when
// the test has read its first bytes and kills it.
func TestKilledCallKeepsItsPrintedAnswer(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	bin, env := psBinary(t, home)
	sock := echoPeer(t, 1<<20)
	const calls = 5
	for i := 0; i < calls; i++ {
		cmd := exec.Command(bin, "call", "--timeout", "30s", sock, "echo", fmt.Sprintf(`{"n":%d}`, i))
		cmd.Env = env
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if _, err := io.ReadFull(stdout, buf); err != nil {
			t.Fatalf("call %d printed nothing: %v (%s)", i, err, stderr.String())
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("call %d was not killed mid-print: %v (%s)", i, cmd.ProcessState, stderr.String())
		}
	}
	got := historyParams(t, home)
	for i := 0; i < calls; i++ {
		if p := fmt.Sprintf(`{"n":%d}`, i); got[p] != 1 {
			t.Errorf("call %d, killed after it printed, is in history %d times", i, got[p])
		}
	}
	checkIntegrity(t, home)
}

// Calls of a 2 MiB answer killed (SIGKILL) at every stage of printing it,
// from before its first byte to after its last: whenever the output is
// complete (and whenever any of it was printed) the call is in history
// after a fold. The answer is rendered while its record is written, so
// this is the race the held-back output must win.
func TestKilledDuringPrintingKeepsCompleteAnswers(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	bin, env := psBinary(t, home)
	const size = 2 << 20 // the answer is a little more
	sock := echoPeer(t, size)
	const calls = 8
	printed := map[int]bool{}
	complete := 0
	for i := 0; i < calls; i++ {
		cmd := exec.Command(bin, "call", "--timeout", "30s", sock, "echo", fmt.Sprintf(`{"k":%d}`, i))
		cmd.Env = env
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Read a different share of the answer each time (none, some, all),
		// then kill.
		want := int64(i) * (size + size/4) / (calls - 2)
		var tail tailWriter
		n, _ := io.Copy(&tail, io.LimitReader(stdout, want))
		if i >= calls-2 {
			m, _ := io.Copy(&tail, stdout) // to the end: the process may exit first
			n += m
		}
		cmd.Process.Kill()
		cmd.Wait()
		if n > 0 {
			printed[i] = true
		}
		if n > size && string(tail.last) == "}\n" {
			complete++
		}
	}
	if complete == 0 {
		t.Fatal("no call printed its whole answer: the test saw nothing of what it checks")
	}
	got := historyParams(t, home)
	for i := range printed {
		if p := fmt.Sprintf(`{"k":%d}`, i); got[p] != 1 {
			t.Errorf("call %d printed (part of) its answer before it was killed, but is in history %d times", i, got[p])
		}
	}
	checkIntegrity(t, home)
}

// tailWriter keeps the last two bytes written to it.
type tailWriter struct{ last []byte }

func (w *tailWriter) Write(p []byte) (int, error) {
	w.last = append(w.last, p...)
	if len(w.last) > 2 {
		w.last = append(w.last[:0], w.last[len(w.last)-2:]...)
	}
	return len(p), nil
}

// 200 calls at once, each its own process: every answer printed is in
// history once, and the database is sound. Not parallel: it loads the
// machine, and the other process tests measure time.
func TestManyCallProcessesLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("200 processes")
	}
	home := t.TempDir()
	bin, env := psBinary(t, home)
	sock := echoPeer(t, 200)
	const n = 200
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(bin, "call", "--timeout", "60s", sock, "echo", fmt.Sprintf(`{"n":%d}`, i))
			cmd.Env = env
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			outs[i] = string(out)
			if err != nil {
				errs[i] = fmt.Errorf("%w: %s", err, stderr.String())
			} else if stderr.Len() > 0 {
				errs[i] = fmt.Errorf("stderr: %s", stderr.String())
			}
		}(i)
	}
	wg.Wait()
	got := historyParams(t, home)
	printed := 0
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Errorf("call %d: %v", i, errs[i])
		}
		if !strings.Contains(outs[i], fmt.Sprintf(`"n": %d`, i)) {
			continue
		}
		printed++
		if p := fmt.Sprintf(`{"n":%d}`, i); got[p] != 1 {
			t.Errorf("call %d printed its answer and is in history %d times", i, got[p])
		}
	}
	if printed != n {
		t.Errorf("%d of %d calls printed their answer", printed, n)
	}
	checkIntegrity(t, home)
}

// Another process holding the database's write lock does not hold a call
// up: it exits 0 within its --timeout, and its entry is there once the
// lock is gone and a fold runs. The journal is past the fold backlog, so
// the call does try to fold.
func TestCallBesideHeldWriteLock(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	bin, env := psBinary(t, home)
	sock := echoPeer(t, 10)
	path := filepath.Join(home, "history.db")
	ctx := context.Background()
	j, err := history.OpenJournal(path, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < foldBacklog+5; i++ {
		if _, err := j.Append(history.Entry{Target: "old", Method: "m", Params: json.RawMessage(fmt.Sprintf(`{"old":%d}`, i))}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := history.Open(ctx, path, history.Options{}) // make the database
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	const timeout = time.Second
	for i := 0; i < 3; i++ {
		cmd := exec.Command(bin, "call", "--timeout", timeout.String(), sock, "echo", fmt.Sprintf(`{"locked":%d}`, i))
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		t0 := time.Now()
		out, err := cmd.Output()
		took := time.Since(t0)
		if err != nil || !strings.Contains(string(out), `"locked": `) || stderr.Len() > 0 {
			t.Errorf("call %d beside a held lock: %v %q %q", i, err, out, stderr.String())
		}
		if took > timeout+time.Second {
			t.Errorf("call %d took %s beside a held lock (--timeout %s)", i, took, timeout)
		}
	}
	if n, _ := j.Pending(); n != foldBacklog+5+3 {
		t.Errorf("%d records pending while the lock was held", n)
	}
	// Reading history beside the lock waits for it only so long, then
	// shows what is folded, with a warning.
	t0 := time.Now()
	r := runCLI(t, map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": path}, "", "history", "--json")
	if took := time.Since(t0); r.code != 0 || !strings.Contains(r.stderr, "may not be shown yet") || took > recordWait+time.Second {
		t.Errorf("history beside a held lock: %+v after %s", r, took)
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	got := historyParams(t, home)
	for i := 0; i < 3; i++ {
		if p := fmt.Sprintf(`{"locked":%d}`, i); got[p] != 1 {
			t.Errorf("call %d is in history %d times after the lock went", i, got[p])
		}
	}
	if len(got) != foldBacklog+5+3 {
		t.Errorf("%d calls in history", len(got))
	}
	checkIntegrity(t, home)
}

// A call with a journal past the backlog folds it after printing.
func TestCallFoldsBacklog(t *testing.T) {
	home := t.TempDir()
	sock := echoPeer(t, 10)
	path := filepath.Join(home, "history.db")
	j, err := history.OpenJournal(path, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": path}
	for i := 0; i < foldBacklog-2; i++ {
		j.Append(history.Entry{Target: "old", Method: "m"})
	}
	if r := runCLI(t, env, "", "call", sock, "echo", "{}"); r.code != 0 {
		t.Fatal(r)
	}
	if n, _ := j.Pending(); n != foldBacklog-1 {
		t.Fatalf("below the backlog: %d pending", n)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a call below the backlog made the database")
	}
	if r := runCLI(t, env, "", "call", sock, "echo", "{}"); r.code != 0 {
		t.Fatal(r)
	}
	if n, _ := j.Pending(); n != 0 {
		t.Errorf("at the backlog: %d still pending", n)
	}
	if c := countHistory(t, path); c != foldBacklog {
		t.Errorf("%d calls in history", c)
	}
}

// A peer that echoes the params everywhere (error message, error data,
// result) gets no secret kept: not in `history --json`, not found by the
// full-text search, not in any export, not in any file.
func TestSecretsNeverReachHistoryCLI(t *testing.T) {
	home := t.TempDir()
	path := filepath.Join(home, "history.db")
	env := map[string]string{"HOME": home, "PRIMALSCOPE_HISTORY": path}
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "echo.sock")
	srv, err := ipctest.Listen(sock, ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"login": func(_ context.Context, p json.RawMessage) (any, error) {
			return nil, &ipc.RPCError{Code: -32602, Message: "invalid params: " + string(p), Data: json.RawMessage(`{"echo":` + string(p) + `,"text":"got ` + strings.ReplaceAll(string(p), `"`, `'`) + `"}`)}
		},
		"whoami": func(_ context.Context, p json.RawMessage) (any, error) {
			return json.RawMessage(`{"echo":` + string(p) + `,"session":{"sessionId":"sess-SECRET-1"}}`), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	params := `{"user":"bob","password":"hunter2-SECRET","otp":"918273","apiKey":"k-SECRET-77","Pin":4821}`
	secrets := []string{"hunter2", "SECRET", "918273", "4821"}
	if r := runCLI(t, env, "", "call", sock, "login", params); r.code != 1 || !strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("login: %+v", r) // the screen shows what the peer said; history must not keep it
	}
	if r := runCLI(t, env, "", "call", sock, "whoami", params); r.code != 0 {
		t.Fatalf("whoami: %+v", r)
	}
	check := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s holds %q:\n%s", what, s, text)
			}
		}
	}
	r := runCLI(t, env, "", "history", "--json")
	var es []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil || len(es) != 2 {
		t.Fatalf("history --json: %+v %v", r, err)
	}
	check("history --json", r.stdout)
	if !strings.Contains(r.stdout, "invalid params") || !strings.Contains(r.stdout, `"user":"bob"`) {
		t.Errorf("history lost what is not secret: %s", r.stdout)
	}
	for _, q := range secrets {
		if r := runCLI(t, env, "", "history", q); r.code != 0 || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("history %s found: %+v", q, r)
		}
	}
	for _, e := range es {
		for _, as := range []string{"command", "socat", "json"} {
			r := runCLI(t, env, "", "history", "export", fmt.Sprint(e.ID), "--as", as)
			if r.code != 0 || !strings.Contains(r.stdout, "[redacted]") {
				t.Errorf("export %d --as %s: %+v", e.ID, as, r)
			}
			check("export --as "+as, r.stdout)
		}
	}
	files, _ := filepath.Glob(path + "*")
	more, _ := filepath.Glob(filepath.Join(history.JournalDir(path), "*"))
	for _, f := range append(files, more...) {
		if b, err := os.ReadFile(f); err == nil {
			for _, s := range []string{"hunter2", "k-SECRET", "918273"} {
				if strings.Contains(string(b), s) {
					t.Errorf("%s holds %q", f, s)
				}
			}
		}
	}
}
