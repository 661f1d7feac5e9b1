package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestSecurityWarningOnTheStatusLine: a warning the dial gives a call (a
// loopback TCP port whose owner was NOT checked, a null cipher asked for
// by name), which the CLI prints on stderr, reaches the status line, not
// only the trace pane; a plain trace note does not.
func TestSecurityWarningOnTheStatusLine(t *testing.T) {
	m, _ := testModel(t, Config{Theme: "dark", Now: fixedNow, NoListen: true})
	m.update(winSize(120, 35))
	note := TraceFrame{Time: time.Now(), Source: "toadstool", Dir: ipc.Note, Warning: "reconnecting without the riboCipher prefix"}
	m.update(feedMsg{items: []any{note}})
	if m.pc.status != "" {
		t.Fatalf("a trace note set the status line: %q", m.pc.status)
	}
	w := TraceFrame{Time: time.Now(), Source: "toadstool", Dir: ipc.Note,
		Warning: "WARNING: who serves the loopback port 127.0.0.1:9300 is NOT checked (no socket listens): any local user may be serving it"}
	m.update(feedMsg{items: []any{w}})
	if !m.pc.statusErr || !strings.Contains(m.pc.status, "NOT checked") {
		t.Fatalf("status %q (error %v)", m.pc.status, m.pc.statusErr)
	}
	if scr := ansi.Strip(m.render()); !strings.Contains(scr, "toadstool: who serves the loopback port") {
		t.Fatalf("the status line does not show the warning:\n%s", scr)
	}
}
