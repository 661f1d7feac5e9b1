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
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/ipc"
)

// HandlerFunc answers one method. Return an *ipc.RPCError to answer with an
// error object; any other error becomes -32603. The result is encoded with
// encoding/json unless it is a json.RawMessage.
type HandlerFunc func(ctx context.Context, params json.RawMessage) (any, error)

// Behavior makes a server misbehave the way some real peers do.
type Behavior struct {
	// Delay holds every answer back this long.
	Delay time.Duration
	// Silent reads requests and never answers (a stale primal).
	Silent bool
	// NeverRead accepts connections and never reads from them.
	NeverRead bool
	// Garbage answers every request with a line that is not JSON.
	Garbage bool
	// Oversize answers every request with a valid response this many bytes long.
	Oversize int
	// CloseMidLine writes half of each answer and closes the connection.
	CloseMidLine bool
	// Duplicate answers every request twice.
	Duplicate bool
	// WrongID answers with an id the client never sent (id + 1000).
	WrongID bool
	// OnConnect is written to every new connection before anything else.
	OnConnect []byte
}

// Config describes a simulated peer.
type Config struct {
	// Methods answer requests by method name.
	Methods map[string]HandlerFunc
	// Lean speaks the lean NDJSON wire: replies carry no "jsonrpc", ids must
	// be unsigned integers (a string id makes the server drop the connection
	// silently), and requests are handled concurrently so replies come back
	// out of order.
	Lean bool
	// Concurrent handles each request on its own goroutine (replies may be
	// reordered). Lean servers are always concurrent.
	Concurrent bool
	// Behavior injects misbehaviour.
	Behavior Behavior
	// Accept, when set, sees every new connection first (first buffers what
	// the client sent). It returns a framer to serve the connection through
	// (after a handshake), or nil to serve NDJSON lines as usual; ok=false
	// means it refused the connection and the server closes it.
	Accept func(c net.Conn, first *bufio.Reader) (f ipc.Framer, ok bool)
	// MaxLine bounds one incoming line (default 16 MiB).
	MaxLine int
	// MaxInflight bounds the requests of one connection handled at once
	// (Concurrent servers; 0: no bound). A full connection is not read
	// until one finishes or the client hangs up.
	MaxInflight int
	// MaxInflightTotal bounds the requests handled at once over every
	// connection of the server together (Concurrent servers; 0: no bound):
	// a connection waits, unread, for a place as for one of its own.
	MaxInflightTotal int
	// MaxInflightBytes bounds the bytes of the requests handled at once
	// over every connection together (their lines or frames as they came;
	// Concurrent servers; 0: no bound): a connection waits, unread, for
	// room as for a place. A request larger than the bound waits for all
	// of it.
	MaxInflightBytes int64
	// MaxConns bounds the connections served at once (0: no bound); a
	// connection past it is closed at once.
	MaxConns int
	// Dispatch, when set, answers every request in place of Methods, and
	// says whether the answer goes out as usual or with a fault of its own
	// (the mock's faults).
	Dispatch DispatchFunc
}

// DispatchFunc answers one request: a result or an error, and how to send
// it (FaultNone: as usual). ctx ends when the request's client hangs up or
// the server stops.
type DispatchFunc func(ctx context.Context, method string, params json.RawMessage) (any, error, Fault)

// Fault is how one answer misbehaves.
type Fault int

// The per-request faults.
const (
	FaultNone    Fault = iota
	FaultDrop          // never answer
	FaultClose         // hang up without answering
	FaultCut           // write half the answer, then hang up
	FaultGarbage       // answer with a line that is not JSON
)

// Server is a running simulated peer on a Unix socket or TCP port.
type Server struct {
	cfg Config
	acc *Acceptor
	// Path is the socket path (empty for TCP servers).
	Path string
	// Addr is the listener address (the path, or host:port).
	Addr string

	mu     sync.Mutex
	conns  map[*ServerConn]struct{}
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
	calls  atomic.Int64
	// bounds hold a place and the size of every request being handled,
	// over every connection (Config.MaxInflightTotal, MaxInflightBytes).
	bounds Bounds
}

