package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// procStatusKB reads a field of /proc/pid/status in kB (VmRSS, VmHWM).
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field+":") {
			n, _ := strconv.Atoi(strings.Fields(l)[1])
			return n
		}
	}
	return 0
}

// TestLoadCrowdProcess runs the real binary in tmux at 120×35 over a
// directory of 2,000 sockets, 500 of them silent (they accept and never
// answer): when the first targets reach the screen, when all 2,000 are
// listed, and the resident memory once the first sweep is over.
func TestLoadCrowdProcess(t *testing.T) {
	needLoad(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
	dir := t.TempDir()
	// PRIMALSCOPE_LOAD_BIN measures another build (an older one, for a
	// before and after); PRIMALSCOPE_LOAD_ENV adds to its environment.
	bin := os.Getenv("PRIMALSCOPE_LOAD_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "primalscope")
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/primalscope").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	socks, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(socks)
	c, err := ipctest.StartCrowd(socks, 1500, 500)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &tmuxSession{t: t, socket: fmt.Sprintf("pscrowd%d", os.Getpid()), name: "ps"}
	s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "35", "sleep 600")
	s.endWithTest()
	pidFile := filepath.Join(dir, "pid")
	cmd := fmt.Sprintf("echo $$ > %s; exec env %s HOME=%s XDG_RUNTIME_DIR=%s %s --socket-dir %s --theme dark --no-history", pidFile, os.Getenv("PRIMALSCOPE_LOAD_ENV"), dir, dir, bin, socks)
	start := time.Now()
	s.tmux("respawn-pane", "-k", "-t", s.name, cmd)
	count := regexp.MustCompile(`Targets[ ─]*(\d+)`)
	listed := func(scr string) int {
		if m := count.FindStringSubmatch(scr); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return 0
	}
	var first, all, firstLive time.Duration
	for time.Since(start) < 60*time.Second && (all == 0 || firstLive == 0) {
		scr := s.screen(false)
		n := listed(scr)
		if n > 0 && first == 0 {
			first = time.Since(start)
		}
		if n >= 2000 && all == 0 {
			all = time.Since(start)
		}
		if firstLive == 0 && strings.Contains(scr, "● live") {
			firstLive = time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if all == 0 {
		t.Fatalf("not every target listed after 60 s:\n%s", s.screen(false))
	}
	if firstLive == 0 {
		t.Fatalf("no live row after 60 s (1,500 of the sockets answer):\n%s", s.screen(false))
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	time.Sleep(8 * time.Second) // the first sweep (silent sockets time out) and the listeners settle
	t.Logf("2,000 sockets (500 silent), 120×35: first targets on screen %v after exec, all 2,000 listed %v, first live row %v",
		first.Round(time.Millisecond), all.Round(time.Millisecond), firstLive.Round(time.Millisecond))
	t.Logf("resident: %d MB now, %d MB at most", procStatusKB(t, pid, "VmRSS")/1024, procStatusKB(t, pid, "VmHWM")/1024)
}

// TestLoadLargeAnswerProcess runs the demo in tmux, asks it for a 10 MiB
// answer (storage.artifact.get) and then a small one, and reports the
// resident memory before, while the large answer shows, and once the
// small one replaced it. The demo's primals live in the same process and
// keep the documents they served (cached by size): 10 MiB of the figures
// are theirs, not the TUI's.
func TestLoadLargeAnswerProcess(t *testing.T) {
	needLoad(t)
	bin := os.Getenv("PRIMALSCOPE_LOAD_BIN")
	if bin == "" {
		bin = e2eBinary(t)
	}
	s := startDemo(t, bin)
	out, _ := s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}")
	sh := strings.TrimSpace(out)
	kids, _ := os.ReadFile(filepath.Join("/proc", sh, "task", sh, "children"))
	pid, _ := strconv.Atoi(strings.Fields(string(kids) + " 0")[0])
	if pid == 0 {
		t.Fatal("no primalscope process under the pane")
	}
	rss := func() int { return procStatusKB(t, pid, "VmRSS") / 1024 }
	time.Sleep(3 * time.Second)
	before := rss()
	ask := func(method, params string, again bool) {
		if again { // the keyboard stayed in the composer's params
			s.send("Up", "C-u")
		} else {
			s.send("3", "C-u")
		}
		s.typeText(method)
		s.send("Down", "C-u")
		s.typeText(params)
		s.send("Enter")
		s.waitFor(method+" answered", 60*time.Second, func(scr string) bool {
			return strings.Contains(scr, "Response · "+method+" · ") && !strings.Contains(scr, "formatting")
		})
		time.Sleep(3 * time.Second)
		for _, l := range strings.Split(s.screen(false), "\n") {
			if strings.Contains(l, "Response · ") {
				t.Log(strings.TrimSpace(l))
			}
		}
	}
	s.pick("nestgate") // its storage serves the artifacts
	ask("storage.artifact.get", `{"id":"big","size_bytes":10485760}`, false)
	shown := rss()
	ask("health.liveness", `{}`, true)
	after := rss()
	t.Logf("resident: %d MB before, %d MB with a 10 MiB answer shown (+%d), %d MB once a small answer replaced it (+%d over before)",
		before, shown, shown-before, after, after-before)
}
