package peer_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
)

// TestMain lets the test binary serve as the bus's worker processes.
func TestMain(m *testing.M) {
	peer.WorkerMain()
	os.Exit(m.Run())
}

func pool(t testing.TB, id string, instances int) peer.BusPool {
	t.Helper()
	p, ok := peer.SelfWorker(id, id, instances, nil)
	if !ok {
		t.Fatal("the test binary cannot re-execute itself as a worker")
	}
	return p
}

func startBus(t testing.TB, cfg peer.BusConfig) *peer.StdioBus {
	t.Helper()
	dir, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := peer.StartStdioBus(filepath.Join(dir, "bus.sock"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func twoPools(t testing.TB) *peer.StdioBus {
	return startBus(t, peer.BusConfig{Pools: []peer.BusPool{pool(t, "alpha", 2), pool(t, "beta", 1)}})
}

func dialBus(t testing.TB, b *peer.StdioBus) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: b.Path}, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

type answer struct {
	Count   int             `json:"count"`
	Worker  int             `json:"worker"`
	Pool    string          `json:"pool"`
	Status  string          `json:"status"`
	Answer  json.RawMessage `json:"answer"`
	Line    string          `json:"line"`
	Session string          `json:"sessionId"`
}

func send(t testing.TB, c *ipc.Conn, req ipc.Request) answer {
	t.Helper()
	resp, err := c.Send(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatalf("%s (pool %q, session %q): %v", req.Method, req.Pool, req.SessionID, err)
	}
	var a answer
	if err := json.Unmarshal(resp.Result, &a); err != nil {
		t.Fatalf("%s: %s: %v", req.Method, resp.Result, err)
	}
	return a
}

func TestBusPoolsAndSessionAffinity(t *testing.T) {
	b := twoPools(t)
	c := dialBus(t, b)
	if a := send(t, c, ipc.Request{Method: "health.liveness", Pool: "alpha"}); a.Status != "alive" || a.Pool != "alpha" {
		t.Fatalf("alpha: %+v", a)
	}
	if a := send(t, c, ipc.Request{Method: "health.liveness", Pool: "beta"}); a.Pool != "beta" {
		t.Fatalf("beta: %+v", a)
	}
	// A session stays on its worker: its counter keeps counting.
	var worker int
	for i := 1; i <= 4; i++ {
		a := send(t, c, ipc.Request{Method: "session.count", Pool: "alpha", SessionID: "S1"})
		if a.Count != i || worker != 0 && a.Worker != worker {
			t.Fatalf("call %d of session S1: %+v (worker before %d)", i, a, worker)
		}
		worker = a.Worker
	}
	// Without a session, calls go round the pool's workers.
	seen := map[int]bool{}
	for i := 0; i < 4; i++ {
		seen[send(t, c, ipc.Request{Method: "health.liveness", Pool: "alpha"}).Worker] = true
	}
	if len(seen) != 2 {
		t.Fatalf("round robin over 2 workers reached %d", len(seen))
	}
	if pids := b.WorkerPIDs("alpha"); len(pids) != 2 {
		t.Fatalf("alpha workers: %v", pids)
	}
}

// TestBusDropsWithoutPool: with more than one pool, a message without a
// pool (or naming no pool) gets no reply; the timeout names pool and session.
func TestBusDropsWithoutPool(t *testing.T) {
	b := twoPools(t)
	c := dialBus(t, b)
	for _, req := range []ipc.Request{
		{Method: "health.liveness"},
		{Method: "health.liveness", Pool: "gamma", SessionID: "S7"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := c.Send(ctx, req)
		cancel()
		var te *ipc.TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("%+v: want a timeout, got %v", req, err)
		}
		if req.Pool != "" && (!strings.Contains(err.Error(), "pool gamma") || !strings.Contains(err.Error(), "session S7")) {
			t.Fatalf("the timeout does not name pool and session: %v", err)
		}
	}
	if b.Dropped() != 2 {
		t.Fatalf("dropped %d, want 2", b.Dropped())
	}
	// One pool: no "pool" needed.
	one := startBus(t, peer.BusConfig{Pools: []peer.BusPool{pool(t, "solo", 1)}})
	if a := send(t, dialBus(t, one), ipc.Request{Method: "health.liveness"}); a.Pool != "solo" {
		t.Fatalf("single pool: %+v", a)
	}
}

// TestBusTimeoutNamesPoolAndSession: a call the worker never answers fails
// with a timeout that says which pool and session went unanswered.
func TestBusTimeoutNamesPoolAndSession(t *testing.T) {
	b := twoPools(t)
	c := dialBus(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Send(ctx, ipc.Request{Method: "bus.silent", Pool: "alpha", SessionID: "S9"})
	var te *ipc.TimeoutError
	if !errors.As(err, &te) || te.Where != "pool alpha, session S9" {
		t.Fatalf("want a timeout naming pool alpha and session S9, got %v", err)
	}
}

// TestBusWorkerRequests: a worker's request for a session reaches the
// session's owner (the first connection to use it), who answers it; the
// worker then answers the original call, which came from another client.
// Notifications for the session reach the owner too.
func TestBusWorkerRequests(t *testing.T) {
	b := twoPools(t)
	owner := dialBus(t, b)
	other := dialBus(t, b)
	send(t, owner, ipc.Request{Method: "session.count", Pool: "beta", SessionID: "S1"})

	done := make(chan answer, 1)
	errc := make(chan error, 1)
	go func() {
		resp, err := other.Send(ctxT(t, 10*time.Second), ipc.Request{Method: "bus.ask", Params: json.RawMessage(`{"question":"proceed?"}`), Pool: "beta", SessionID: "S1"})
		if err != nil {
			errc <- err
			return
		}
		var a answer
		_ = json.Unmarshal(resp.Result, &a)
		done <- a
	}()
	var m *ipc.Message
	select {
	case m = <-owner.Incoming():
	case err := <-errc:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("the owner got no worker request")
	}
	if m.Kind != ipc.KindRequest || m.Method != "server.ask" || string(m.ID) != `"w1"` || m.SessionID != "S1" {
		t.Fatalf("worker request: %+v %s", m, m.Raw)
	}
	if err := owner.Reply(ctxT(t, 5*time.Second), m.ID, json.RawMessage(`{"ok":true}`), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-done:
		if string(a.Answer) != `{"ok":true}` {
			t.Fatalf("the worker's answer: %+v", a)
		}
	case err := <-errc:
		t.Fatal(err)
	}
	select {
	case m := <-other.Incoming():
		t.Fatalf("a non-owner received %s", m.Raw)
	default:
	}

	send(t, other, ipc.Request{Method: "bus.notify", Pool: "beta", SessionID: "S1"})
	select {
	case m := <-owner.Incoming():
		if m.Kind != ipc.KindNotification || m.Method != "session.update" || m.SessionID != "S1" {
			t.Fatalf("notification: %s", m.Raw)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the owner got no notification")
	}
}

// TestBusDyingWorker: a worker that dies leaves its pending call without a
// reply (the client's timeout names pool and session); it is spawned again.
func TestBusDyingWorker(t *testing.T) {
	b := twoPools(t)
	c := dialBus(t, b)
	before := b.WorkerPIDs("beta")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Send(ctx, ipc.Request{Method: "bus.exit", Pool: "beta", SessionID: "S2"})
	var te *ipc.TimeoutError
	if !errors.As(err, &te) || !strings.Contains(te.Where, "pool beta") {
		t.Fatalf("want a timeout naming pool beta, got %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		resp, err := c.Send(ctx, ipc.Request{Method: "health.liveness", Pool: "beta"})
		cancel()
		if err == nil {
			var a answer
			_ = json.Unmarshal(resp.Result, &a)
			if len(before) != 1 || a.Worker == before[0] {
				t.Fatalf("answered by worker %d, before %v", a.Worker, before)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("beta never came back: %v", err)
		}
	}
}

func rawConn(t testing.TB, b *peer.StdioBus) net.Conn {
	t.Helper()
	nc, err := net.Dial("unix", b.Path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return nc
}

func TestBusForwardsBytesAsTheyAre(t *testing.T) {
	b := twoPools(t)
	nc := rawConn(t, b)
	line := `{ "id" : 7,"jsonrpc":"2.0","method":"bus.raw","params":{"b":1,"a":[2, 3]},"pool":"alpha","x":"é\u00e9"}`
	if _, err := io.WriteString(nc, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	q, _ := json.Marshal(line)
	want := fmt.Sprintf(`{"id":7,  "jsonrpc":"2.0","result":{"line":%s}}`+"\n", q)
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestBusMalformedInput(t *testing.T) {
	b := twoPools(t)
	for _, bad := range []string{"this is not json", `[1,2]`, `{"id":1,`} {
		nc := rawConn(t, b)
		if _, err := io.WriteString(nc, bad+"\n"); err != nil {
			t.Fatal(err)
		}
		all, _ := io.ReadAll(nc)
		if strings.TrimSpace(string(all)) != peer.ParseErrorLine {
			t.Fatalf("%q: got %q, want the parse error then close", bad, all)
		}
	}
	// A routing field of the wrong type: closed without a word.
	nc := rawConn(t, b)
	io.WriteString(nc, `{"jsonrpc":"2.0","id":1,"method":"x","sessionId":5,"pool":"alpha"}`+"\n")
	if all, _ := io.ReadAll(nc); len(all) != 0 {
		t.Fatalf("got %q", all)
	}
}

func TestBusOversizeLineResets(t *testing.T) {
	b := startBus(t, peer.BusConfig{Pools: []peer.BusPool{pool(t, "solo", 1)}, Limits: peer.BusLimits{MaxInputBuffer: 1024}})
	nc := rawConn(t, b)
	big := `{"jsonrpc":"2.0","id":1,"method":"x","params":"` + strings.Repeat("x", 64<<10) + `"}` + "\n"
	_, _ = io.WriteString(nc, big)
	all, err := io.ReadAll(nc)
	if len(all) != 0 {
		t.Fatalf("an oversize line got a reply: %q", all)
	}
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("want a reset or a close, got %v", err)
	}
	// A line within the limit is fine on a new connection.
	c := dialBus(t, b)
	send(t, c, ipc.Request{Method: "health.liveness", Params: json.RawMessage(`"` + strings.Repeat("y", 900) + `"`)})
}

func TestBusStdioMode(t *testing.T) {
	cr, cw := io.Pipe() // client → bus
	br, bw := io.Pipe() // bus → client
	cfg := peer.BusConfig{Pools: []peer.BusPool{pool(t, "alpha", 1), pool(t, "beta", 1)}}
	done := make(chan error, 1)
	go func() { done <- peer.ServeStdioBus(context.Background(), cfg, cr, bw) }()
	f := ipc.NewLineFramer(br, cw, closers{cw, br}, 0)
	c := ipc.NewConn(f, ipc.Options{})
	if a := send(t, c, ipc.Request{Method: "health.liveness", Pool: "beta"}); a.Pool != "beta" {
		t.Fatalf("%+v", a)
	}
	c.Close() // closes the bus's input: it stops
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stdio bus did not stop")
	}
}

type closers []io.Closer

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

// TestBusCloseStopsWorkers: after Close no worker process is left.
func TestBusCloseStopsWorkers(t *testing.T) {
	b := twoPools(t)
	pids := append(b.WorkerPIDs("alpha"), b.WorkerPIDs("beta")...)
	if len(pids) != 3 {
		t.Fatalf("pids %v", pids)
	}
	b.Close()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Fatalf("worker %d still exists: %v", pid, err)
		}
	}
	if _, err := os.Stat(b.Path); !os.IsNotExist(err) {
		t.Fatalf("socket file left: %v", err)
	}
}

func TestBusConfigErrors(t *testing.T) {
	for _, cfg := range []peer.BusConfig{
		{},
		{Pools: []peer.BusPool{{ID: "a"}}},
		{Pools: []peer.BusPool{{ID: "a", Command: "/bin/true"}, {ID: "a", Command: "/bin/true"}}},
	} {
		if b, err := peer.StartStdioBus(filepath.Join(os.TempDir(), "never.sock"), cfg); err == nil {
			b.Close()
			t.Fatalf("%+v: want an error", cfg)
		}
	}
}

// TestBusGoneClientTakesNoAnswers: a client that left with a request still
// unanswered must not take the answer to another client's request with
// the same id on the same worker.
func TestBusGoneClientTakesNoAnswers(t *testing.T) {
	b := startBus(t, peer.BusConfig{Pools: []peer.BusPool{pool(t, "solo", 1)}})
	gone := dialBus(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := gone.Send(ctx, ipc.Request{Method: "bus.silent"}) // id 1, never answered
	cancel()
	if err == nil {
		t.Fatal("bus.silent was answered")
	}
	gone.Close()
	for deadline := time.Now().Add(5 * time.Second); b.Clients() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the bus did not notice the client leave")
		}
	}
	for i := 0; i < 3; i++ {
		c := dialBus(t, b)
		send(t, c, ipc.Request{Method: "health.liveness"}) // id 1 as well
		c.Close()
	}
}
