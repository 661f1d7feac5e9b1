package tui

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestParamsTemplateFromSchema: picking a method whose params the
// capability list describes offers a template from that description (in
// the capabilities pane and when the method is completed in the composer);
// one it does not describe gets the params of its last call in history.
func TestParamsTemplateFromSchema(t *testing.T) {
	hist := NewMemHistory(0)
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	tg := discovered("ledger", "ledger", "unix:///run/ledger.sock", discovery.StateLive)
	c, err := capability.Parse([]byte(`{"method_info":[
		{"name":"ledger.append","description":"Append an entry","params":{"type":"object","required":["entry"],"properties":{"entry":{"type":"object"},"sign":{"type":"boolean","default":true}}}},
		{"name":"ledger.get","params":["id"]},
		{"name":"ledger.list"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	tg.Probe.Capabilities = c
	hist.Record(history.Entry{Time: time.Now(), Target: "ledger", Endpoint: tg.Address, Method: "ledger.list", Params: json.RawMessage(`{"limit":5}`), Outcome: history.OutcomeOK})
	m.update(feedMsg{items: added(tg)})

	for _, tc := range []struct{ method, want string }{
		{"ledger.append", `{"entry":{},"sign":true}`},
		{"ledger.get", `{"id":null}`},
		{"ledger.list", `{"limit":5}`}, // no description: its last call
	} {
		run(t, m, m.cp().pickMethod(tc.method))
		if got := m.comp().params.String(); got != tc.want {
			t.Errorf("picked %s: params %s, want %s", tc.method, got, tc.want)
		}
	}
	if !strings.Contains(m.pc.status, "template") {
		t.Errorf("the status does not say where the params came from: %q", m.pc.status)
	}
	// Typed and completed in the composer.
	m.comp().params.Set("{}")
	m.comp().method.Set("")
	m.setFocus(pComposer)
	m.comp().field = fMethod
	keyMsgs(t, m, "ledger.app", "tab")
	if m.comp().method.String() != "ledger.append" {
		t.Fatalf("completion: method %q", m.comp().method.String())
	}
	if got := m.comp().params.String(); got != `{"entry":{},"sign":true}` {
		t.Errorf("completed in the composer: params %s", got)
	}
	// Params the user wrote are not replaced.
	m.comp().params.Set(`{"entry":{"x":1}}`)
	m.comp().method.Set("")
	m.comp().field = fMethod
	keyMsgs(t, m, "ledger.app", "tab")
	if got := m.comp().params.String(); got != `{"entry":{"x":1}}` {
		t.Errorf("the user's params were replaced: %s", got)
	}
}

// TestHolonKnownMethods: a Holon-RPC server has no capability list; its
// capabilities pane shows what is known: the rpc.* built-ins, the methods
// called on it in history and in this run (not those it answered "method
// not found"), each marked, and says none is advertised.
func TestHolonKnownMethods(t *testing.T) {
	srv, err := ipctest.ListenHolon("127.0.0.1:0", ipctest.HolonConfig{Methods: map[string]ipctest.HandlerFunc{
		"greeting.v1.Greeting/SayHello": func(context.Context, json.RawMessage) (any, error) { return map[string]string{"message": "hello"}, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hist := NewMemHistory(0)
	cfg := goldenConfig("dark")
	cfg.History = hist
	m, _ := testModel(t, cfg)
	tg := discovered(srv.URL, "holon-greeter", srv.URL, discovery.StateLive)
	now := time.Now()
	hist.Record(history.Entry{Time: now, Target: "holon-greeter", Endpoint: srv.URL, Method: "greeting.v1.Greeting/ListLanguages", Outcome: history.OutcomeOK})
	hist.Record(history.Entry{Time: now, Target: "holon-greeter", Endpoint: srv.URL, Method: "greeting.v1.Greeting/Nope", Outcome: history.OutcomeError, Error: &history.RPCError{Code: -32601, Message: "method not found"}})
	hist.Record(history.Entry{Time: now, Target: "beardog", Endpoint: "unix:///x.sock", Method: "crypto.sign", Outcome: history.OutcomeOK})
	run(t, m, m.update(feedMsg{items: added(tg)}))
	if m.pc.current != tg.ID {
		t.Fatalf("current %q", m.pc.current)
	}
	keyMsgs(t, m, "2", "Z") // the capabilities pane, all domains open
	screen := ansi.Strip(m.render())
	for _, want := range []string{"not advertised", "heartbeat", "built-in", "ListLanguages", "seen"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the capabilities pane lacks %q:\n%s", want, screen)
		}
	}
	for _, not := range []string{"Nope", "crypto", "No capabilities known"} {
		if strings.Contains(screen, not) {
			t.Errorf("the capabilities pane shows %q:\n%s", not, screen)
		}
	}
	// A call made now joins them.
	m.setFocus(pComposer)
	m.comp().field = fMethod
	keyMsgs(t, m, "greeting.v1.Greeting/SayHello")
	m.comp().field = fParams
	run(t, m, m.update(press("enter")[0]))
	if a := m.resp().ans; a == nil || a.outcome != "ok" {
		t.Fatalf("the call: %+v", a)
	}
	drainFeed(t, m, 100*time.Millisecond)
	if screen := ansi.Strip(m.render()); !strings.Contains(screen, "SayHello") {
		t.Errorf("the method called now is not shown:\n%s", screen)
	}
}
