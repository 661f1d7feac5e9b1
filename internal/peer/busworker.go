package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Environment variables that make a binary linking peer act as a stdio
// Bus worker or daemon (see WorkerMain).
const (
	// WorkerEnv selects worker mode; its value names the worker (it appears
	// in answers as "pool").
	WorkerEnv = "PRIMALSCOPE_STDIOBUS_WORKER"
	// DaemonEnv selects daemon mode: the arguments are the daemon's
	// (--unix PATH | --stdio, --config FILE).
	DaemonEnv = "PRIMALSCOPE_STDIOBUS_DAEMON"
)

// reexecReady records that this process called WorkerMain and so can
// re-execute itself as a worker. It is set once at process start, before
// anything reads it.
var reexecReady atomic.Bool

// WorkerMain makes the current binary usable as a stdio Bus worker or
// daemon: call it first thing in main (and in TestMain). With WorkerEnv set
// it serves as a worker on stdin/stdout and exits; with DaemonEnv set it
// runs the simulated daemon with os.Args and exits. Otherwise it returns, and
// SelfWorker may be used to spawn workers from this binary.
func WorkerMain() {
	if kind := os.Getenv(WorkerEnv); kind != "" {
		os.Exit(RunBusWorker(kind, os.Stdin, os.Stdout))
	}
	if os.Getenv(DaemonEnv) != "" {
		os.Exit(runDaemonMain(os.Args[1:]))
	}
	reexecReady.Store(true)
}

// SelfWorker returns a pool that spawns this binary as a worker named kind,
// or ok=false when the binary did not call WorkerMain (re-executing it
// would run something else).
func SelfWorker(id, kind string, instances int, extraEnv map[string]string) (BusPool, bool) {
	if !reexecReady.Load() {
		return BusPool{}, false
	}
	exe, err := os.Executable()
	if err != nil {
		return BusPool{}, false
	}
	// A race-enabled binary sleeps a second before exiting unless told
	// not to; workers are stopped often, so tell them.
	env := map[string]string{WorkerEnv: kind, "GORACE": strings.TrimSpace(os.Getenv("GORACE") + " atexit_sleep_ms=0")}
	for k, v := range extraEnv {
		env[k] = v
	}
	return BusPool{ID: id, Command: exe, Instances: instances, Env: env}, true
}

// Worker exit codes.
const (
	workerExitOK    = 0
	workerExitAsked = 3 // "bus.exit": dies on request, without answering
)

