package peer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// BusConfig is a stdio Bus daemon's configuration file:
// {"pools":[{"id","command","args":[...],"instances":N}],"limits":{...}}.
type BusConfig struct {
	Pools  []BusPool `json:"pools"`
	Limits BusLimits `json:"limits"`
}

// BusPool is one pool of worker processes.
type BusPool struct {
	ID        string   `json:"id"`
	Command   string   `json:"command"`
	Args      []string `json:"args,omitempty"`
	Instances int      `json:"instances,omitempty"` // default 1
	// Env is extra environment for the workers (an extension of this simulation:
	// the real daemon passes its own environment on).
	Env map[string]string `json:"env,omitempty"`
}

// BusLimits bound what the daemon accepts.
type BusLimits struct {
	// MaxInputBuffer bounds one client line in bytes (default 1 MiB); a
	// longer line resets the connection without a reply.
	MaxInputBuffer int `json:"max_input_buffer,omitempty"`
	// RestartDelayMS is how long a dead worker stays dead before it is
	// spawned again (default 100; negative: never).
	RestartDelayMS int `json:"restart_delay_ms,omitempty"`
}

// DefaultBusInputBuffer is the default max_input_buffer.
const DefaultBusInputBuffer = 1 << 20

// maxWorkerLine bounds one line a worker writes.
const maxWorkerLine = 16 << 20

// LoadBusConfig reads a stdio Bus config file.
func LoadBusConfig(path string) (BusConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return BusConfig{}, fmt.Errorf("stdio bus config: %w", err)
	}
	var cfg BusConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return BusConfig{}, fmt.Errorf("stdio bus config %s: %w", path, err)
	}
	return cfg, nil
}

// StdioBus is a running simulated stdio Bus daemon (stdiobus/stdiobus kernel
// v0.1.0 as the ecosystem facts describe it): it spawns real worker
// processes per pool and routes NDJSON between clients and workers,
// forwarding every message byte for byte. Routing:
//   - with more than one pool, a message without a top-level "pool" naming
//     one is dropped with no reply;
//   - a "sessionId" pins a session to one worker; the first client to use it
//     owns it and receives the worker's requests and notifications for it
//     (and answers them: the answer goes back to the asking worker);
//   - a response goes to the client that sent the request with that id;
//   - a dying worker's pending requests get no reply, its sessions end;
//   - input that is not a JSON object gets a parse error with id null and
//     the connection is closed; a line over max_input_buffer resets it.
type StdioBus struct {
	cfg BusConfig
	acc *Acceptor // nil in stdio mode
	// Path is the --unix socket path ("" in stdio mode).
	Path string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	pools    map[string]*busPool
	order    []string
	clients  map[*busClient]struct{}
	sessions map[string]*busSession
	dropped  int64
}

type busPool struct {
	cfg     BusPool
	workers []*busWorker
	next    int
}

type busWorker struct {
	bus   *StdioBus
	pool  *busPool
	index int

	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex
	dead  chan struct{} // closed when the process has exited

	// guarded by bus.mu
	alive   bool
	pending map[string][]*busClient // request id → clients waiting (FIFO)
}

type busSession struct {
	worker *busWorker
	owner  *busClient
}

type busClient struct {
	bus    *StdioBus
	r      io.Reader
	w      io.Writer
	closer func() error
	wmu    sync.Mutex
	asks   map[string]*busWorker // worker requests forwarded here, by id; guarded by bus.mu
	gone   bool                  // guarded by bus.mu
}

// StartStdioBus runs a daemon in --unix mode on a new socket at path and
// spawns its workers.
func StartStdioBus(path string, cfg BusConfig) (*StdioBus, error) {
	b, err := newBus(cfg)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("stdio bus: listen %s: %w", path, err)
	}
	b.Path = path
	if err := b.spawnAll(); err != nil {
		_ = ln.Close()
		b.Close()
		return nil, err
	}
	b.acc = Serve(ln, b.serveClient)
	return b, nil
}

