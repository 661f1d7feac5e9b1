package tui

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// TestTUICallsWhatTheCLICalls: the TUI's calls go through the run's one
// dialer, so a family-scoped BTSP target the CLI reaches (the demo's
// Neural API, whether or not its probe has finished) answers the TUI too,
// through an authenticated encrypted session.
func TestTUICallsWhatTheCLICalls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	eco, err := demo.Start(ctx, demo.Options{Dir: t.TempDir(), Tick: time.Hour, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	sec := ipc.Security{Seed: ipc.NewSeed(eco.Seed()), Prefix: ipc.PrefixAuto, Family: eco.Family, Memory: ipc.NewEndpointMemory()}
	d, err := dial.New(dial.Settings{SocketDirs: []string{eco.Dir}, Security: sec, Family: eco.Family})
	if err != nil {
		t.Fatal(err)
	}
	path := eco.Path("neural-api-" + eco.Family + ".sock")
	probed := locked(discovered("probed", "neural-api", path, discovery.StateLocked)) // as discovery lists it
	probed.Family, probed.Probe.Wire = eco.Family, "jsonrpc"
	for _, tg := range []*discovery.Target{
		discovered("early", "neural-api", path, discovery.StateUnknown), // before its probe
		probed,
	} {
		c := newClient(ctx, nil, newFeed(1024, time.Millisecond), 0, ipc.Security{})
		c.useDialer(d)
		resp, err := c.send(ctx, tg, ipc.Request{Method: "health.liveness"})
		if err != nil || !strings.Contains(string(resp.Result), `"alive":true`) {
			c.close()
			t.Fatalf("%s: %v %v", tg.ID, resp, err)
		}
		cn, err := c.conn(ctx, tg)
		if err != nil {
			t.Fatal(err)
		}
		if ss, ok := cn.Session(); !ok || !ss.Authenticated || !ss.Encrypted {
			t.Errorf("%s: session %+v", tg.ID, ss)
		}
		c.close()
	}
	// The CLI's view of the same name gives the same security.
	byName, err := d.Resolve(ctx, "neural-api")
	if err != nil {
		t.Fatal(err)
	}
	tuiSide, _ := dialTarget(discovered("", "neural-api", path, discovery.StateUnknown))
	if a, b := d.Security(byName), d.Security(tuiSide); a.FamilyScoped != b.FamilyScoped || !a.FamilyScoped {
		t.Errorf("CLI and TUI decide differently: %v vs %v", a.FamilyScoped, b.FamilyScoped)
	}
}

// TestTUIHonoursInsecure: --insecure reaches the TUI's wss:// sessions
// (it used to be dropped there: the TUI dialled holons on its own).
func TestTUIHonoursInsecure(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{holon.Subprotocol}})
		if err != nil {
			return
		}
		defer ws.CloseNow()
		_, _, _ = ws.Read(r.Context())
	}))
	ts.Config.ErrorLog = nil
	defer ts.Close()
	url := "wss://" + strings.TrimPrefix(ts.URL, "https://") + "/rpc"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tg := discovered("h", "holon", url, discovery.StateUnknown)
	for _, insecure := range []bool{false, true} {
		d, err := dial.New(dial.Settings{Insecure: insecure})
		if err != nil {
			t.Fatal(err)
		}
		c := newClient(ctx, nil, newFeed(1024, time.Millisecond), 0, ipc.Security{})
		c.useDialer(d)
		_, err = c.conn(ctx, tg)
		c.close()
		if (err == nil) != insecure {
			t.Errorf("insecure=%v: %v", insecure, err)
		}
	}
}