// workerMsg is what a worker reads.
type workerMsg struct {
	ID        json.RawMessage `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
}

// RunBusWorker is a stdio Bus worker: it reads NDJSON requests on in and
// writes answers on out, and returns the exit code. Every answer carries
// the worker's pid and name. Methods:
//   - health.liveness: {"status":"alive",...}
//   - session.count: a per-session counter kept in this worker (proves
//     session affinity);
//   - bus.ask {question}: sends the session's owner a request
//     {"id":"w<N>","method":"server.ask","sessionId":...} and answers the
//     call with the owner's answer once it arrives;
//   - bus.notify: sends the session's owner a session.update notification,
//     then answers;
//   - bus.sleep {ms}: answers after ms milliseconds;
//   - bus.silent: never answers;
//   - bus.exit: exits at once without answering (a dying worker);
//   - anything else: an echo of method, params and sessionId.
func RunBusWorker(kind string, in io.Reader, out io.Writer) int {
	pid := os.Getpid()
	var wmu sync.Mutex
	bw := bufio.NewWriter(out)
	send := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			return
		}
		wmu.Lock()
		bw.Write(b)
		bw.WriteByte('\n')
		bw.Flush()
		wmu.Unlock()
	}
	reply := func(m *workerMsg, result any) {
		if len(m.ID) == 0 {
			return
		}
		r := map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result}
		if m.SessionID != "" {
			r["sessionId"] = m.SessionID
		}
		send(r)
	}
	type ask struct{ orig *workerMsg }
	asks := map[string]ask{}
	counters := map[string]int{}
	var nextAsk int
	var sleepers sync.WaitGroup
	defer sleepers.Wait()

	br := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := ReadLine(br, maxWorkerLine)
		if err != nil {
			return workerExitOK
		}
		var m workerMsg
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Method == "" && len(m.ID) > 0 {
			// The session owner's answer to one of our requests.
			k := idKey(m.ID)
			if a, ok := asks[k]; ok {
				delete(asks, k)
				ans := map[string]any{"asked": "server.ask", "worker": pid, "pool": kind}
				if len(m.Error) > 0 {
					ans["error"] = m.Error
				} else {
					ans["answer"] = m.Result
				}
				reply(a.orig, ans)
			}
			continue
		}
		switch m.Method {
		case "bus.exit":
			fmt.Fprintf(os.Stderr, "worker %d: exiting as asked\n", pid)
			return workerExitAsked
		case "bus.silent":
		case "bus.raw":
			// The exact line received, answered with unusual spacing, to
			// show that the bus forwards bytes as they are, both ways.
			if len(m.ID) > 0 {
				q, _ := json.Marshal(string(line))
				wmu.Lock()
				fmt.Fprintf(bw, "{\"id\":%s,  \"jsonrpc\":\"2.0\",\"result\":{\"line\":%s}}\n", idKey(m.ID), q)
				bw.Flush()
				wmu.Unlock()
			}
		case "health.liveness":
			reply(&m, map[string]any{"status": "alive", "worker": pid, "pool": kind})
		case "capabilities.list":
			reply(&m, map[string]any{"primal": "stdio-bus-worker", "version": "0.1.0", "pool": kind,
				"methods": []string{"health.liveness", "session.count", "bus.ask", "bus.notify", "bus.sleep", "bus.silent", "bus.exit"}})
		case "session.count":
			counters[m.SessionID]++
			reply(&m, map[string]any{"count": counters[m.SessionID], "worker": pid, "pool": kind})
		case "bus.ask":
			if m.SessionID == "" {
				reply(&m, map[string]any{"error": "bus.ask needs a sessionId", "worker": pid})
				continue
			}
			var p struct {
				Question string `json:"question"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.Question == "" {
				p.Question = "continue?"
			}
			nextAsk++
			id := "w" + strconv.Itoa(nextAsk)
			mm := m
			asks[strconv.Quote(id)] = ask{orig: &mm}
			send(map[string]any{"jsonrpc": "2.0", "id": id, "method": "server.ask",
				"params": map[string]any{"question": p.Question, "worker": pid}, "sessionId": m.SessionID})
		case "bus.notify":
			if m.SessionID != "" {
				send(map[string]any{"jsonrpc": "2.0", "method": "session.update",
					"params": map[string]any{"progress": 1, "worker": pid, "pool": kind}, "sessionId": m.SessionID})
			}
			reply(&m, map[string]any{"notified": m.SessionID != "", "worker": pid})
		case "bus.sleep":
			var p struct {
				MS int `json:"ms"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.MS < 0 || p.MS > 60000 {
				p.MS = 0
			}
			mm := m
			sleepers.Add(1)
			go func() {
				defer sleepers.Done()
				time.Sleep(time.Duration(p.MS) * time.Millisecond)
				reply(&mm, map[string]any{"slept_ms": p.MS, "worker": pid})
			}()
		default:
			res := map[string]any{"method": m.Method, "worker": pid, "pool": kind}
			if len(m.Params) > 0 {
				res["params"] = m.Params
			}
			if m.SessionID != "" {
				res["sessionId"] = m.SessionID
			}
			reply(&m, res)
		}
	}
}

// runDaemonMain runs the simulated daemon from its command line:
// --unix PATH | --stdio, --config FILE. In --unix mode it serves until
// SIGTERM/SIGINT or until its standard input ends (so a daemon started by
// a parent that dies goes with it); it prints "ready" on standard output
// once listening.
func runDaemonMain(args []string) int {
	var unix, config string
	stdio := false
	for i := 0; i < len(args); i++ {
		take := func() string {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch args[i] {
		case "--unix":
			unix = take()
		case "--config", "-c":
			config = take()
		case "--stdio":
			stdio = true
		}
	}
	if config == "" {
		fmt.Fprintln(os.Stderr, "stdio bus: --config FILE is required")
		return 2
	}
	cfg, err := LoadBusConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if stdio || unix == "" {
		if err := ServeStdioBus(ctx, cfg, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	b, err := StartStdioBus(unix, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	fmt.Println("ready")
	stdinDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stdinDone)
	}()
	select {
	case <-ctx.Done():
	case <-stdinDone:
	}
	return 0
}
