package tui

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// demoSession starts the real binary's demo at w×h (demoTmux).
func demoSession(t *testing.T, w, h int) (s *tmuxSession, dir string) {
	t.Helper()
	return demoTmux(t, e2eBinary(t), w, h)
}

// stopChildren stops the processes the pane's shell started, by their
// ids: SIGTERM, and SIGKILL for those still there after limit.
func (s *tmuxSession) stopChildren(limit time.Duration) {
	out, err := s.tmux("display-message", "-p", "-t", s.name, "#{pane_pid}")
	if err != nil {
		return
	}
	pid := strings.TrimSpace(out)
	kids, _ := os.ReadFile(filepath.Join("/proc", pid, "task", pid, "children"))
	var pids []int
	for _, k := range strings.Fields(string(kids)) {
		if n, err := strconv.Atoi(k); err == nil {
			pids = append(pids, n)
			syscall.Kill(n, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(limit)
	for _, n := range pids {
		for syscall.Kill(n, 0) == nil {
			if time.Now().After(deadline) {
				syscall.Kill(n, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// toLiveness picks neural-api@westgate-tower-155f in the targets pane and
// health.liveness in its capability tree, leaving it in the composer.
func toLiveness(t *testing.T, s *tmuxSession) {
	t.Helper()
	name := "neural-api@" + demoFamily
	// The name shows whole in the targets pane, at 80 columns.
	row := regexp.MustCompile(`│.[●○◌✕] ` + regexp.QuoteMeta(name) + ` `)
	s.waitFor(name+" whole in the targets pane", 20*time.Second, func(scr string) bool { return row.MatchString(scr) })
	s.send("/")
	s.typeText("neural-api")
	s.send("Enter")
	s.waitFor("the list filtered to neural-api", 5*time.Second, func(scr string) bool {
		return row.MatchString(scr) && !strings.Contains(scr, "rhizocrypt")
	})
	s.send("Enter")
	scr := s.waitFor("neural-api's capability tree", 10*time.Second, func(scr string) bool {
		return strings.Contains(scr, "╭─ neural-api") && strings.Contains(scr, "▸ health")
	})
	walkTo(t, s, scr, "▸ health")
	s.send("Enter")
	scr = s.waitText("liveness", 5*time.Second)
	walkTo(t, s, scr, "liveness")
	s.send("Enter")
	s.waitText("method health.liveness", 5*time.Second)
}

// walkTo moves the cursor (›) down to the row holding text.
func walkTo(t *testing.T, s *tmuxSession, scr, text string) {
	t.Helper()
	cur, at := -1, -1
	for i, l := range strings.Split(scr, "\n") {
		if strings.Contains(l, "›") {
			cur = i
		}
		if at < 0 && strings.Contains(l, text) {
			at = i
		}
	}
	if cur < 0 || at < cur {
		t.Fatalf("cannot find the cursor (%d) and %q (%d):\n%s", cur, text, at, scr)
	}
	for i := cur; i < at; i++ {
		s.send("j")
	}
}

// TestEndToEndDemoAt80 is the newcomer at 80×24: neural-api's name shows
// whole in the targets pane, and calling its health.liveness through BTSP
// answers alive.
func TestEndToEndDemoAt80(t *testing.T) {
	s, _ := demoSession(t, 80, 24)
	toLiveness(t, s)
	s.send("Enter")
	s.waitFor("the answer", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "Response · health.liveness · ok") && strings.Contains(scr, `"alive": true`)
	})
}

// TestEndToEndFailureWrapped: at 80×24 a call that cannot be made says why
// in the response pane, wrapped and whole, and the status line's key shows
// the whole message.
func TestEndToEndFailureWrapped(t *testing.T) {
	s, dir := demoSession(t, 80, 24)
	toLiveness(t, s)
	// Nothing listens on neural-api's socket any more.
	paths, _ := filepath.Glob(filepath.Join(dir, "primalscope-demo-*", "neural-api-"+demoFamily+".sock"))
	if len(paths) != 1 {
		t.Fatalf("neural-api's socket: %v", paths)
	}
	sock := paths[0]
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()

	s.send("Enter")
	whole := func(scr string) bool {
		sq := squeeze(scr)
		return strings.Contains(sq, squeeze(sock)) && strings.Contains(sq, "connectionrefused")
	}
	scr := s.waitFor("the whole reason in the response pane", 15*time.Second, func(scr string) bool {
		return strings.Contains(scr, "Response · health.liveness · ") && whole(scr)
	})
	lines := strings.Split(scr, "\n")
	if len(lines) < 24 || !strings.Contains(lines[23], "! message") {
		t.Fatalf("the status line does not say how to read the message whole:\n%s", scr)
	}
	// After ⏎ the keyboard stays in the composer (a ! there is params
	// text): leave the field first, as a person would.
	s.send("Escape")
	// A key right behind ESC reads as alt+key to the terminal: pause as
	// a person does.
	time.Sleep(300 * time.Millisecond)
	s.send("!")
	s.waitFor("the whole message", 5*time.Second, func(scr string) bool {
		return strings.Contains(scr, "╭─ Error") && whole(scr)
	})
	s.send("Escape")
	s.waitFor("the message closed", 5*time.Second, func(scr string) bool { return !strings.Contains(scr, "╭─ Error") })
}

// TestEndToEndDemoSizes: the demo at the sizes people use. Every target is
// listed with its name whole (no empty screen at 120×35), and the header
// keeps the family and the counts apart (it ran together at 140).
func TestEndToEndDemoSizes(t *testing.T) {
	bin := e2eBinary(t)
	header := regexp.MustCompile(`family: ` + demoFamily + ` {2,}\d+ live`)
	for _, sz := range []struct{ w, h int }{{120, 35}, {140, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			s, _ := demoTmux(t, bin, sz.w, sz.h)
			scr := s.waitFor("every target listed", 20*time.Second, func(scr string) bool {
				return strings.Contains(scr, "toadstool") && strings.Contains(scr, "lostprimal") &&
					strings.Contains(scr, "neural-api@"+demoFamily) && strings.Contains(scr, "biomeos-api@"+demoFamily)
			})
			if first := strings.SplitN(scr, "\n", 2)[0]; !header.MatchString(first) {
				t.Fatalf("the header runs together: %q", first)
			}
		})
	}
}