// ServerConn is one client connection to a Server.
type ServerConn struct {
	srv     *Server
	c       net.Conn
	wmu     sync.Mutex
	w       *bufio.Writer
	nextID  atomic.Uint64
	pmu     sync.Mutex
	pending map[string]chan *ipc.Message
	fr      ipc.Framer  // non-nil when serving through a handshake's framer
	probed  atomic.Bool // gone sent its urgent byte (TCP)
	// ctx ends when the client hangs up (a half-close still gets its
	// answers), the server side closes it, or the server stops; its
	// handlers get it.
	ctx    context.Context
	cancel context.CancelFunc
}

// Listen starts a server on a new Unix socket at path.
func Listen(path string, cfg Config) (*Server, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	s := serve(ln, cfg)
	s.Path = path
	return s, nil
}

// ListenTCP starts a server on a loopback TCP port ("127.0.0.1:0" picks one).
func ListenTCP(addr string, cfg Config) (*Server, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return serve(ln, cfg), nil
}

func serve(ln net.Listener, cfg Config) *Server {
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = 16 << 20
	}
	if cfg.Lean {
		cfg.Concurrent = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, Addr: ln.Addr().String(), conns: map[*ServerConn]struct{}{}, ctx: ctx, cancel: cancel}
	s.bounds = NewBounds(cfg.MaxInflightTotal, cfg.MaxInflightBytes)
	s.acc = Serve(ln, s.serveConn)
	return s
}

// Endpoint returns the server's address as an endpoint.
func (s *Server) Endpoint() ipc.Endpoint {
	if s.Path != "" {
		return ipc.Endpoint{Transport: ipc.Unix, Path: s.Path}
	}
	return ipc.Endpoint{Transport: ipc.TCP, Address: s.Addr}
}

// Calls reports how many requests the server has received.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Close stops the server, closes every connection, waits for its goroutines
// and removes its socket file.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	err := s.acc.Close()
	if s.Path != "" {
		_ = os.Remove(s.Path)
	}
	return err
}

// Conns returns the connections open now.
func (s *Server) Conns() []*ServerConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*ServerConn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Notify sends a JSON-RPC notification to every connection (a lean server
// sends it as a {type,data} event instead).
func (s *Server) Notify(method string, params any) {
	for _, c := range s.Conns() {
		if s.cfg.Lean {
			_ = c.Event(method, params)
		} else {
			_ = c.Notify(method, params)
		}
	}
}

// serveConn serves one connection the acceptor took.
func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	sc := &ServerConn{srv: s, c: c, w: bufio.NewWriterSize(c, 64<<10), pending: map[string]chan *ipc.Message{}}
	sc.ctx, sc.cancel = context.WithCancel(ctx)
	defer sc.cancel()
	s.mu.Lock()
	if s.cfg.MaxConns > 0 && len(s.conns) >= s.cfg.MaxConns {
		s.mu.Unlock()
		return // the acceptor closes it
	}
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
	sc.serve()
}

