package peer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

func dialEP(t *testing.T, ep ipc.Endpoint) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ep, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func callInto(t *testing.T, c *ipc.Conn, method string, params, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.Call(ctx, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if err := json.Unmarshal(resp.Result, out); err != nil {
		t.Fatalf("%s: %v\n%s", method, err, resp.Result)
	}
}

type peersAnswer struct {
	Peers []struct {
		NodeID  string `json:"node_id"`
		Address string `json:"address"`
		TCPPort int    `json:"tcp_port"`
	} `json:"peers"`
}

type listAnswer struct {
	Services []struct {
		PrimalID     string   `json:"primal_id"`
		Capabilities []string `json:"capabilities"`
	} `json:"services"`
}

func (l listAnswer) ids() []string {
	var out []string
	for _, s := range l.Services {
		out = append(out, s.PrimalID)
	}
	return out
}

// TestCompositionFederationOverTCP follows discovery.peers from the local
// registry to the other node's registry over TCP, and back: each names the
// other, each lists its own primals, and the remote primal answers over TCP
// with what it consumes from the local node.
func TestCompositionFederationOverTCP(t *testing.T) {
	before := runtime.NumGoroutine()
	c, err := peer.StartComposition(peer.CompositionOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	local := dialEP(t, ipc.Endpoint{Transport: ipc.Unix, Path: c.RegistryPath})
	var pa peersAnswer
	callInto(t, local, "discovery.peers", nil, &pa)
	if len(pa.Peers) != 1 || pa.Peers[0].NodeID != peer.RemoteNodeID || pa.Peers[0].Address != "127.0.0.1" {
		t.Fatalf("local discovery.peers: %+v", pa)
	}
	remote := dialEP(t, ipc.Endpoint{Transport: ipc.TCP, Address: net.JoinHostPort(pa.Peers[0].Address, strconv.Itoa(pa.Peers[0].TCPPort))})
	var rl listAnswer
	callInto(t, remote, "ipc.list", nil, &rl)
	if !slices.Equal(rl.ids(), []string{"squirrel"}) {
		t.Fatalf("remote ipc.list: %+v", rl)
	}
	var back peersAnswer
	callInto(t, remote, "discovery.peers", nil, &back)
	if len(back.Peers) != 1 || back.Peers[0].NodeID != peer.LocalNodeID {
		t.Fatalf("remote discovery.peers: %+v", back)
	}
	// Back to the local node over TCP, from what the remote said.
	localTCP := dialEP(t, ipc.Endpoint{Transport: ipc.TCP, Address: net.JoinHostPort(back.Peers[0].Address, strconv.Itoa(back.Peers[0].TCPPort))})
	var ll listAnswer
	callInto(t, localTCP, "ipc.list", nil, &ll)
	if want := []string{"beardog", "coralreef", "nestgate", "rhizocrypt", "toadstool"}; !slices.Equal(ll.ids(), want) {
		t.Fatalf("local ipc.list over TCP: %v, want %v", ll.ids(), want)
	}
	// The remote primal, resolved through its registry and called over TCP.
	var res struct {
		Endpoint struct {
			Transport string `json:"transport"`
			Host      string `json:"host"`
			Port      int    `json:"port"`
		} `json:"endpoint"`
		Socket *string `json:"socket"`
	}
	callInto(t, remote, "ipc.resolve", map[string]string{"primal_id": "squirrel"}, &res)
	if res.Endpoint.Transport != "tcp" || res.Socket != nil {
		t.Fatalf("ipc.resolve squirrel: %+v", res)
	}
	sq := dialEP(t, ipc.Endpoint{Transport: ipc.TCP, Address: net.JoinHostPort(res.Endpoint.Host, strconv.Itoa(res.Endpoint.Port))})
	var caps struct {
		Primal   string   `json:"primal"`
		Consumed []string `json:"consumed_capabilities"`
	}
	callInto(t, sq, "capabilities.list", nil, &caps)
	if caps.Primal != "squirrel" || !slices.Equal(caps.Consumed, []string{"dag.append"}) {
		t.Fatalf("squirrel capabilities.list: %+v", caps)
	}
	// toadstool consumes what only the remote node provides, and the gap.
	ts := dialEP(t, ipc.Endpoint{Transport: ipc.Unix, Path: c.Path("toadstool")})
	callInto(t, ts, "capabilities.list", nil, &caps)
	if !slices.Contains(caps.Consumed, "ai.complete") || !slices.Contains(caps.Consumed, peer.CompositionGap) {
		t.Fatalf("toadstool consumes %v", caps.Consumed)
	}

	local.Close()
	remote.Close()
	localTCP.Close()
	sq.Close()
	ts.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{c.RegistryPath, c.NeuralPath, c.EventsPath, c.Path("beardog")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
	if _, err := net.DialTimeout("tcp", c.Remote.RegistryAddr, time.Second); err == nil {
		t.Errorf("the remote registry still listens")
	}
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines left: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type routeM struct {
	Callee     *string `json:"callee"`
	Caller     *string `json:"caller"`
	Capability string  `json:"capability"`
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors"`
	LastError  string  `json:"last_error"`
}

func metricsOf(t *testing.T, neural *ipc.Conn, name string) (out, in []routeM, state string) {
	t.Helper()
	var l struct {
		State   string `json:"state"`
		Metrics struct {
			Outbound []routeM `json:"outbound"`
			Inbound  []routeM `json:"inbound"`
		} `json:"metrics"`
	}
	callInto(t, neural, "lifecycle.get", map[string]string{"name": name}, &l)
	return l.Metrics.Outbound, l.Metrics.Inbound, l.State
}

func routeOf(rs []routeM, capability string) *routeM {
	for i := range rs {
		if rs[i].Capability == capability {
			return &rs[i]
		}
	}
	return nil
}

// TestCompositionStatesOverTheWire: the test composition's traffic, its
// gap, its undeclared call, its stale provider and its deploy graph, as a
// client reads them from the Neural API and the event stream.
func TestCompositionStatesOverTheWire(t *testing.T) {
	// A second: what the stale provider's calls wait, and enough for the
	// others on a loaded machine.
	c, err := peer.StartComposition(peer.CompositionOptions{Dir: t.TempDir(), CallTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := sse.OpenUnix(ctx, c.EventsPath, sse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	neural := dialEP(t, ipc.Endpoint{Transport: ipc.Unix, Path: c.NeuralPath})

	c.Traffic(ctx)
	c.Traffic(ctx)
	out, _, _ := metricsOf(t, neural, "toadstool")
	if g := routeOf(out, peer.CompositionGap); g == nil || g.Callee != nil || g.Calls != 2 || g.Errors != 2 {
		t.Errorf("toadstool → gap: %+v", g)
	}
	if s := routeOf(out, "shader.compile"); s == nil || s.Callee == nil || *s.Callee != peer.CompositionStale || s.Calls != 2 || s.Errors != 0 {
		t.Errorf("toadstool → coralreef: %+v", s)
	}
	if a := routeOf(out, "ai.complete"); a != nil {
		t.Errorf("ai.complete is declared and never called, yet: %+v", a)
	}
	out, _, _ = metricsOf(t, neural, "coralreef")
	if u := routeOf(out, "crypto.hash"); u == nil || *u.Callee != "beardog" || u.Calls != 2 {
		t.Errorf("coralreef → beardog (undeclared): %+v", u)
	}
	_, in, _ := metricsOf(t, neural, "rhizocrypt")
	if r := routeOf(in, "dag.append"); r == nil || *r.Caller != "nestgate" || r.Calls != 2 {
		t.Errorf("nestgate → rhizocrypt: %+v", r)
	}

	// The first run fails "dag" on purpose and skips "compute".
	run, err := c.RunGraph(ctx)
	if err != nil || run.Status != "failed" || !slices.Equal(run.FailedNodes, []string{"dag", "compute"}) {
		t.Fatalf("run 1: %+v %v", run, err)
	}
	// Stale: routed calls time out, and the graph's shader node fails for real.
	c.SetStale(true)
	c.Traffic(ctx)
	out, _, _ = metricsOf(t, neural, "toadstool")
	if s := routeOf(out, "shader.compile"); s == nil || s.Errors != 1 || !strings.Contains(s.LastError, "coralreef") {
		t.Errorf("toadstool → stale coralreef: %+v", s)
	}
	if _, _, state := metricsOf(t, neural, peer.CompositionStale); state != peer.StateUnhealthy {
		t.Errorf("coralreef state %q", state)
	}
	run, err = c.RunGraph(ctx)
	if err != nil || !slices.Equal(run.FailedNodes, []string{"shader", "compute"}) {
		t.Fatalf("run 2 while stale: %+v %v", run, err)
	}
	c.SetStale(false)
	run, err = c.RunGraph(ctx)
	if err != nil || run.Status != "completed" {
		t.Fatalf("run 3: %+v %v", run, err)
	}

	// The stream carried it all, in order: the first round's calls named
	// caller and callee, then the graph runs and health changes.
	var called []map[string]any
	for len(called) < 14 { // two rounds of 7 calls
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream ended after %d capability_called events: %v", len(called), err)
		}
		var d map[string]any
		if ev.Type == "capability_called" && json.Unmarshal(ev.Data, &d) == nil {
			called = append(called, d)
		}
	}
	var sawGap, sawRoute bool
	for _, d := range called {
		sawGap = sawGap || d["caller"] == "toadstool" && d["callee"] == nil && d["capability"] == peer.CompositionGap && d["ok"] == false
		sawRoute = sawRoute || d["caller"] == "rhizocrypt" && d["callee"] == "beardog" && d["capability"] == "crypto.sign" && d["ok"] == true
	}
	if !sawGap || !sawRoute {
		t.Errorf("capability_called events: %v", called)
	}
	want := []string{"graph_started", "node_failed", "graph_completed", "health_changed", "topology_changed",
		"graph_started", "node_failed", "graph_completed", "health_changed", "primal_discovered", "graph_started", "graph_completed"}
	var got []string
	for len(want) > 0 {
		ev, err := st.Next()
		if err != nil {
			t.Fatalf("stream ended waiting for %v (saw %v): %v", want, got, err)
		}
		got = append(got, ev.Type)
		if ev.Type == want[0] {
			want = want[1:]
		}
	}
	var rpc *ipc.RPCError
	if _, err := c.Neural.Call(ctx, "", "nothing", "here", nil); !errors.As(err, &rpc) || rpc.Code != -32001 {
		t.Errorf("a capability nobody provides: %v", err)
	}
}
