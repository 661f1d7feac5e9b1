package tui

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// rawControl reports a terminal control that is not part of an SGR colour
// sequence (the only escapes the TUI itself writes).
func rawControl(s string) (string, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0x1b {
			// allow CSI ... m (SGR) only
			if i+1 < len(s) && s[i+1] == '[' {
				j := i + 2
				for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == ';' || s[j] == ':') {
					j++
				}
				if j < len(s) && s[j] == 'm' {
					i = j + 1
					continue
				}
			}
			return s[i:min(i+8, len(s))], true
		}
		if c < 0x20 && c != '\n' || c == 0x7f {
			return s[i:min(i+8, len(s))], true
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x80 && r <= 0x9f {
			return s[i:min(i+8, len(s))], true
		}
		i += n
	}
	return "", false
}

// FuzzAnswerView: any answer bytes open, fold, scroll, search and draw
// without panicking, and nothing but colour escapes reaches the screen.
func FuzzAnswerView(f *testing.F) {
	f.Add([]byte(`{"a":{"b":[1,2,{"c":null}]},"d":"e"}`), uint8(3))
	f.Add([]byte(`[[[[]]]]`), uint8(1))
	f.Add([]byte("{\"x\":\"\x1b[2J\u009b\"}"), uint8(2))
	f.Add([]byte(`{"unterminated":`), uint8(0))
	f.Add([]byte("not json \x1b]52;c;aGk=\x07"), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, moves uint8) {
		m := newModel(context.Background(), goldenConfig("dark"))
		m.update(tea.WindowSizeMsg{Width: 80, Height: 24})
		a := answerOf(0, named("fz"), ipc.Request{Method: "m"}, t0, &ipc.Response{Result: data, Raw: data}, nil)
		m.update(answerMsg(a))
		m.setFocus(pResponse)
		r := m.resp()
		for i := 0; i < int(moves%16); i++ {
			switch i % 6 {
			case 0:
				r.move(int(moves))
			case 1:
				foldNow(&r.responseView, r.toggleFold(true))
			case 2:
				r.move(-2)
			case 3:
				foldNow(&r.responseView, r.foldAll())
			case 4:
				r.ScrollBy(3)
			case 5:
				r.end()
			}
		}
		if d := r.current(); d != nil {
			r.matchDoc, r.matches = d, searchDoc(context.Background(), d, "a")
		}
		out := m.render()
		if bad, ok := rawControl(out); ok {
			t.Fatalf("raw control %q on screen", bad)
		}
		checkScreen(t, out, 80, 24)
	})
}

// FuzzPeerText: names and payloads from peers never put a control sequence
// on the screen, in any pane.
func FuzzPeerText(f *testing.F) {
	f.Add("beardog", []byte(`{"seq":1}`), "health.heartbeat")
	f.Add("evil\x1b[2J", []byte("\x1b]0;t\x07"), "\u009b31m")
	f.Add("\xff\xfe", []byte{0, 1, 2, 0x7f}, "\r\n\t")
	f.Fuzz(func(t *testing.T, name string, data []byte, method string) {
		m := newModel(context.Background(), goldenConfig("dark"))
		m.update(tea.WindowSizeMsg{Width: 100, Height: 30})
		m.update(feedMsg{items: []any{
			discovery.Event{Kind: discovery.Added, Target: fuzzTarget(name, method, data)},
			tailLine(t0, name, name, EvRequest, method, data, data),
			TraceFrame{Time: t0, Source: name, Dir: ipc.In, Data: data, Warning: method},
		}})
		m.comp().method.Set(method)
		m.comp().params.Set(string(data))
		m.comp().checkParams()
		m.histp().entries = []history.Entry{{ID: 1, Time: t0, Target: name, Method: method, Params: data, Outcome: history.OutcomeOK}}
		for _, p := range []paneID{pTargets, pCaps, pComposer, pEvents, pTrace, pHistory, pRequests} {
			m.setFocus(p)
			out := m.render()
			if bad, ok := rawControl(out); ok {
				t.Fatalf("pane %d: raw control %q on screen", p, bad)
			}
			if strings.Count(out, "\n") != 29 {
				t.Fatalf("pane %d: frame has %d lines", p, strings.Count(out, "\n")+1)
			}
		}
	})
}

// fuzzTarget is a live target whose every word comes from the fuzzer.
func fuzzTarget(name, alias string, data []byte) *discovery.Target {
	d := discovered(name, name, name, discovery.StateLive)
	d.Aliases, d.Family, d.Probe.Err = []string{alias}, name, string(data)
	return d
}