// ServeStdioBus runs a daemon in --stdio mode: one client on r and w, until
// r ends or ctx is done. Workers are stopped before it returns.
func ServeStdioBus(ctx context.Context, cfg BusConfig, r io.Reader, w io.Writer) error {
	b, err := newBus(cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.spawnAll(); err != nil {
		return err
	}
	done := make(chan struct{})
	c := &busClient{bus: b, r: r, w: w, asks: map[string]*busWorker{}, closer: func() error { return nil }}
	b.mu.Lock()
	b.clients[c] = struct{}{}
	b.mu.Unlock()
	go func() {
		defer close(done)
		c.serve()
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

func newBus(cfg BusConfig) (*StdioBus, error) {
	if len(cfg.Pools) == 0 {
		return nil, errors.New("stdio bus: no pools")
	}
	if cfg.Limits.MaxInputBuffer <= 0 {
		cfg.Limits.MaxInputBuffer = DefaultBusInputBuffer
	}
	if cfg.Limits.RestartDelayMS == 0 {
		cfg.Limits.RestartDelayMS = 100
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &StdioBus{cfg: cfg, ctx: ctx, cancel: cancel, pools: map[string]*busPool{},
		clients: map[*busClient]struct{}{}, sessions: map[string]*busSession{}}
	for _, p := range cfg.Pools {
		if p.ID == "" || p.Command == "" {
			cancel()
			return nil, fmt.Errorf("stdio bus: pool %q needs an id and a command", p.ID)
		}
		if _, dup := b.pools[p.ID]; dup {
			cancel()
			return nil, fmt.Errorf("stdio bus: pool %q twice", p.ID)
		}
		if p.Instances <= 0 {
			p.Instances = 1
		}
		bp := &busPool{cfg: p}
		for i := 0; i < p.Instances; i++ {
			bp.workers = append(bp.workers, &busWorker{bus: b, pool: bp, index: i})
		}
		b.pools[p.ID] = bp
		b.order = append(b.order, p.ID)
	}
	return b, nil
}

// Config returns the daemon's configuration.
func (b *StdioBus) Config() BusConfig { return b.cfg }

// Dropped reports how many messages were dropped without a reply (no pool,
// unknown pool, no live worker, an answer nobody waits for).
func (b *StdioBus) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Clients reports how many client connections are open.
func (b *StdioBus) Clients() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// WorkerPIDs returns the process ids of a pool's live workers, by instance.
func (b *StdioBus) WorkerPIDs(pool string) []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pools[pool]
	if p == nil {
		return nil
	}
	var out []int
	for _, w := range p.workers {
		if w.alive && w.cmd != nil && w.cmd.Process != nil {
			out = append(out, w.cmd.Process.Pid)
		}
	}
	return out
}

// Close stops accepting, closes every client, stops every worker (stdin
// closed, then SIGTERM, then SIGKILL) and removes the socket file.
func (b *StdioBus) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	clients := make([]*busClient, 0, len(b.clients))
	for c := range b.clients {
		clients = append(clients, c)
	}
	var workers []*busWorker
	for _, id := range b.order {
		workers = append(workers, b.pools[id].workers...)
	}
	b.mu.Unlock()
	b.cancel()
	var err error
	if b.acc != nil {
		err = b.acc.Close()
	}
	for _, c := range clients {
		_ = c.closer()
	}
	for _, w := range workers {
		w.stop()
	}
	b.wg.Wait()
	if b.Path != "" {
		_ = os.Remove(b.Path)
	}
	return err
}

func (b *StdioBus) spawnAll() error {
	for _, id := range b.order {
		for _, w := range b.pools[id].workers {
			if err := w.spawn(); err != nil {
				return err
			}
		}
	}
	return nil
}

// serveClient serves one client connection of a --unix daemon.
func (b *StdioBus) serveClient(_ context.Context, nc net.Conn) {
	c := &busClient{bus: b, r: nc, w: nc, closer: nc.Close, asks: map[string]*busWorker{}}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.clients[c] = struct{}{}
	b.mu.Unlock()
	c.serve()
}

// routing holds the fields the daemon reads from a message.
type routing struct {
	ID        json.RawMessage `json:"id"`
	Method    json.RawMessage `json:"method"`
	SessionID json.RawMessage `json:"sessionId"`
	Pool      json.RawMessage `json:"pool"`
	Result    json.RawMessage `json:"result"`
	Error     json.RawMessage `json:"error"`
}

// parseRouting extracts the routing fields; ok=false when the line is not a
// JSON object, bad=true when a routing field has the wrong type.
func parseRouting(line []byte) (r routing, sid, pool string, ok, bad bool) {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &r) != nil {
		return r, "", "", false, false
	}
	str := func(raw json.RawMessage) (string, bool) {
		if len(raw) == 0 || string(raw) == "null" {
			return "", true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	var ok1, ok2 bool
	sid, ok1 = str(r.SessionID)
	pool, ok2 = str(r.Pool)
	if string(r.ID) == "null" {
		r.ID = nil
	}
	return r, sid, pool, true, !ok1 || !ok2
}

func (r routing) isResponse() bool {
	return len(r.Method) == 0 && len(r.ID) > 0 && (len(r.Result) > 0 || len(r.Error) > 0)
}

func idKey(id json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, id) != nil {
		return string(id)
	}
	return buf.String()
}

// serve reads one client's lines and routes them.
func (c *busClient) serve() {
	b := c.bus
	defer c.gone2()
	br := bufio.NewReaderSize(c.r, 64<<10)
	max := b.cfg.Limits.MaxInputBuffer
	for {
		line, err := ReadLine(br, max)
		if err != nil {
			// A line over the limit: reset without a reply. Closing with
			// unread data makes the kernel reset the connection.
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, sid, pool, ok, bad := parseRouting(line)
		if !ok {
			c.write([]byte(ParseErrorLine))
			return
		}
		if bad {
			return // routing fields cannot be extracted: close
		}
		b.route(c, line, r, sid, pool)
	}
}

// gone2 forgets a client: its sessions end and it is closed.
func (c *busClient) gone2() {
	b := c.bus
	b.mu.Lock()
	c.gone = true
	delete(b.clients, c)
	for id, s := range b.sessions {
		if s.owner == c {
			delete(b.sessions, id)
		}
	}
	// Its unanswered requests must not take answers meant for another
	// client that reuses the same id.
	for _, id := range b.order {
		for _, w := range b.pools[id].workers {
			for k, q := range w.pending {
				kept := q[:0]
				for _, x := range q {
					if x != c {
						kept = append(kept, x)
					}
				}
				if len(kept) == 0 {
					delete(w.pending, k)
				} else {
					w.pending[k] = kept
				}
			}
		}
	}
	b.mu.Unlock()
	_ = c.closer()
}

func (c *busClient) write(line []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if nc, ok := c.w.(net.Conn); ok {
		_ = nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	}
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, _ = c.w.Write(buf)
}

// route sends a client's message to a worker, or drops it.
func (b *StdioBus) route(c *busClient, line []byte, r routing, sid, pool string) {
	b.mu.Lock()
	if r.isResponse() {
		// An answer to a worker-initiated request: back to the asking worker.
		k := idKey(r.ID)
		w := c.asks[k]
		delete(c.asks, k)
		if w == nil && sid != "" && b.sessions[sid] != nil {
			w = b.sessions[sid].worker
		}
		if w == nil || !w.alive {
			b.dropped++
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		w.write(line)
		return
	}
	var p *busPool
	switch {
	case pool != "":
		p = b.pools[pool]
	case len(b.order) == 1:
		p = b.pools[b.order[0]]
	}
	var w *busWorker
	if sid != "" {
		if s := b.sessions[sid]; s != nil && s.worker.alive {
			w = s.worker
		}
	}
	if w == nil {
		if p == nil {
			b.dropped++ // no pool, or an unknown one: dropped without a word
			b.mu.Unlock()
			return
		}
		w = p.pick()
		if w == nil {
			b.dropped++
			b.mu.Unlock()
			return
		}
		if sid != "" {
			b.sessions[sid] = &busSession{worker: w, owner: c}
		}
	}
	if len(r.ID) > 0 {
		k := idKey(r.ID)
		w.pending[k] = append(w.pending[k], c)
	}
	b.mu.Unlock()
	w.write(line)
}

// pick returns the next live worker of the pool, round robin. Called with
// bus.mu held.
func (p *busPool) pick() *busWorker {
	for i := 0; i < len(p.workers); i++ {
		w := p.workers[p.next%len(p.workers)]
		p.next++
		if w.alive {
			return w
		}
	}
	return nil
}

func (w *busWorker) spawn() error {
	b := w.bus
	cmd := exec.Command(w.pool.cfg.Command, w.pool.cfg.Args...)
	env := os.Environ()
	keys := make([]string, 0, len(w.pool.cfg.Env))
	for k := range w.pool.cfg.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+w.pool.cfg.Env[k])
	}
	env = append(env, "STDIO_BUS_POOL="+w.pool.cfg.ID, "STDIO_BUS_WORKER="+strconv.Itoa(w.index))
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("stdio bus: pool %s: %w", w.pool.cfg.ID, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		stdin.Close()
		return fmt.Errorf("stdio bus: pool %s: %w", w.pool.cfg.ID, err)
	}
	if err := cmd.Start(); err != nil {
		stdin.Close()
		return fmt.Errorf("stdio bus: pool %s: start %s: %w", w.pool.cfg.ID, w.pool.cfg.Command, err)
	}
	dead := make(chan struct{})
	b.mu.Lock()
	if b.closed && w.cmd != nil {
		// A restart that lost the race with Close: end it at once.
		b.mu.Unlock()
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		return errors.New("stdio bus: closing")
	}
	w.cmd, w.stdin, w.dead = cmd, stdin, dead
	w.alive = true
	w.pending = map[string][]*busClient{}
	b.mu.Unlock()
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		w.readLoop(stdout)
		_ = cmd.Wait()
		close(dead)
		w.died()
	}()
	return nil
}

// readLoop routes what one worker writes until its stdout ends.
func (w *busWorker) readLoop(stdout io.Reader) {
	b := w.bus
	br := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := ReadLine(br, maxWorkerLine)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_, _ = io.Copy(io.Discard, stdout)
			}
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		r, sid, _, ok, _ := parseRouting(line)
		if !ok {
			continue // a worker's stray output
		}
		b.mu.Lock()
		var to *busClient
		if len(r.Method) == 0 && len(r.ID) > 0 {
			k := idKey(r.ID)
			q := w.pending[k]
			for len(q) > 0 && to == nil {
				if !q[0].gone {
					to = q[0]
				}
				q = q[1:]
			}
			if len(q) == 0 {
				delete(w.pending, k)
			} else {
				w.pending[k] = q
			}
		} else if s := b.sessions[sid]; sid != "" && s != nil {
			to = s.owner
			if len(r.ID) > 0 {
				to.asks[idKey(r.ID)] = w
			}
		}
		if to == nil || to.gone {
			b.dropped++
			b.mu.Unlock()
			continue
		}
		b.mu.Unlock()
		to.write(line)
	}
}

