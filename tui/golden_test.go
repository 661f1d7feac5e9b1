package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// press turns key names into key presses: "enter", "tab", "esc", "up",
// "down", "space", "ctrl+x" or literal text typed rune by rune.
func press(keys ...string) []tea.Msg {
	special := map[string]tea.Key{
		"enter": {Code: tea.KeyEnter}, "tab": {Code: tea.KeyTab}, "esc": {Code: tea.KeyEscape},
		"up": {Code: tea.KeyUp}, "down": {Code: tea.KeyDown}, "space": {Code: tea.KeySpace, Text: " "},
		"backspace": {Code: tea.KeyBackspace}, "pgdown": {Code: tea.KeyPgDown},
		"ctrl+x": {Code: 'x', Mod: tea.ModCtrl}, "shift+tab": {Code: tea.KeyTab, Mod: tea.ModShift},
		"end": {Code: tea.KeyEnd}, "home": {Code: tea.KeyHome}, "pgup": {Code: tea.KeyPgUp},
		"ctrl+u": {Code: 'u', Mod: tea.ModCtrl},
	}
	var out []tea.Msg
	for _, k := range keys {
		if s, ok := special[k]; ok {
			out = append(out, tea.KeyPressMsg(s))
			continue
		}
		for _, r := range k {
			out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
		}
	}
	return out
}

func goldenConfig(theme string) Config {
	return Config{
		Theme: theme, Now: fixedNow, Getenv: func(string) string { return "" },
		LookedIn: []string{"/run/user/1000/biomeos", "/tmp/biomeos"}, SocketDirsShown: []string{"/run/user/1000/biomeos"},
		ConfigPath: "~/.config/primalscope/config.toml", NoListen: true,
	}
}

var t0 = fixedNow()

func sampleAnswer(seq int) *answer {
	res := json.RawMessage(`{"signature":"3J9xQw==","algorithm":"ed25519","public_key":"9f2c…","meta":{"node":"tower-1","took_ms":0.8,"ok":true,"tags":["a","b",null]}}`)
	return &answer{seq: seq, target: named("beardog"), req: ipc.Request{Method: "crypto.sign_ed25519", Params: json.RawMessage(`{"message":"aGVsbG8="}`)},
		elapsed: 800 * time.Microsecond, size: 214, outcome: "ok", result: res,
		raw:  json.RawMessage(`{"jsonrpc":"2.0","id":3,"result":` + string(res) + `}`),
		sent: json.RawMessage(`{"jsonrpc":"2.0","id":3,"method":"crypto.sign_ed25519","params":{"message":"aGVsbG8="}}`)}
}

func sampleEvents() []any {
	var out []any
	kinds := []EventKind{EvHeartbeat, EvNotification, EvEvent, EvHeartbeat, EvNote}
	names := []string{"health.heartbeat", "dag.event.appended", "NewMail", "health.heartbeat", "target appeared"}
	srcs := []string{"beardog", "rhizocrypt", "floatmail", "songbird", "nestgate"}
	for i := 0; i < 30; i++ {
		out = append(out, tailLine(t0.Add(time.Duration(i)*250*time.Millisecond), srcs[i%5], "", kinds[i%5], names[i%5], []byte(fmt.Sprintf(`{"seq":%d}`, i)), nil))
	}
	out = append(out, tailLine(t0.Add(8*time.Second), "holon", "ws://h", EvRequest, "client.v1.Client/Hello", []byte(`{"greeting":"hi \u001b[31mred"}`), json.RawMessage(`"s1"`)))
	return out
}

func sampleTrace() []any {
	var out []any
	for i := 0; i < 12; i++ {
		f := TraceFrame{Time: t0.Add(time.Duration(i) * 10 * time.Millisecond), Source: "beardog", Dir: ipc.Out, Size: 88,
			Data: []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"health.liveness"}`, i))}
		if i%2 == 1 {
			f.Dir, f.Data = ipc.In, []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"status":"alive"}}`, i))
		}
		if i == 7 {
			f.Warning = "response without \"jsonrpc\""
		}
		out = append(out, f)
	}
	return out
}

func sampleHistory() historyMsg {
	var es []history.Entry
	for i := 5; i >= 1; i-- {
		e := history.Entry{ID: int64(i), Time: t0.Add(-time.Duration(i) * time.Minute), Target: "beardog", Method: "crypto.sign_ed25519",
			Params: json.RawMessage(fmt.Sprintf(`{"message":"m%d"}`, i)), Outcome: history.OutcomeOK, Duration: time.Millisecond}
		if i == 3 {
			e.Outcome, e.Method = history.OutcomeError, "crypto.nope"
		}
		es = append(es, e)
	}
	return historyMsg{entries: es}
}

type scenario struct {
	name string
	msgs func() []tea.Msg
}

func withTargets(more ...tea.Msg) []tea.Msg {
	return append([]tea.Msg{feedMsg{items: sampleTargets()}}, more...)
}

