package discovery

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestCallMethodsLearnsThenSends: check --call-all against a primal that
// requires the riboCipher prefix, over a connection that has learned
// nothing yet (a fresh endpoint memory): the first call alone settles the
// prefix (-32002, then resent with EC 01), the rest follow prefixed, every
// method is processed exactly once, and a method the peer refuses
// unprocessed (-32002 on its own) is "not proven", never "not callable":
// the level with --call-all is not below the level without.
func TestCallMethodsLearnsThenSends(t *testing.T) {
	dir := tempDir(t)
	p := primal("pfx", true)
	p.Groups[0].Methods = append(p.Groups[0].Methods, "a", "b", "c", "d", "e", "f", "proxy")
	cfg := p.Config()
	var mu sync.Mutex
	seen := map[string]int{}
	for name, h := range cfg.Methods {
		cfg.Methods[name] = func(ctx context.Context, params json.RawMessage) (any, error) {
			mu.Lock()
			seen[name]++
			mu.Unlock()
			if name == "x.proxy" {
				return nil, &ipc.RPCError{Code: -32002, Message: "riboCipher prefix required"}
			}
			return h(ctx, params)
		}
	}
	cfg.Accept = ipctest.RiboCipher(ipctest.PrefixRequired, "pfx", nil)
	serve(t, dir, "pfx.sock", cfg)
	ep := unixEP(filepath.Join(dir, "pfx.sock"))

	probeSec := ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}
	r := NewProber(ProbeOptions{ConnectTimeout: time.Second, Security: probeSec}).Probe(ctxT(t), ProbeSpec{Endpoint: ep, Full: true})
	tg := &Target{ID: "pfx", Name: "pfx", Endpoint: ep, Address: ep.String(), Probe: &r}
	without := Audit(tg, AuditOptions{})
	if without.Level < 2 {
		t.Fatalf("without --call-all the level is %d: %+v", without.Level, without.Points)
	}
	mu.Lock()
	clear(seen)
	mu.Unlock()

	// A connection of its own, with nothing learned.
	c, err := ipc.Dial(ctxT(t), ep, ipc.Options{Endpoint: "pfx", Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	methods := r.Capabilities.Methods
	calls := CallMethods(ctxT(t), c, methods, "", 2*time.Second)
	if !strings.Contains(c.Transport(), "ribocipher") {
		t.Errorf("the connection did not learn the prefix: %s", c.Transport())
	}
	mu.Lock()
	for _, m := range methods {
		if seen[m] != 1 {
			t.Errorf("%s processed %d times, want once", m, seen[m])
		}
	}
	mu.Unlock()
	for _, m := range methods {
		cr := calls[m]
		switch {
		case m == "x.proxy":
			if cr.Refused() == "" || cr.Implemented() {
				t.Errorf("x.proxy: %+v should be refused unprocessed", cr)
			}
		case !cr.Implemented():
			t.Errorf("%s: %+v", m, cr)
		}
	}
	with := Audit(tg, AuditOptions{Calls: calls})
	pt := point(with, "l2.callable")
	if with.Level < without.Level || pt.Result != Skip || !strings.Contains(pt.Why, "x.proxy") || !strings.Contains(pt.Why, "not proven") {
		t.Errorf("with --call-all level %d (without %d), %+v", with.Level, without.Level, pt)
	}
}
