package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// slack is what the wall-time checks allow over --timeout: the promise is
// --timeout + 200 ms (deadlineMargin); the rest keeps a loaded 2-core
// machine under -race from failing the test. The measured figure is logged.
const slack = 1500 * time.Millisecond

// backstopFired reports whether the command was cut by the backstop (its
// one line, alone), rather than ending by itself.
func backstopFired(stderr string) bool { return strings.Contains(stderr, " (--timeout)\n") }

func hostileWS(t *testing.T, cfg ipctest.HostileWSConfig) *ipctest.HostileWS {
	t.Helper()
	s, err := ipctest.ListenHostileWS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// timedCall runs `call URL METHOD` in-process with --timeout and reports
// the result and the wall time.
func timedCall(t *testing.T, url, timeout string, extra ...string) (result, time.Duration) {
	t.Helper()
	env := map[string]string{"HOME": t.TempDir()}
	args := append([]string{"call", "--timeout", timeout}, extra...)
	args = append(args, url, "test.echo", `{"n":1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCLICtx(ctx, env, "", args...)
}

// ranOut reports whether a command's stderr says its --timeout ran out
// (in the dial, the write or the wait for the answer).
func ranOut(stderr string) bool {
	for _, s := range []string{"(--timeout): ", "no answer within", "did not read the request"} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// timedCallHome is timedCall with history in home.
func timedCallHome(t *testing.T, home, url string) (result, time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCLICtx(ctx, map[string]string{"HOME": home}, "", "call", url, "test.echo")
}

// TestWebSocketHostileTimeouts: against each hostile WebSocket peer the
// command ends within --timeout (plus the margin) on its own, not by the
// command-level backstop.
func TestWebSocketHostileTimeouts(t *testing.T) {
	cases := []struct {
		name    string
		cfg     ipctest.HostileWSConfig
		timeout time.Duration
		code    int
		text    string // in stdout+stderr
	}{
		{"never-closes", ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, NeverClose: true}, 4 * time.Second, 0, `"ok": true`},
		{"huge-header", ipctest.HostileWSConfig{Mode: ipctest.WSHugeHeader, NeverClose: true}, time.Second, 3, "larger than"},
		{"huge-header-stall", ipctest.HostileWSConfig{Mode: ipctest.WSHugeHeaderStall, NeverClose: true}, time.Second, 4, "no answer within"},
		{"fragment-flood", ipctest.HostileWSConfig{Mode: ipctest.WSFragmentFlood, NeverClose: true}, 4 * time.Second, 4, "no answer within"},
		{"ping-flood", ipctest.HostileWSConfig{Mode: ipctest.WSPingFlood, NeverClose: true}, 4 * time.Second, 4, "no answer within"},
		{"silent", ipctest.HostileWSConfig{Mode: ipctest.WSSilent, NeverClose: true}, time.Second, 4, "no answer within"},
		{"stalled-upgrade", ipctest.HostileWSConfig{Mode: ipctest.WSStallUpgrade}, time.Second, 3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := hostileWS(t, tc.cfg)
			r, took := timedCall(t, s.URL, tc.timeout.String())
			t.Logf("%s: --timeout %s: exit %d in %s", tc.name, tc.timeout, r.code, took.Round(time.Millisecond))
			if r.code != tc.code {
				t.Errorf("exit %d, want %d: %+v", r.code, tc.code, r)
			}
			if !strings.Contains(r.stdout+r.stderr, tc.text) {
				t.Errorf("output lacks %q: %+v", tc.text, r)
			}
			if backstopFired(r.stderr) {
				t.Errorf("the backstop fired: the transport itself must end in time: %s", r.stderr)
			}
			if took > tc.timeout+slack {
				t.Errorf("took %s with --timeout %s", took, tc.timeout)
			}
		})
	}
}

// TestWebSocketConcurrentCallsBounded: 20 calls at once, each with
// --timeout 500ms, half to a peer that never sends its close frame and
// half to one that never answers; every one ends within its bound.
func TestWebSocketConcurrentCallsBounded(t *testing.T) {
	answering := hostileWS(t, ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, NeverClose: true})
	silent := hostileWS(t, ipctest.HostileWSConfig{Mode: ipctest.WSSilent, NeverClose: true})
	const timeout = 500 * time.Millisecond
	home := t.TempDir() // one history for all, as on a real machine
	if r, _ := timedCallHome(t, home, answering.URL); r.code != 0 {
		t.Fatalf("warm-up call (creates the history): %+v", r)
	}
	var wg sync.WaitGroup
	type out struct {
		r    result
		took time.Duration
		want int
	}
	outs := make([]out, 20)
	for i := range outs {
		url, want := answering.URL, 0
		if i%2 == 1 {
			url, want = silent.URL, 4
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, took := runCLICtx(ctx, map[string]string{"HOME": home}, "", "call", "--timeout", timeout.String(), url, "test.echo", `{"n":1}`)
			outs[i] = out{r, took, want}
		}()
	}
	wg.Wait()
	var slowest time.Duration
	late := 0
	for i, o := range outs {
		slowest = max(slowest, o.took)
		switch {
		case o.r.code == o.want:
		case (o.r.code == exitTimeout || o.r.code == exitConnect) && ranOut(o.r.stderr):
			// The budget ran out before the answer came (dialling
			// included): right under --timeout, on a loaded machine.
			late++
		default:
			t.Errorf("call %d: exit %d, want %d: %+v", i, o.r.code, o.want, o.r)
		}
		if backstopFired(o.r.stderr) {
			t.Errorf("call %d: the backstop fired: %s", i, o.r.stderr)
		}
	}
	if late == len(outs) {
		t.Errorf("every call ran out of time")
	}
	t.Logf("20 concurrent calls, --timeout %s: slowest %s (%d ran out of time)", timeout, slowest.Round(time.Millisecond), late)
	if slowest > timeout+slack {
		t.Errorf("slowest call took %s with --timeout %s", slowest, timeout)
	}
}

// TestWebSocketIDsMatchExactly: an answer whose id is not exactly the one
// sent (the string "1" is sent on Holon-RPC) is not taken as the answer:
// the call times out, within its timeout, and the trace names the id.
func TestWebSocketIDsMatchExactly(t *testing.T) {
	for _, id := range []string{`1`, `"01"`, `" 1"`, `null`, `"c1"`} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			s := hostileWS(t, ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, AnswerID: json.RawMessage(id)})
			r, took := timedCall(t, s.URL, "500ms")
			if r.code != 4 {
				t.Fatalf("id %s: exit %d, want 4 (not an answer): %+v", id, r.code, r)
			}
			if took > 500*time.Millisecond+slack {
				t.Errorf("id %s: took %s", id, took)
			}
			if s.Requests() != 1 {
				t.Errorf("id %s: the peer got %d requests", id, s.Requests())
			}
			want := fmt.Sprintf("id %s", id)
			if id == "null" {
				want = "result with a null id"
			}
			if !strings.Contains(r.stderr, want) {
				t.Errorf("id %s: the timeout does not name the answer (%q): %s", id, want, r.stderr)
			}
		})
	}
}

// bigAnswerPeer answers big.answer with a string of n bytes.
func bigAnswerPeer(t *testing.T, n int) string {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	big := strings.Repeat("x", n)
	s, err := ipctest.Listen(filepath.Join(dir, "big.sock"), ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"big.answer": func(context.Context, json.RawMessage) (any, error) { return big, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Path
}

// child runs primalscope as a real process (the test binary as main) with
// stdout going to out, and reports its exit code and wall time.
func child(t *testing.T, out *os.File, stderr *bytes.Buffer, args ...string) (int, time.Duration) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "PRIMALSCOPE_TEST_AS_MAIN=1", "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir, "GORACE=atexit_sleep_ms=0")
	cmd.Stdout, cmd.Stderr = out, stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
		}
	}()
	err = cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), took
}

// TestBackstopEndsAStuckProcess: the answer is being printed to a pipe
// nobody reads, so the write blocks for ever; the process still ends
// within --timeout + the margin, with exit 4 and one line saying why.
func TestBackstopEndsAStuckProcess(t *testing.T) {
	t.Parallel()
	sock := bigAnswerPeer(t, 256<<10) // more than a pipe holds
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var stderr bytes.Buffer
	code, took := child(t, w, &stderr, "call", "--no-history", "--timeout", "2s", sock, "big.answer")
	w.Close()
	t.Logf("stuck on stdout, --timeout 2s: exit %d after %s", code, took.Round(time.Millisecond))
	if code != exitTimeout {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitTimeout, stderr.String())
	}
	if got := stderr.String(); got != "primalscope: timed out after 2s (--timeout)\n" {
		t.Errorf("stderr %q", got)
	}
	if took > 2*time.Second+slack {
		t.Errorf("took %s with --timeout 2s", took)
	}
}

// TestBackstopSparesAFinishedCommand: the same big answer, read as it is
// printed, arrives whole; the backstop never speaks.
func TestBackstopSparesAFinishedCommand(t *testing.T) {
	t.Parallel()
	sock := bigAnswerPeer(t, 1<<20)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		got <- b
	}()
	var stderr bytes.Buffer
	code, took := child(t, w, &stderr, "call", "--timeout", "3s", sock, "big.answer")
	w.Close()
	out := <-got
	t.Logf("exit %d after %s", code, took.Round(time.Millisecond))
	if code != 0 || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	if len(out) < 1<<20 || !strings.HasSuffix(string(out), "\"\n") {
		t.Errorf("the answer was cut: %d bytes", len(out))
	}
}

// TestWithinDeadline: the backstop in-process. A command stuck past its
// bound returns exit 4 at once, with one line, its context cancelled and
// its later writes dropped; one that ends in time is left alone, even when
// it ends near the bound.
func TestWithinDeadline(t *testing.T) {
	t.Parallel()
	var out, errb syncBuffer
	a := &app{io: &stdio{out: &out, err: &errb}, timeout: 300 * time.Millisecond}
	stuck := make(chan struct{})
	release := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	err := a.withinDeadline(cancel, start.Add(a.timeout+deadlineMargin), func() error {
		defer close(finished)
		fmt.Fprint(a.io.out, "partial ")
		close(stuck)
		<-release
		fmt.Fprint(a.io.out, "late")
		fmt.Fprint(a.io.err, "late")
		return nil
	})
	took := time.Since(start)
	if exitCode(err) != exitTimeout || !isQuiet(err) {
		t.Fatalf("err %v (exit %d)", err, exitCode(err))
	}
	if took < a.timeout+deadlineMargin || took > a.timeout+deadlineMargin+slack {
		t.Errorf("cut after %s, want %s", took, a.timeout+deadlineMargin)
	}
	<-stuck
	if ctx.Err() == nil {
		t.Error("the abandoned command's context was not cancelled")
	}
	close(release)
	<-finished
	if out.String() != "partial " || errb.String() != "primalscope: timed out after 300ms (--timeout)\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}

	var out2, errb2 syncBuffer
	a2 := &app{io: &stdio{out: &out2, err: &errb2}, timeout: 300 * time.Millisecond}
	hard := time.Now().Add(a2.timeout + deadlineMargin)
	ctx2 := withWaitDeadline(context.Background(), hard.Add(-deadlineMargin/2))
	err = a2.withinDeadline(func() {}, hard, func() error {
		time.Sleep(a2.timeout + deadlineMargin/2) // a slow finish, inside the margin
		if _, ok := ctx2.Value(waitDeadlineKey{}).(time.Time); !ok {
			t.Error("no wait deadline for history and closes")
		}
		bctx, cancel := boundWait(ctx2)
		defer cancel()
		if dl, _ := bctx.Deadline(); dl.After(hard.Add(-deadlineMargin / 2)) {
			t.Errorf("boundWait allows until %s, past the command's bound", dl)
		}
		fmt.Fprint(a2.io.out, "answer")
		return nil
	})
	if err != nil || out2.String() != "answer" || errb2.String() != "" {
		t.Errorf("a command that ended in time was cut: %v %q %q", err, out2.String(), errb2.String())
	}
}

// TestBackstopLeavesLongRunningCommandsAlone: tail, ls --watch and demo run
// until interrupted; --timeout bounds their calls, not them.
func TestBackstopLeavesLongRunningCommandsAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	r, took := runCLICtx(ctx, map[string]string{"HOME": dir}, "", "ls", "--watch", "--timeout", "200ms", "--socket-dir", dir, "--no-proc")
	if backstopFired(r.stderr) || took < 800*time.Millisecond {
		t.Errorf("ls --watch was cut after %s: %+v", took, r)
	}
}

// TestWithinDeadlineOwnProcess: when primalscope is its own process, the
// command runs on the caller's goroutine (no goroutine of its own to start
// and grow for every one-shot call), and the backstop still cuts a stuck
// command at its bound: one line, its context cancelled, exit 4 (here a
// stand-in for os.Exit; TestBackstopEndsAStuckProcess runs the real one).
func TestWithinDeadlineOwnProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outf, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outf.Close()
	errf, err := os.Create(filepath.Join(dir, "err"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	a := &app{io: &stdio{out: outf, err: errf}, timeout: time.Second}
	if !a.ownsProcess() {
		t.Fatal("files as streams: the process is not its own")
	}
	var stack []byte
	err = a.withinDeadline(func() {}, time.Now().Add(time.Minute), func() error {
		stack = make([]byte, 64<<10)
		stack = stack[:runtime.Stack(stack, false)]
		return errors.New("the command's own error")
	})
	if err == nil || err.Error() != "the command's own error" {
		t.Errorf("err %v", err)
	}
	if strings.Contains(string(stack), ".(*app).withinDeadline in goroutine") || !strings.Contains(string(stack), "TestWithinDeadlineOwnProcess") {
		t.Errorf("the command did not run on the caller's goroutine:\n%s", stack)
	}

	// Cut at the bound.
	a.timeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	release := make(chan struct{})
	start := time.Now()
	hard := start.Add(a.timeout + deadlineMargin)
	done := make(chan error, 1)
	go func() {
		done <- a.withinDeadlineExit(cancel, hard, func() error {
			<-release
			return nil
		}, func(code int) { exited <- code })
	}()
	select {
	case code := <-exited:
		if took := time.Since(start); code != exitTimeout || took < a.timeout+deadlineMargin || took > a.timeout+deadlineMargin+slack {
			t.Errorf("exit %d after %s, want %d after %s", code, took, exitTimeout, a.timeout+deadlineMargin)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stuck command was not cut")
	}
	if ctx.Err() == nil {
		t.Error("the cut command's context was not cancelled")
	}
	close(release)
	if err := <-done; exitCode(err) != exitTimeout {
		t.Errorf("after the cut: %v", err)
	}
	if b, _ := os.ReadFile(errf.Name()); string(b) != "primalscope: timed out after 200ms (--timeout)\n" {
		t.Errorf("stderr %q", b)
	}

	// A command that ends in time is not cut, and the timer is stopped.
	exited2 := make(chan int, 1)
	err = a.withinDeadlineExit(func() {}, time.Now().Add(a.timeout), func() error { return nil }, func(code int) { exited2 <- code })
	if err != nil {
		t.Errorf("err %v", err)
	}
	time.Sleep(a.timeout + 50*time.Millisecond)
	select {
	case code := <-exited2:
		t.Errorf("a command that ended in time was cut later: exit %d", code)
	default:
	}
}
