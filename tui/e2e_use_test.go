package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The TUI as it is used (issue 16), end to end: the real binary runs
// `primalscope demo` in a private tmux server (-L), one per subtest, driven
// as a user would at 150×45; every wait is bounded, and every subtest quits
// the program and kills the server it started.

// startDemo runs bin's demo in its own tmux server and waits for the
// targets to be live.
func startDemo(t *testing.T, bin string) *tmuxSession {
	t.Helper()
	s, _ := demoTmux(t, bin, 150, 45, "--tick", "500ms")
	s.waitFor("live targets", 20*time.Second, func(scr string) bool {
		return strings.Contains(scr, "● nestgate") && strings.Contains(scr, "● rhizocrypt") && regexp.MustCompile(`\d+ live`).MatchString(scr)
	})
	return s
}

// escape sends Escape alone: a key sent right after it would be read with
// it as alt+key.
func (s *tmuxSession) escape() {
	s.t.Helper()
	s.send("Escape")
	time.Sleep(300 * time.Millisecond)
}

// open picks the target the filter q finds first, and waits for its
// capabilities pane.
func (s *tmuxSession) open(q, name string) {
	s.t.Helper()
	s.send("1", "/", "C-u")
	s.typeText(q)
	s.send("Enter", "Enter")
	s.waitText("╭─ "+name, 10*time.Second)
}

// call writes method with params {} in the composer and sends it: the
// composer's first call (focus it, its method field first), or again (the
// composer has the focus, on the params field, after a call).
func (s *tmuxSession) call(method string, again bool) {
	s.t.Helper()
	if again {
		s.send("Up", "C-u")
	} else {
		s.send("3", "C-u")
	}
	s.typeText(method)
	s.send("Down", "Enter")
	s.waitText("Response · "+method+" · ", 10*time.Second)
}

// running says the program has not exited.
func (s *tmuxSession) running() {
	s.t.Helper()
	if scr := s.screen(false); strings.Contains(scr, "PRIMALSCOPE-EXIT=") {
		s.t.Fatalf("the program exited:\n%s", scr)
	}
}