func (sc *ServerConn) serve() {
	s := sc.srv
	b := s.cfg.Behavior
	if b.NeverRead {
		<-sc.ctx.Done()
		return
	}
	r := bufio.NewReaderSize(sc.c, 64<<10)
	if s.cfg.Accept != nil {
		fr, ok := s.cfg.Accept(sc.c, r)
		if !ok {
			return
		}
		if fr != nil {
			sc.wmu.Lock()
			sc.fr = fr
			sc.wmu.Unlock()
			defer fr.Close()
		}
	}
	if len(b.OnConnect) > 0 {
		sc.write(b.OnConnect, true)
	}
	var hwg sync.WaitGroup
	defer sc.drain(&hwg)
	var slots chan struct{}
	if s.cfg.MaxInflight > 0 {
		slots = make(chan struct{}, s.cfg.MaxInflight)
	}
	for {
		var line []byte
		var err error
		if sc.fr != nil {
			line, err = sc.fr.ReadFrame()
		} else {
			line, err = ReadLine(r, s.cfg.MaxLine)
		}
		if err != nil {
			return
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, derr := ipc.DecodeMessage(line)
		if derr != nil {
			sc.writeMsg(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "Parse error"}}, true)
			continue
		}
		switch m.Kind {
		case ipc.KindResponse, ipc.KindUnmatched:
			sc.settle(m)
			continue
		case ipc.KindRequest, ipc.KindNotification:
		default:
			continue
		}
		if s.cfg.Lean {
			// The lean daemon drops a connection on an id that is not an
			// unsigned integer (a null one it reads as absent: answered).
			if _, ok := m.NumericID(); !ok && m.Kind == ipc.KindRequest && string(m.ID) != "null" || len(m.ID) > 0 && m.ID[0] == '"' {
				return
			}
		}
		s.calls.Add(1)
		if b.Silent {
			continue
		}
		flush := sc.fr != nil || r.Buffered() == 0
		if s.cfg.Concurrent {
			release, ok := s.bounds.Admit(sc.ctx, slots, len(line), sc.gone)
			if !ok {
				return
			}
			hwg.Add(1)
			go func() {
				defer hwg.Done()
				defer release()
				sc.dispatch(m, true)
			}()
			continue
		}
		sc.dispatch(m, flush)
	}
}

// hangupCheck is how often a connection with every slot taken looks whether
// its client hung up (it is not read meanwhile, so EOF would go unseen).
const hangupCheck = 50 * time.Millisecond

// drain waits for the connection's handlers once it is read no more. A
// client that only stopped sending (a half-close, as `socat -` does) still
// gets its answers; one that hung up ends their context.
func (sc *ServerConn) drain(hwg *sync.WaitGroup) {
	defer sc.cancel()
	done := make(chan struct{})
	go func() {
		hwg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return
	default:
	}
	if sc.gone(0) { // over TCP, this sends the probe at once
		sc.cancel()
		<-done
		return
	}
	t := time.NewTicker(hangupCheck)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-sc.ctx.Done():
			<-done
			return
		case <-t.C:
			if sc.gone(0) {
				sc.cancel()
				<-done
				return
			}
		}
	}
}

// gone reports whether the client has left, for a connection the server
// is not reading: its read side ended with requests in flight (full is 0),
// or every slot has been taken for full. A Unix socket says so (hungUp).
// Over TCP a client's close and a half-close both arrive as a FIN, and only
// sending to it tells them apart (a closed client answers with a reset): once
// the FIN is in, gone sends one urgent byte (urgentProbe), which a client
// that still reads never sees in its stream, and the reset it draws from a
// client that closed is seen at the next look. A full connection may see no
// FIN at all (a client that closed with requests unsent waits for the
// server to read them before its FIN goes), so one full for fullProbe is
// sent the byte too. Without it a TCP client that closed with calls in
// flight was seen only when their answers were written: a delay fault of
// 30 s kept working 30 s for nobody.
func (sc *ServerConn) gone(full time.Duration) bool {
	return hungUp(sc.c) || probeTCP(sc.c, &sc.probed, full)
}

// probeTCP sends c its urgent byte (urgentProbe) when c is TCP, full for
// fullProbe or its peer done sending, and probed says none went yet; true
// when the send failed (the client is gone).
func probeTCP(c net.Conn, probed *atomic.Bool, full time.Duration) bool {
	if _, tcp := c.(*net.TCPConn); tcp && (full >= fullProbe || peerDoneSending(c)) && probed.CompareAndSwap(false, true) {
		return urgentProbe(c) != nil
	}
	return false
}

// fullProbe is how long a TCP connection waits unread for room before gone
// sends its urgent byte without a FIN: past a burst of pipelined requests.
const fullProbe = 500 * time.Millisecond

// urgentProbe sends one byte of TCP urgent data (MSG_OOB) on c: a client
// that reads its stream as usual (without SO_OOBINLINE, the default) never
// reads it there, but a client that closed answers it with a reset, as it
// answers any data. It is sent once a connection: a second urgent byte
// would push the first into the stream.
func urgentProbe(c net.Conn) error {
	sysc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sysc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if cerr := rc.Control(func(fd uintptr) { serr = unix.Sendto(int(fd), []byte{0}, unix.MSG_OOB, nil) }); cerr != nil {
		return cerr
	}
	if errors.Is(serr, unix.EAGAIN) {
		return nil // the send buffer is full: no byte went, and the client is reading answers
	}
	return serr
}

