package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tmuxSession drives one program in a private tmux server.
type tmuxSession struct {
	t      *testing.T
	socket string
	name   string
}

func (s *tmuxSession) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxSession) send(keys ...string) {
	s.t.Helper()
	for _, k := range keys {
		if _, err := s.tmux("send-keys", "-t", s.name, k); err != nil {
			s.t.Fatalf("send-keys %q: %v", k, err)
		}
	}
}

// typeText types literal text.
func (s *tmuxSession) typeText(text string) {
	s.t.Helper()
	if _, err := s.tmux("send-keys", "-t", s.name, "-l", text); err != nil {
		s.t.Fatalf("send-keys -l %q: %v", text, err)
	}
}

func (s *tmuxSession) screen(escapes bool) string {
	args := []string{"capture-pane", "-p", "-t", s.name}
	if escapes {
		args = append(args, "-e")
	}
	out, _ := s.tmux(args...)
	return out
}

// quitChildren sends SIGQUIT to the processes the pane's shell started
// (by their ids), so a hung Go program prints its goroutines.
func (s *tmuxSession) quitChildren() {
	out, err := s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}")
	if err != nil {
		return
	}
	pid := strings.TrimSpace(out)
	kids, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
	for _, k := range strings.Fields(string(kids)) {
		if n, err := strconv.Atoi(k); err == nil {
			syscall.Kill(n, syscall.SIGQUIT)
		}
	}
}

// e2eBinary builds the real binary for an end-to-end test, skipping the
// test in -short mode or without tmux.
func e2eBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the end-to-end TUI test needs it (apt-get install tmux)")
	}
	bin := filepath.Join(t.TempDir(), "primalscope")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/primalscope").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// endWithTest kills the session's tmux server when the test ends and
// removes the socket file the server leaves behind.
func (s *tmuxSession) endWithTest() {
	sock, _ := s.tmux("display-message", "-p", "#{socket_path}")
	s.t.Cleanup(func() {
		s.tmux("kill-server")
		if p := strings.TrimSpace(sock); strings.HasSuffix(p, s.socket) {
			os.Remove(p)
		}
	})
}

// demoTmux starts bin's `demo --theme dark` (and args) at w×h in a private
// tmux server (-L), as a person would in a terminal, with HOME, the XDG
// directories and TMPDIR (where the demo makes its sockets) under a fresh
// directory, which it returns; the program's stderr goes to stderr there,
// and the shell prints PRIMALSCOPE-EXIT=<status> when it ends. Cleanup stops
// the program by its id (SIGTERM, SIGKILL after 5 s) so it ends before its
// directory goes, kills the server and removes the socket file tmux leaves.
func demoTmux(t *testing.T, bin string, w, h int, args ...string) (*tmuxSession, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pse2e") // short: the demo's sockets go under it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	s := &tmuxSession{t: t, socket: fmt.Sprintf("pse2e%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")), name: "ps"}
	env := fmt.Sprintf("env -i PATH=%s HOME=%s TMPDIR=%s XDG_CONFIG_HOME=%s/config XDG_STATE_HOME=%s/state XDG_RUNTIME_DIR=%s TERM=xterm-256color COLORTERM=truecolor",
		os.Getenv("PATH"), home, dir, home, home, dir)
	cmdline := fmt.Sprintf("%s %s demo --theme dark %s 2>%s/stderr; echo PRIMALSCOPE-EXIT=$?; sleep 30",
		env, bin, strings.Join(args, " "), dir)
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), cmdline); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		sock, _ := s.tmux("display-message", "-p", "#{socket_path}")
		s.stopChildren(5 * time.Second)
		s.tmux("kill-server")
		if sock = strings.TrimSpace(sock); strings.HasSuffix(sock, s.socket) {
			os.Remove(sock)
		}
	})
	return s, dir
}

// waitFor polls the screen until cond holds, failing after limit.
func (s *tmuxSession) waitFor(what string, limit time.Duration, cond func(screen string) bool) string {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	var scr string
	for time.Now().Before(deadline) {
		scr = s.screen(false)
		if cond(scr) {
			return scr
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("waiting for %s: not on screen after %s. Screen:\n%s", what, limit, scr)
	return ""
}

func (s *tmuxSession) waitText(text string, limit time.Duration) string {
	s.t.Helper()
	return s.waitFor(fmt.Sprintf("%q", text), limit, func(scr string) bool { return strings.Contains(scr, text) })
}

// paneLines returns the text inside the pane whose title contains title,
// for a layout where that pane spans columns [x0, x1) of the screen.
func rowsContaining(scr, text string) []int {
	var out []int
	for i, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, text) {
			out = append(out, i)
		}
	}
	return out
}