func TestEndToEndUse(t *testing.T) {
	bin := e2eBinary(t)

	// After ⏎ the composer keeps the keyboard: a q is text. A bare q with
	// edits not sent asks; esc stays; q twice quits, cleanly.
	t.Run("send keeps focus, q asks", func(t *testing.T) {
		s := startDemo(t, bin)
		s.open("nest", "nestgate")
		s.call("health.liveness", false)
		s.waitText(`"status": "alive"`, 5*time.Second)
		s.typeText("q")
		s.waitText("params {}q", 5*time.Second)
		s.running()
		s.escape()
		s.send("q")
		s.waitText("the composer holds edits not sent: q quits anyway, esc stays", 5*time.Second)
		s.running()
		s.escape()
		s.waitText("not quitting", 5*time.Second)
		s.running()
		s.send("q")
		s.waitText("q quits anyway", 5*time.Second)
		s.send("q")
		s.waitText("PRIMALSCOPE-EXIT=0", 10*time.Second)
	})

	// Answering the Holon server's Hello leaves the call being written as
	// it was.
	t.Run("reply keeps the call", func(t *testing.T) {
		s := startDemo(t, bin)
		s.open("holon", "holon-greeter")
		s.send("3", "C-u")
		s.typeText("greeting.v1.Greeting/SayHello")
		s.send("Down", "C-u")
		s.typeText(`{"name":"ada"}`)
		s.waitText(`params {"name":"ada"}`, 5*time.Second)
		s.waitText("1 asking", 15*time.Second)
		s.escape()
		s.send("R")
		s.waitText("╭─ Server requests", 5*time.Second)
		s.send("a")
		s.waitText("result {}", 5*time.Second)
		s.send("C-u")
		s.typeText(`{"ok":true}`)
		s.send("Enter")
		s.waitFor("the call back in the composer", 10*time.Second, func(scr string) bool {
			return strings.Contains(scr, "╭─ Call") && strings.Contains(scr, "method greeting.v1.Greeting/SayHello") && strings.Contains(scr, `params {"name":"ada"}`)
		})
	})

	// A method written for nestgate, rhizocrypt current: marked, and the
	// first ⏎ says so instead of sending; the second sends.
	t.Run("target switch marks the method", func(t *testing.T) {
		s := startDemo(t, bin)
		s.open("nest", "nestgate")
		s.send("3", "C-u")
		s.typeText("storage.artifact.list")
		s.send("Down")
		s.escape()
		s.open("rhizo", "rhizocrypt")
		s.send("3")
		s.waitText("method storage.artifact.list ⚠ not offered here", 5*time.Second)
		s.send("Enter")
		s.waitText("rhizocrypt does not offer storage.artifact.list (it was written for nestgate): ⏎ again sends it anyway", 5*time.Second)
		if strings.Contains(s.screen(false), "Response · storage.artifact.list") {
			t.Fatal("the method was sent at the first ⏎")
		}
		s.send("Enter")
		s.waitText("Response · storage.artifact.list · ", 10*time.Second)
	})

	// Replaying call 1 twice replays call 1 twice, though each replay
	// adds a call above it.
	t.Run("replay keeps its cursor", func(t *testing.T) {
		s := startDemo(t, bin)
		s.open("nest", "nestgate")
		s.call("health.liveness", false)
		s.call("storage.artifact.list", true)
		s.escape()
		s.send("H")
		row := func(id int) *regexp.Regexp {
			return regexp.MustCompile(fmt.Sprintf(`│[› ] +%d \d\d:\d\d:\d\d `, id))
		}
		s.waitFor("two calls in history", 5*time.Second, func(scr string) bool { return row(2).MatchString(scr) && row(1).MatchString(scr) })
		s.send("j")
		s.waitFor("the cursor on call 1", 5*time.Second, func(scr string) bool {
			return regexp.MustCompile(`│› +1 \d\d:`).MatchString(scr)
		})
		s.send("r")
		s.waitFor("the first replay recorded", 10*time.Second, func(scr string) bool {
			return strings.Contains(scr, "Response · replay of 1 · ") && row(3).MatchString(scr)
		})
		s.send("r")
		scr := s.waitFor("the second replay recorded", 10*time.Second, func(scr string) bool { return row(4).MatchString(scr) })
		if !strings.Contains(scr, "Response · replay of 1 · ") || !regexp.MustCompile(`│› +1 \d\d:`).MatchString(scr) {
			t.Fatalf("the second replay was not of call 1, or the cursor left it:\n%s", scr)
		}
	})

	// The events tail filtered to heartbeats and paused keeps its rows
	// while others arrive; g shows the oldest with the cursor on it; j
	// moves the cursor; ⏎ opens that event whole.
	t.Run("events cursor, filter, pause, g", func(t *testing.T) {
		s := startDemo(t, bin)
		s.send("e")
		s.waitText("╭─ Events", 5*time.Second)
		s.send("K")
		s.waitText("Events · heartbeat", 5*time.Second)
		s.send("z") // the tail alone, so every row shows whole
		hb := regexp.MustCompile(`(?m)^│[› ]\d\d:\d\d:\d\d ♥ .*$`)
		// A heartbeat row first: on a loaded machine the first beat can
		// come after the keys, and pausing an empty tail proves nothing.
		s.waitFor("a heartbeat row", 15*time.Second, func(scr string) bool { return hb.MatchString(scr) })
		s.send("p")
		before := hb.FindAllString(s.waitText("paused +", 5*time.Second), -1)
		// Let rows of every kind arrive while paused.
		s.waitFor("more rows arriving", 10*time.Second, func(scr string) bool {
			m := regexp.MustCompile(`paused \+(\d+)`).FindStringSubmatch(scr)
			return len(m) == 2 && m[1] != "0" && m[1] != "1" && m[1] != "2"
		})
		after := hb.FindAllString(s.screen(false), -1)
		if len(before) == 0 || len(after) < len(before) || strings.Join(after[:len(before)], "\n") != strings.Join(before, "\n") {
			t.Fatalf("paused, the rows moved:\nbefore\n%s\nafter\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
		}
		s.send("z", "g")
		cur := regexp.MustCompile(`│›\d\d:\d\d:\d\d ♥ `)
		rowOf := func(scr string) int {
			for i, l := range strings.Split(scr, "\n") {
				if cur.MatchString(l) {
					return i
				}
			}
			return -1
		}
		scr := s.waitFor("the cursor on the oldest heartbeat", 5*time.Second, func(scr string) bool { return rowOf(scr) == 2 })
		s.send("j")
		s.waitFor("the cursor one row down", 5*time.Second, func(scr string) bool { return rowOf(scr) == 3 })
		s.send("Enter")
		scr = s.waitFor("the event opened whole", 5*time.Second, func(scr string) bool {
			return strings.Contains(scr, "Response · heartbeat ") && strings.Contains(scr, `"source": "`) && strings.Contains(scr, `"kind": "`) && strings.Contains(scr, `"payload": `)
		})
		s.running()
		_ = scr
	})
}