// hungUp reports whether the client of c has closed the connection (or it
// broke), whatever it sent before that the server has not read yet. A
// client that only shut down its sending side has not hung up.
func hungUp(c net.Conn) bool {
	rev, ok := pollConn(c, 0) // POLLHUP and POLLERR are always reported
	return !ok || rev&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// peerDoneSending reports whether the peer of c has shut down its sending
// side (closed, or half-closed), whatever is left unread.
func peerDoneSending(c net.Conn) bool {
	rev, ok := pollConn(c, unix.POLLRDHUP)
	return !ok || rev&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
}

// pollConn polls c's socket for events without waiting; ok=false when it
// cannot be polled because it is closed or broken. A connection that is no
// socket (a pipe in a test) reports nothing.
func pollConn(c net.Conn, events int16) (revents int16, ok bool) {
	sysc, isSys := c.(syscall.Conn)
	if !isSys {
		return 0, true
	}
	rc, err := sysc.SyscallConn()
	if err != nil {
		return 0, false
	}
	cerr := rc.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		if n, err := unix.Poll(pfd, 0); err == nil && n > 0 {
			revents = pfd[0].Revents
		}
	})
	return revents, cerr == nil
}

// ReadLine reads one line from r and returns it without its newline; a line
// longer than max bytes is an error (the simulated peers drop the
// connection). It is the peers' own reader, not the client's, so a test
// pitting the two against each other does not share a bug between them.
func ReadLine(r *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > max {
			return nil, errors.New("line too long")
		}
		if err == nil {
			if buf == nil {
				return append([]byte(nil), chunk[:len(chunk)-1]...), nil
			}
			buf = append(buf, chunk...)
			return buf[:len(buf)-1], nil
		}
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func (sc *ServerConn) dispatch(m *ipc.Message, flush bool) {
	s := sc.srv
	b := s.cfg.Behavior
	h := s.cfg.Methods[m.Method]
	var res any
	var herr error
	fault := FaultNone
	switch {
	case s.cfg.Dispatch != nil:
		res, herr, fault = s.cfg.Dispatch(sc.ctx, m.Method, m.Params)
	case h == nil:
		herr = &ipc.RPCError{Code: -32601, Message: "Method not found: " + m.Method}
	default:
		res, herr = h(sc.ctx, m.Params)
	}
	if m.Kind == ipc.KindNotification || sc.ctx.Err() != nil {
		return // nobody to answer
	}
	if b.Delay > 0 && !backoff.Sleep(sc.ctx, b.Delay) {
		return
	}
	id := m.ID
	if b.WrongID {
		if n, ok := m.NumericID(); ok {
			id = json.RawMessage(strconv.FormatUint(n+1000, 10))
		}
	}
	resp := sc.envelope(id)
	if herr != nil {
		var re *ipc.RPCError
		if !errors.As(herr, &re) {
			re = &ipc.RPCError{Code: -32603, Message: herr.Error()}
		}
		resp["error"] = re
	} else {
		if res == nil {
			res = json.RawMessage("null")
		}
		resp["result"] = res
	}
	switch {
	case fault == FaultDrop:
		if flush { // answers held for a pipelined batch still go out
			sc.wmu.Lock()
			sc.w.Flush()
			sc.wmu.Unlock()
		}
	case fault == FaultClose:
		sc.c.Close()
	case b.Garbage || fault == FaultGarbage:
		sc.write([]byte("<html>this is not JSON-RPC</html>"), flush)
	case b.Oversize > 0:
		pad := b.Oversize - 40
		if pad < 0 {
			pad = 0
		}
		resp["result"] = string(bytes.Repeat([]byte("x"), pad))
		delete(resp, "error")
		sc.writeMsg(resp, true)
	case (b.CloseMidLine || fault == FaultCut) && sc.fr == nil:
		out, _ := json.Marshal(resp)
		sc.wmu.Lock()
		sc.w.Write(out[:len(out)/2])
		sc.w.Flush()
		sc.wmu.Unlock()
		sc.c.Close()
	case b.Duplicate:
		sc.writeMsg(resp, false)
		sc.writeMsg(resp, flush)
	default:
		sc.write(sc.encodeResponse(id, res, herr), flush)
	}
}

// encodeResponse builds a response line without reflection on the envelope
// (the server must not be the bottleneck of a throughput benchmark).
func (sc *ServerConn) encodeResponse(id json.RawMessage, res any, herr error) []byte {
	b := make([]byte, 0, 128)
	b = append(b, '{')
	if !sc.srv.cfg.Lean {
		b = append(b, `"jsonrpc":"2.0",`...)
	}
	b = append(b, `"id":`...)
	b = append(b, id...)
	if herr != nil {
		var re *ipc.RPCError
		if !errors.As(herr, &re) {
			re = &ipc.RPCError{Code: -32603, Message: herr.Error()}
		}
		e, _ := json.Marshal(re)
		b = append(b, `,"error":`...)
		b = append(b, e...)
		return append(b, '}')
	}
	var out []byte
	switch r := res.(type) {
	case nil:
		out = []byte("null")
	case json.RawMessage:
		out = r
	default:
		var err error
		if out, err = json.Marshal(res); err != nil {
			out, _ = json.Marshal(&ipc.RPCError{Code: -32603, Message: "encode result: " + err.Error()})
			b = append(b, `,"error":`...)
			b = append(b, out...)
			return append(b, '}')
		}
	}
	b = append(b, `,"result":`...)
	b = append(b, out...)
	return append(b, '}')
}

func (sc *ServerConn) envelope(id json.RawMessage) map[string]any {
	m := map[string]any{"id": id}
	if !sc.srv.cfg.Lean {
		m["jsonrpc"] = "2.0"
	}
	return m
}

func (sc *ServerConn) writeMsg(v any, flush bool) error {
	out, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return sc.write(out, flush)
}

// write sends one line; flush=false lets answers to pipelined requests share
// one write.
func (sc *ServerConn) write(line []byte, flush bool) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	if sc.fr != nil {
		return sc.fr.WriteFrame(bytes.TrimRight(line, "\n"))
	}
	sc.w.Write(line)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		sc.w.WriteByte('\n')
	}
	if flush {
		return sc.w.Flush()
	}
	return nil
}

