package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestCompletionBashInTmux builds the real binary, sources `primalscope
// completion bash` in a bash inside tmux, and completes a TARGET and a
// METHOD with Tab, as a person would.
func TestCompletionBashInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	for _, tool := range []string{"tmux", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the completion end-to-end test needs it", tool)
		}
	}
	// cobra's bash script stands on the bash-completion package, as
	// every bash completion does.
	bashCompletion := ""
	for _, p := range []string{"/usr/share/bash-completion/bash_completion", "/etc/bash_completion", "/usr/local/share/bash-completion/bash_completion"} {
		if _, err := os.Stat(p); err == nil {
			bashCompletion = p
			break
		}
	}
	if bashCompletion == "" {
		t.Skip("the bash-completion package is not installed (apt-get install bash-completion)")
	}
	dir, err := os.MkdirTemp("", "pscomp")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	binDir := filepath.Join(dir, "bin")
	if out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "primalscope"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	sockets := filepath.Join(dir, "s")
	if err := os.Mkdir(sockets, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*ipctest.Primal{
		{Name: "beardog", Version: "1", Format: ipctest.FormatStandard, Groups: []ipctest.Group{{Type: "crypto", Methods: []string{"sign", "verify"}}}},
		{Name: "squirrel", Version: "1", Format: ipctest.FormatStandard, Groups: []ipctest.Group{{Type: "ai", Methods: []string{"complete"}}}},
	} {
		s, err := ipctest.StartPrimal(filepath.Join(sockets, p.Name+".sock"), p)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "rc")
	if err := os.WriteFile(rc, []byte("PS1='$ '\nsource "+bashCompletion+"\nsource <(primalscope completion bash)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &tmuxShell{t: t, socket: fmt.Sprintf("pscomp%d", os.Getpid()), name: "sh"}
	defer s.tmux("kill-server")
	cmdline := fmt.Sprintf("env -i PATH=%s:%s HOME=%s XDG_CACHE_HOME=%s/cache XDG_STATE_HOME=%s/state BIOMEOS_SOCKET_DIR=%s TERM=xterm-256color bash --noprofile --rcfile %s -i",
		binDir, os.Getenv("PATH"), home, home, home, sockets, rc)
	if out, err := s.tmux("new-session", "-d", "-s", s.name, "-x", "120", "-y", "30", cmdline); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	s.waitText("$", 10*time.Second) // capture-pane drops trailing spaces

	s.keys("-l", "primalscope call bear")
	s.keys("Tab")
	s.waitText("$ primalscope call beardog", 10*time.Second)
	s.keys("-l", "crypto.si")
	s.keys("Tab")
	s.waitText("$ primalscope call beardog crypto.sign", 10*time.Second)
	s.keys("Enter")
	s.waitText(`"method": "crypto.sign"`, 10*time.Second)

	// Stale-while-revalidate: with the cache a minute old, Tab completes
	// from it at once and a background process sweeps again: the cache
	// is rewritten, its lock removed, and a newcomer is offered next.
	cache := filepath.Join(home, "cache", "primalscope", "complete-targets.json")
	var c completionCache
	b, err := os.ReadFile(cache)
	if err != nil || json.Unmarshal(b, &c) != nil {
		t.Fatalf("no completion cache: %v", err)
	}
	c.Time = time.Now().Add(-time.Minute)
	// Only the stale cache knows this one: offering it proves the answer
	// came from the cache, not from a sweep made while the shell waited.
	c.Targets = append(c.Targets, completionTarget{Name: "ghostprimal", State: "live", Address: filepath.Join(sockets, "gone.sock")})
	b, _ = json.Marshal(c)
	if err := os.WriteFile(cache, b, 0o600); err != nil {
		t.Fatal(err)
	}
	newcomer, err := ipctest.StartPrimal(filepath.Join(sockets, "nestgate.sock"), &ipctest.Primal{Name: "nestgate", Version: "1", Format: ipctest.FormatStandard})
	if err != nil {
		t.Fatal(err)
	}
	defer newcomer.Close()
	s.keys("C-c")
	s.keys("-l", "primalscope caps ghostp")
	s.keys("Tab")
	s.waitText("$ primalscope caps ghostprimal", 10*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(cache)
		var now completionCache
		_, lockErr := os.Stat(cache + ".lock")
		if json.Unmarshal(b, &now) == nil && time.Since(now.Time) < 30*time.Second && os.IsNotExist(lockErr) {
			var names []string
			for _, n := range targetNames(now.Targets, "") {
				w, _, _ := strings.Cut(n, "\t")
				names = append(names, w)
			}
			if !has(names, "nestgate") || has(names, "ghostprimal") {
				t.Fatalf("the background sweep did not see the newcomer or kept the ghost: %q", names)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stale cache was not refreshed in the background (lock: %v)", lockErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.keys("C-c")
	s.keys("-l", "primalscope caps nest")
	s.keys("Tab")
	s.waitText("$ primalscope caps nestgate", 10*time.Second)
}

type tmuxShell struct {
	t      *testing.T
	socket string
	name   string
}

func (s *tmuxShell) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", s.socket}, args...)...).CombinedOutput()
	return string(out), err
}

func (s *tmuxShell) keys(keys ...string) {
	s.t.Helper()
	if out, err := s.tmux(append([]string{"send-keys", "-t", s.name}, keys...)...); err != nil {
		s.t.Fatalf("send-keys %q: %v\n%s", keys, err, out)
	}
}

func (s *tmuxShell) waitText(text string, limit time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(limit)
	var scr string
	for time.Now().Before(deadline) {
		scr, _ = s.tmux("capture-pane", "-p", "-t", s.name)
		if strings.Contains(scr, text) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	s.t.Fatalf("waiting for %q: not on screen after %s. Screen:\n%s", text, limit, scr)
}
