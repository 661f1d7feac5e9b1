package demo

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// clientOpts dials as primalscope does by default: the riboCipher prefix in
// auto mode (rhizoCrypt requires it; the others accept raw JSON).
func clientOpts() ipc.Options {
	return ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}}
}

func call(t *testing.T, path, method string, params any) *ipc.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	resp, err := c.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s %s: %v", path, method, err)
	}
	return resp
}

func TestEcosystemServesAndCleansUp(t *testing.T) {
	before := runtime.NumGoroutine()
	eco, err := Start(context.Background(), Options{Tick: 20 * time.Millisecond, Churn: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dir := eco.Dir
	for _, name := range []string{"beardog", "songbird", "rhizocrypt", "dag", "ai", "squirrel", "nestgate"} {
		p, err := discovery.ResolveName([]string{dir}, name, "")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: p}, clientOpts())
		if err != nil {
			t.Fatal(err)
		}
		d, err := discovery.Describe(ctx, c)
		cancel()
		c.Close()
		if err != nil || d.Capabilities == nil || d.Health == nil || !d.Health.Alive {
			t.Fatalf("%s: %+v %v", name, d, err)
		}
	}
	// Heartbeats arrive on an open connection.
	c, err := ipc.Dial(context.Background(), ipc.Endpoint{Transport: ipc.Unix, Path: eco.Path("rhizocrypt.sock")}, clientOpts())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Call(context.Background(), "health.liveness", nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	deadline := time.After(5 * time.Second)
	for !(seen["health.heartbeat"] && seen["dag.event.appended"]) {
		select {
		case m := <-c.Incoming():
			seen[m.Method] = true
		case <-deadline:
			t.Fatalf("heartbeats and events did not arrive: %v", seen)
		}
	}
	c.Close()

	// The transient primal registers and leaves: ipc.watch shows both.
	deadline = time.After(5 * time.Second)
	for {
		resp := call(t, eco.Path("songbird.sock"), "ipc.watch", map[string]int{"since_revision": 0})
		if strings.Contains(string(resp.Result), `"kind":"unregistered","primal":"sweetgrass"`) {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("no unregistration in %s", resp.Result)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var res struct {
		Providers []struct {
			PrimalID string `json:"primal_id"`
		} `json:"providers"`
	}
	resp := call(t, eco.Path("songbird.sock"), "ipc.discover", map[string]string{"capability": "crypto"})
	if json.Unmarshal(resp.Result, &res) != nil || len(res.Providers) != 1 || res.Providers[0].PrimalID != "beardog" {
		t.Fatalf("ipc.discover crypto: %s", resp.Result)
	}
	// The signing handler really signs.
	resp = call(t, eco.Path("beardog.sock"), "crypto.sign_ed25519", map[string]string{"message": "aGVsbG8="})
	var sig map[string]string
	_ = json.Unmarshal(resp.Result, &sig)
	resp = call(t, eco.Path("beardog.sock"), "crypto.verify_ed25519", map[string]string{"message": "aGVsbG8=", "signature": sig["signature"], "public_key": sig["public_key"]})
	if string(resp.Result) != `{"valid":true}` {
		t.Fatalf("verify: %s", resp.Result)
	}
	// The seed file is private.
	if fi, err := os.Stat(eco.SeedFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("seed file: %v %v", fi, err)
	}

	if err := eco.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("directory left behind: %v", err)
	}
	deadline = time.After(3 * time.Second)
	for runtime.NumGoroutine() > before {
		select {
		case <-deadline:
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines left: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRhizoCryptRequiresThePrefix: like the real one, the demo's rhizoCrypt
// answers raw JSON with error -32002; with the prefix (auto) it answers.
func TestRhizoCryptRequiresThePrefix(t *testing.T) {
	eco, err := Start(context.Background(), Options{Tick: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: eco.Path("rhizocrypt.sock")}
	c, err := ipc.Dial(ctx, ep, ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixOff}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(ctx, "health.liveness", nil)
	c.Close()
	if err == nil || !strings.Contains(err.Error(), "-32002") {
		t.Fatalf("raw JSON to rhizoCrypt: %v, want error -32002", err)
	}
	if r := call(t, eco.Path("dag.sock"), "health.liveness", nil); !strings.Contains(string(r.Result), "alive") {
		t.Fatalf("with the prefix: %s", r.Result)
	}
}