// TestEndToEndDemo builds the real binary and drives `primalscope demo` in
// tmux as a new user would: pick a primal, open a domain, pick a method,
// edit params, send, read the highlighted answer, filter it with jq, watch
// heartbeats arrive in the events tail, open help, quit.
func TestEndToEndDemo(t *testing.T) {
	s, dir := demoTmux(t, e2eBinary(t), 150, 45, "--tick", "500ms")
	stderr := filepath.Join(dir, "stderr")

	// 1. The targets appear, live.
	s.waitFor("live targets", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "rhizocrypt") && strings.Contains(scr, "● nestgate") && regexp.MustCompile(`\d+ live`).MatchString(scr)
	})

	// 2. Pick a primal: filter the list to rhizocrypt and open it.
	s.send("/")
	s.typeText("rhizo")
	s.send("Enter")
	s.waitFor("the filtered list", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "rhizocrypt") && !strings.Contains(scr, "● nestgate")
	})
	s.send("Enter")
	scr := s.waitFor("rhizocrypt's capability tree", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "╭─ rhizocrypt") && strings.Contains(scr, "▸ dag")
	})

	// 3. Open the dag domain: walk the cursor down to it.
	rows := strings.Split(scr, "\n")
	cur, dag := -1, -1
	for i, l := range rows {
		if strings.Contains(l, "›▸") || strings.Contains(l, "›▾") {
			cur = i
		}
		if strings.Contains(l, "▸ dag") {
			dag = i
		}
	}
	if cur < 0 || dag < cur {
		t.Fatalf("cannot find the cursor (%d) and the dag domain (%d):\n%s", cur, dag, scr)
	}
	for i := cur; i < dag; i++ {
		s.send("j")
	}
	s.send("Enter")
	s.waitText("▾ dag", 5*time.Second)

	// 4. Pick dag.merkle.root: the methods are sorted under the domain.
	scr = s.waitText("merkle.root", 5*time.Second)
	d := rowsContaining(scr, "▾ dag")
	m := rowsContaining(scr, "merkle.root")
	if len(d) == 0 || len(m) == 0 || m[0] <= d[0] {
		t.Fatalf("merkle.root is not under dag:\n%s", scr)
	}
	for i := d[0]; i < m[0]; i++ {
		s.send("j")
	}
	s.send("Enter")
	s.waitFor("the composer with dag.merkle.root", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "method dag.merkle.root") && strings.Contains(scr, "params {}")
	})

	// 5. Edit params: a mistake is pointed at, then fixed.
	s.send("C-u")
	s.typeText(`{"session_id":"sess-0001",}`)
	s.waitText("✗ col 27", 5*time.Second)
	s.send("BSpace", "BSpace")
	s.typeText(`}`)
	s.waitFor("valid params", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, `params {"session_id":"sess-0001"}`) && strings.Contains(scr, "✓ JSON")
	})

	// 6. Send and see the answer, highlighted.
	s.send("Enter")
	scr = s.waitFor("the answer", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "Response · dag.merkle.root · ok") && strings.Contains(scr, `"root": "`)
	})
	colored := false
	for _, l := range strings.Split(s.screen(true), "\n") {
		if strings.Contains(l, "root") && strings.Contains(l, "\x1b[") && strings.Contains(l, "38;") {
			colored = true
		}
	}
	if !colored {
		t.Fatalf("the answer is not highlighted:\n%q", s.screen(true))
	}

	// 7. Filter it with jq: the focus stayed in the composer; tab goes on
	// to the answer.
	s.send("Tab")
	s.send(":")
	s.typeText(".root")
	s.send("Enter")
	s.waitFor("the jq result", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "jq: .root") && regexp.MustCompile(`›\s+"[0-9a-f]{16,}"`).MatchString(scr) && !strings.Contains(scr, `"events":`)
	})

	// 8. Open the events tail and see heartbeats arrive.
	s.send("e")
	s.waitText("╭─ Events", 5*time.Second)
	count := func(scr string) int { return strings.Count(scr, "health.heartbeat") }
	first := s.waitFor("heartbeats", 10*time.Second, func(scr string) bool { return count(scr) > 0 })
	stamp := regexp.MustCompile(`(\d\d:\d\d:\d\d) ♥`)
	last := func(scr string) string {
		all := stamp.FindAllStringSubmatch(scr, -1)
		if len(all) == 0 {
			return ""
		}
		return all[len(all)-1][1]
	}
	before := last(first)
	s.waitFor("a newer heartbeat", 10*time.Second, func(scr string) bool { return last(scr) != before && last(scr) != "" })

	// 9. Help, then close it.
	s.send("?")
	s.waitFor("the help overlay", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "Help · keys") && strings.Contains(scr, "jq filter") && strings.Contains(scr, "remappable")
	})
	s.send("Escape")
	s.waitFor("help closed", 5*time.Second, func(scr string) bool { return !strings.Contains(scr, "Help · keys") })

	// 10. Quit: the terminal is restored and the exit status is 0.
	s.send("q")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.screen(false), "PRIMALSCOPE-EXIT=0") {
		if time.Now().After(deadline) {
			// Still running: ask Go for its goroutines to say why.
			s.quitChildren()
			time.Sleep(time.Second)
			dump, _ := os.ReadFile(stderr)
			t.Fatalf("no clean exit 10 s after q. Screen:\n%s\nstderr:\n%s", s.screen(false), dump)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