var scenarios = []scenario{
	// The cursor's target becomes current once it rests (settleMsg of
	// its one move; Quit follows at once, before the tick would).
	{"targets", func() []tea.Msg { return withTargets(append(press("j"), settleMsg{n: 1})...) }},
	{"targets-empty", func() []tea.Msg { return nil }},
	{"targets-filter", func() []tea.Msg { return withTargets(press("/", "nst", "enter")...) }},
	{"caps", func() []tea.Msg {
		return withTargets(press("enter", "j", "j", "enter", "j")...) // beardog, open crypto, on a method
	}},
	{"caps-consumed", func() []tea.Msg {
		return withTargets(press("enter", "G", "enter")...)
	}},
	{"composer", func() []tea.Msg {
		msgs := withTargets(press("enter", "j", "j", "enter", "j", "j", "enter")...)
		return append(msgs, press("backspace", `"message":"aGVsbG8=",}`)...)
	}},
	{"composer-bus", func() []tea.Msg {
		bus := discovered("unix:///run/stdiobus/agents.sock#agents", "agents", "unix:///run/stdiobus/agents.sock", discovery.StateLive)
		bus.Pool, bus.Kind, bus.Level, bus.Probe.Latency = "agents", discovery.KindBus, 1, 2*time.Millisecond
		msgs := []tea.Msg{feedMsg{items: added(bus)}}
		msgs = append(msgs, press("3")...)
		msgs = append(msgs, press("agent.ask", "down", "backspace", "backspace", `{"q":"hi"}`, "down")...)
		return append(msgs, press("S1")...)
	}},
	{"response", func() []tea.Msg {
		return withTargets(append(press("enter"), callDoneMsg{ans: sampleAnswer(0), doc: prettyDoc(sampleAnswer(0).result)}, press("4")[0])...)
	}},
	{"response-jq", func() []tea.Msg {
		a := sampleAnswer(0)
		msgs := withTargets(append(press("enter"), callDoneMsg{ans: a, doc: prettyDoc(a.result)})...)
		msgs = append(msgs, press("4", ":", ".meta.tags")...)
		v, _ := parseForJQ(a.result)
		d, _ := jqRun(context.Background(), ".meta.tags", v)
		return append(msgs, jqDoneMsg{seq: len(".meta.tags"), doc: d})
	}},
	{"response-search", func() []tea.Msg {
		a := sampleAnswer(0)
		d := prettyDoc(a.result)
		msgs := withTargets(append(press("enter"), callDoneMsg{ans: a, doc: d})...)
		msgs = append(msgs, press("4", "/", "ed25519", "enter")...)
		return append(msgs, searchDoneMsg{d: d, q: "ed25519", matches: searchDoc(context.Background(), d, "ed25519")})
	}},
	{"response-error", func() []tea.Msg {
		a := sampleAnswer(0)
		a.outcome, a.rpcErr = "error", &ipc.RPCError{Code: -32601, Message: "Method not found: crypto.nope"}
		a.result, _ = json.Marshal(a.rpcErr)
		return withTargets(append(press("enter"), callDoneMsg{ans: a, doc: prettyDoc(a.result)}, press("4")[0])...)
	}},
	{"response-raw", func() []tea.Msg {
		a := sampleAnswer(0)
		msgs := withTargets(append(press("enter"), callDoneMsg{ans: a, doc: prettyDoc(a.result)})...)
		msgs = append(msgs, press("4", "r")...)
		return append(msgs, envDoneMsg{ans: a, doc: prettyDoc(envelopeOf(a))})
	}},
	{"events-heartbeats", func() []tea.Msg {
		return withTargets(feedMsg{items: sampleEvents()}, press("e")[0], press("K")[0], press("p")[0])
	}},
	{"events", func() []tea.Msg {
		return withTargets(feedMsg{items: sampleEvents()}, press("e")[0])
	}},
	{"trace", func() []tea.Msg {
		return withTargets(feedMsg{items: sampleTrace()}, press("t")[0])
	}},
	{"history", func() []tea.Msg {
		return withTargets(press("H")[0], sampleHistory(), press("j")[0])
	}},
	{"requests", func() []tea.Msg {
		return withTargets(feedMsg{items: sampleEvents()}, press("R")[0])
	}},
	{"help", func() []tea.Msg { return withTargets(press("?")...) }},
	{"targets-demo", func() []tea.Msg {
		return append(append([]tea.Msg{feedMsg{items: demoTargets()}}, press("j")...), settleMsg{n: 1})
	}},
	{"response-failure", func() []tea.Msg {
		return []tea.Msg{feedMsg{items: demoTargets()}, press("4")[0], callDoneMsg{ans: demoFailure(), doc: textDoc(nil)}}
	}},
	{"message", func() []tea.Msg {
		return []tea.Msg{feedMsg{items: demoTargets()}, press("4")[0], callDoneMsg{ans: demoFailure(), doc: textDoc(nil)}, press("!")[0]}
	}},
}

// goldenSizes are the screens each scenario is drawn at: the three the
// layout is made for in the dark theme, and the smallest in the light one
// (a theme changes colours, not places).
var goldenSizes = map[string][][2]int{"dark": sizes, "light": {{80, 24}}}

// TestGolden drives the program with teatest and compares the final screen
// of each pane at goldenSizes, in two themes.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		for _, theme := range []string{"dark", "light"} {
			for _, sz := range goldenSizes[theme] {
				name := fmt.Sprintf("%s/%s/%dx%d", sc.name, theme, sz[0], sz[1])
				t.Run(name, func(t *testing.T) {
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					m := newModel(ctx, goldenConfig(theme))
					tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(sz[0], sz[1]))
					for _, msg := range sc.msgs() {
						tm.Send(msg)
					}
					if err := tm.Quit(); err != nil {
						t.Fatal(err)
					}
					cancel()
					fm := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second)).(*model)
					out := fm.render()
					checkScreen(t, out, sz[0], sz[1])
					golden.RequireEqual(t, out)
				})
			}
		}
	}
}

// checkScreen asserts the frame is exactly w×h cells.
func checkScreen(t *testing.T, out string, w, h int) {
	t.Helper()
	lines := strings.Split(out, "\n")
	if len(lines) != h {
		t.Fatalf("frame has %d lines, want %d", len(lines), h)
	}
	for i, l := range lines {
		if got := ansi.StringWidth(l); got != w {
			t.Fatalf("line %d is %d cells wide, want %d: %q", i, got, w, ansi.Strip(l))
		}
	}
}
