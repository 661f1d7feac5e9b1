package tui

import (
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

// The end-to-end tests of what the demo's peers do (server requests, the
// biomeOS API's probe, holons and params templates, other processes'
// buses), each driving `primalscope demo` in a private tmux server.

// TestEndToEndPeers builds the real binary once and runs each item as a
// subtest, with its own demo.
func TestEndToEndPeers(t *testing.T) {
	bin := e2eBinary(t)
	t.Run("ServerRequestExpires", func(t *testing.T) { testServerRequestExpires(t, bin) })
	t.Run("BiomeOSAPIJudged", func(t *testing.T) { testBiomeOSAPIJudged(t, bin) })
	t.Run("HolonAndTemplate", func(t *testing.T) { testHolonAndTemplate(t, bin) })
	t.Run("DemoKeepsToItsOwnBuses", func(t *testing.T) { testDemoKeepsToItsOwnBuses(t, bin) })
}

// peersDemo starts the demo at w×h (demoTmux) and waits for its targets.
func peersDemo(t *testing.T, bin string, w, h int) *tmuxSession {
	t.Helper()
	s, _ := demoTmux(t, bin, w, h, "--tick", "500ms")
	s.waitFor("the demo's targets", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "rhizocrypt") && strings.Contains(scr, "nestgate")
	})
	return s
}

// pick filters the targets pane to name and makes it current.
func (s *tmuxSession) pick(name string) {
	s.t.Helper()
	s.send("1", "/", "C-u") // a new filter, not added to the last one
	s.typeText(name)
	s.send("Enter")
	s.waitFor("the filtered list", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "/ "+name) && regexp.MustCompile(`›\S `+regexp.QuoteMeta(name)).MatchString(scr)
	})
	s.send("Enter")
}

// testServerRequestExpires: the demo's holon sends a Hello and
// gives up on it after 3 s, as a go-holons server does; the requests pane
// shows its age and its connection, then that it expired, and answering it
// is refused with the reason.
func testServerRequestExpires(t *testing.T, bin string) {
	s := peersDemo(t, bin, 150, 45)
	s.send("R")
	s.waitFor("the holon's Hello, waiting", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "client.v1.Client/Hello") && strings.Contains(scr, "conn open")
	})
	s.waitFor("the Hello expired, and why", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "expired ·") && strings.Contains(scr, "expired: it is") && strings.Contains(scr, "stops")
	})
	// The cursor is on the newest request: take the expired Hello.
	scr := s.screen(false)
	rows := strings.Split(scr, "\n")
	cur, hello := -1, -1
	for i, l := range rows {
		if strings.Contains(l, "› client.v1.Client/Hello") || strings.Contains(l, "›") && strings.Contains(l, "Hello") {
			cur = i
		}
		if strings.Contains(l, "expired ·") && hello < 0 {
			hello = i - 1
		}
	}
	if hello < 0 {
		t.Fatalf("no expired request:\n%s", scr)
	}
	for ; cur > hello; cur -= 2 {
		s.send("k")
	}
	s.send("a")
	s.waitFor("the refusal with its reason", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "cannot answer client.v1.Client/Hello")
	})
	if strings.Contains(s.screen(false), "╭─ Reply") {
		t.Fatalf("the composer opened in reply mode for an expired request:\n%s", s.screen(false))
	}
}

// testBiomeOSAPIJudged: the biomeOS API is judged within the probe
// timeout; its capabilities pane says what it is, never "Probing…".
func testBiomeOSAPIJudged(t *testing.T, bin string) {
	s := peersDemo(t, bin, 150, 45)
	s.pick("biomeos")
	s.waitFor("the biomeOS API judged", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "An HTTP API, not JSON-RPC") && !strings.Contains(scr, "Probing…")
	})
}

// testHolonAndTemplate: the demo's holon has no capability list:
// its capabilities pane shows its built-ins, marked, not advertised. A
// method whose params squirrel's capability list describes is put in the
// composer with a template from that description.
func testHolonAndTemplate(t *testing.T, bin string) {
	s := peersDemo(t, bin, 150, 45)
	s.pick("holon")
	s.waitFor("the holon's known methods", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "not advertised") && strings.Contains(scr, "▸ rpc")
	})
	s.send("2", "Z")
	s.waitFor("its built-ins", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "heartbeat") && strings.Contains(scr, "built-in")
	})

	s.pick("squirrel")
	s.waitFor("squirrel's tree", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "╭─ squirrel") && strings.Contains(scr, "▸ ai")
	})
	s.send("2", "g", "Enter") // the first domain, ai, opens
	s.waitText("▾ ai", 5*time.Second)
	s.send("j", "Enter") // ai.complete
	s.waitFor("the template in the composer", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "method ai.complete") && strings.Contains(scr, `params {"prompt":"Describe this ecosystem","max_tokens":64}`)
	})
}

// testDemoKeepsToItsOwnBuses: another process's stdio Bus runs on
// the machine; the demo lists its own bus's pools and not the other bus.
func testDemoKeepsToItsOwnBuses(t *testing.T, bin string) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is needed to start a process with another argv[0]")
	}
	other := t.TempDir()
	// Not this test's child: forked off by a shell that exits at once, it
	// waits on a builtin read of a pipe this test holds.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(other, "otherbus.sock")
	start := exec.Command(bash, "-c", `(exec -a stdio_bus bash -c 'read x <&3' x --unix "$0" >/dev/null 2>&1) & echo $!`, sock)
	start.ExtraFiles = []*os.File{pr}
	out, err := start.Output()
	pr.Close()
	if err != nil {
		pw.Close()
		t.Skip(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	t.Cleanup(func() {
		pw.Close() // the read ends, and the shell with it
		time.Sleep(50 * time.Millisecond)
		if cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); pid > 0 && err == nil && strings.Contains(string(cl), sock) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	// Without this, the test would pass for a bus nobody can see: an
	// unconfined ls (the process table searched, as by default) lists it.
	ls := exec.Command(bin, "ls", "--json", "--socket-dir", other, "--timeout", "3s")
	ls.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir(), "XDG_RUNTIME_DIR="+t.TempDir())
	if lsOut, _ := ls.Output(); !strings.Contains(string(lsOut), "otherbus") {
		t.Fatalf("an unconfined ls does not see the other bus, so the demo's confinement proves nothing:\n%s", lsOut)
	}
	s := peersDemo(t, bin, 150, 45)
	s.waitFor("the demo's own bus pools", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "stdiobus/echo") && strings.Contains(scr, "stdiobus/agent")
	})
	// A few more sweeps: the other bus never shows.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if scr := s.screen(false); strings.Contains(scr, "otherbus") {
			t.Fatalf("the demo lists another process's bus:\n%s", scr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
