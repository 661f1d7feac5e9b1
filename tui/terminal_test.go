package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestInvisibleCharactersEscaped: bidi controls and invisible characters
// in peer text (names, event names and payloads, trace frames) are shown
// escaped, like control sequences: they would make the text read as
// something else.
func TestInvisibleCharactersEscaped(t *testing.T) {
	for _, c := range []struct {
		r   rune
		esc string
	}{
		{0x202e, `\u202e`}, {0x2066, `\u2066`}, {0x200b, `\u200b`}, {0x2060, `\u2060`},
		{0x3164, `\u3164`}, {0x115f, `\u115f`}, {0xfeff, `\ufeff`}, {0x9b, `\u009b`},
	} {
		m, _ := testModel(t, goldenConfig("dark"))
		evil := "evil" + string(c.r) + "name"
		m.update(feedMsg{items: []any{
			discovery.Event{Kind: discovery.Added, Target: &discovery.Target{ID: "k", Name: evil, Aliases: []string{string(c.r)}, Probe: &discovery.Probe{State: discovery.StateLive}}},
			tailLine(t0, evil, "", EvNotification, evil, []byte(`{"x":"`+string(c.r)+`"}`), nil),
			TraceFrame{Time: t0, Source: evil, Dir: ipc.In, Data: []byte(`{"y":"` + string(c.r) + `"}`)},
		}})
		for _, p := range []paneID{pTargets, pEvents, pTrace} {
			m.setFocus(p)
			out := ansi.Strip(m.render())
			if strings.ContainsRune(out, c.r) {
				t.Errorf("%U: pane %d: it reached the screen raw", c.r, p)
			}
			if !strings.Contains(out, "evil"+c.esc+"name") {
				t.Errorf("%U: pane %d: the escaped name is not shown", c.r, p)
			}
		}
	}
}
