package tui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// moveTo presses the down key in the map until the line naming what is
// under the cursor (its detail) matches re, up to limit presses.
func (s *tmuxSession) moveTo(what string, re *regexp.Regexp, limit int) {
	s.t.Helper()
	for i := 0; i < limit; i++ {
		if re.MatchString(s.screen(false)) {
			return
		}
		s.send("j")
		time.Sleep(150 * time.Millisecond)
	}
	s.waitFor(what+" under the cursor", 2*time.Second, re.MatchString)
}

// TestEndToEndMap: the composition map in `primalscope demo` at 80×24 (the
// tree) and 120×35 (the drawing), as a user drives it: m opens it and the
// demo's gap is there in words; f focuses toadstool (its neighbourhood, +
// and - change the hops); ⏎ on its edge to beardog's crypto.hash opens
// the edge, which has no calls yet; ⏎ offers the method in the composer
// with beardog as the target, ⏎ sends it, and back on the map the edge
// lists that call from history.
func TestEndToEndMap(t *testing.T) {
	bin := e2eBinary(t)
	toadstool := regexp.MustCompile(`(?m)^│ \S+ toadstool · `)
	edge := regexp.MustCompile(`(?m)^│ toadstool → crypto\.hash → beardog`)
	for _, sz := range []struct{ w, h int }{{80, 24}, {120, 35}} {
		t.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(t *testing.T) {
			s, _ := demoTmux(t, bin, sz.w, sz.h)
			s.waitText("nestgate", 20*time.Second)
			s.send("m")
			// The gap in words: its node ("✗ GAP ledger.append") in the
			// drawing, its edge ("ledger.append → ✗ nobody  ✗ GAP") in the tree.
			gap := regexp.MustCompile(`GAP ledger\.append|ledger\.append → ✗ nobody +✗ GAP`)
			scr := s.waitFor("the gap", 20*time.Second, gap.MatchString)
			if !strings.Contains(scr, "✗ 1 gap") {
				t.Fatalf("the summary does not name the gap:\n%s", scr)
			}
			drawn := strings.Contains(scr, "▸")
			if want := sz.w >= 120; drawn != want {
				t.Fatalf("at %dx%d the map should be drawn: %v, is: %v\n%s", sz.w, sz.h, want, drawn, scr)
			}

			// Focus a node: its neighbourhood.
			s.moveTo("toadstool", toadstool, 60)
			s.send("f")
			s.waitText("Map · toadstool ±1", 5*time.Second)
			s.send("+")
			s.waitText("Map · toadstool ±2", 5*time.Second)
			s.send("-")
			scr = s.waitText("Map · toadstool ±1", 5*time.Second)
			for _, gone := range []string{"holon-greeter", "floatmail", "stdiobus/echo"} {
				if strings.Contains(scr, gone) {
					t.Errorf("toadstool ±1 shows %s:\n%s", gone, scr)
				}
			}

			// Follow an edge to its calls.
			s.moveTo("toadstool's crypto.hash edge", edge, 10)
			s.send("Enter")
			s.waitText("compose crypto.hash on beardog", 5*time.Second)
			s.waitText("no calls on this edge in history", 5*time.Second)
			s.send("Enter")
			s.waitText("method crypto.hash", 5*time.Second)
			s.send("Enter")
			s.waitText("Response · crypto.hash · ok", 10*time.Second)
			s.escape()
			s.send("m")
			scr = s.waitText("Calls on this edge in history (1)", 10*time.Second)
			if !strings.Contains(scr, "crypto.hash ok") {
				t.Fatalf("the edge does not list the call:\n%s", scr)
			}
			s.running()
		})
	}
}