// died forgets a dead worker's pending requests (no reply) and sessions,
// and spawns it again after the restart delay unless the bus is closing.
func (w *busWorker) died() {
	b := w.bus
	b.mu.Lock()
	w.alive = false
	w.pending = map[string][]*busClient{}
	for id, s := range b.sessions {
		if s.worker == w {
			delete(b.sessions, id)
		}
	}
	closed := b.closed
	b.mu.Unlock()
	delay := b.cfg.Limits.RestartDelayMS
	if closed || delay < 0 {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		select {
		case <-time.After(time.Duration(delay) * time.Millisecond):
		case <-b.ctx.Done():
			return
		}
		b.mu.Lock()
		closed := b.closed
		b.mu.Unlock()
		if !closed {
			_ = w.spawn()
		}
	}()
}

func (w *busWorker) write(line []byte) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	_, _ = w.stdin.Write(buf)
}

// stop ends the worker process: stdin closed, then SIGTERM to its process
// group after 500 ms, SIGKILL after 2 s more.
func (w *busWorker) stop() {
	w.bus.mu.Lock()
	cmd, stdin, dead := w.cmd, w.stdin, w.dead
	w.bus.mu.Unlock()
	if cmd == nil {
		return
	}
	w.wmu.Lock()
	_ = stdin.Close()
	w.wmu.Unlock()
	select {
	case <-dead:
		return
	case <-time.After(500 * time.Millisecond):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-dead:
		return
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-dead
}