// WriteRaw sends bytes as they are (for tests of malformed frames).
func (sc *ServerConn) WriteRaw(p []byte) error {
	sc.wmu.Lock()
	defer sc.wmu.Unlock()
	sc.w.Write(p)
	return sc.w.Flush()
}

// Notify sends a JSON-RPC notification on this connection.
func (sc *ServerConn) Notify(method string, params any) error {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	return sc.writeMsg(m, true)
}

// Event sends a lean {type,data} event on this connection.
func (sc *ServerConn) Event(typ string, data any) error {
	return sc.writeMsg(map[string]any{"type": typ, "data": data}, true)
}

// Ask sends a server-initiated request (id "s<N>") and waits for the
// client's answer.
func (sc *ServerConn) Ask(ctx context.Context, method string, params any) (*ipc.Message, error) {
	id := "s" + strconv.FormatUint(sc.nextID.Add(1), 10)
	ch := make(chan *ipc.Message, 1)
	sc.pmu.Lock()
	sc.pending[strconv.Quote(id)] = ch
	sc.pmu.Unlock()
	defer func() {
		sc.pmu.Lock()
		delete(sc.pending, strconv.Quote(id))
		sc.pmu.Unlock()
	}()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	if err := sc.writeMsg(m, true); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (sc *ServerConn) settle(m *ipc.Message) {
	sc.pmu.Lock()
	ch := sc.pending[string(m.ID)]
	sc.pmu.Unlock()
	if ch != nil {
		select {
		case ch <- m:
		default:
		}
	}
}

// Close closes this connection from the server side.
func (sc *ServerConn) Close() error { return sc.c.Close() }

var _ io.Closer = (*Server)(nil)
