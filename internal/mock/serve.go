package mock

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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// Wire is what the mock speaks.
type Wire string

// The wires.
const (
	WireJSONRPC Wire = "jsonrpc" // NDJSON JSON-RPC, the riboCipher prefix accepted
	WireLean    Wire = "lean"    // lean NDJSON
	WireHolon   Wire = "holon"   // Holon-RPC over WebSocket
)

// Listen says where and how the mock serves.
type Listen struct {
	// Endpoint is a Unix socket, a TCP address, or a ws:// URL (holon).
	Endpoint ipc.Endpoint
	Wire     Wire
	// Seed, when set, serves only over BTSP with this family seed (the
	// server side of a family-scoped primal).
	Seed []byte
	// SpeakFirst makes a holon mock send its Hello first, as recorded.
	SpeakFirst bool
	// Remote allows a TCP or WebSocket address that is not loopback: anyone
	// who reaches it reads the recorded answers and toggles the faults.
	Remote bool
}

// Limits on what one mock serves.
const (
	maxRequestBytes = 4 << 20
	maxLineStdio    = 4 << 20
	maxConns        = 64 // connections at once
	maxInflight     = 64 // requests of one connection answered at once
	// maxInflightAll bounds the requests answered at once over every
	// connection of one listener together (64 connections of 64 would be
	// 4,096), and maxInflightBytes their size: 256 requests of 4 MiB
	// would still hold 1 GiB; at 64 MiB the requests in flight hold 64
	// MiB (with one read and waiting for room on each connection, 256 MiB
	// more at worst).
	maxInflightAll   = 256
	maxInflightBytes = 64 << 20
)

// CleartextError is a mock of a BTSP-only target asked to serve on a wire
// that has no BTSP (WebSocket, stdio): it would hand the family's data to
// anyone.
type CleartextError struct{ Wire string }

func (e *CleartextError) Error() string {
	return fmt.Sprintf("the target was recorded over BTSP: the mock serves it over BTSP only, not %s (serve it on a Unix socket or tcp:// with the family's seed)", e.Wire)
}

// RemoteError is a TCP or WebSocket address that is not loopback, not
// allowed by name (Listen.Remote).
type RemoteError struct{ Endpoint string }

func (e *RemoteError) Error() string {
	return fmt.Sprintf("%s is not a loopback address: anyone who reaches it could read the recorded answers and toggle the faults (--listen-remote allows it)", e.Endpoint)
}

// IsLoopback reports whether a host:port listens on loopback only (an
// empty host or 0.0.0.0 listens everywhere; a name other than localhost is
// not trusted to stay loopback).
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// InUseError is a listen address that something already answers on.
type InUseError struct {
	Endpoint string
	Holder   string
}

func (e *InUseError) Error() string {
	if e.Holder != "" {
		return fmt.Sprintf("%s is in use (held by %s)", e.Endpoint, e.Holder)
	}
	return fmt.Sprintf("%s is in use: something answers there", e.Endpoint)
}

// Server is a running mock.
type Server struct {
	Endpoint ipc.Endpoint
	closer   io.Closer
}

// Close stops the mock, closes its connections and removes its socket.
func (s *Server) Close() error { return s.closer.Close() }

func (m *Mock) dispatch(ctx context.Context, method string, params json.RawMessage) (any, error, peer.Fault) {
	a := m.Handle(ctx, method, params)
	return a.Result, a.Err, a.Fault
}

// Serve starts serving at l. A Unix socket path that a live server holds is
// an *InUseError; a socket file nobody answers on is replaced.
//
// A seed with a wire that has no BTSP is a *CleartextError, an address
// that is not loopback without l.Remote a *RemoteError.
func (m *Mock) Serve(l Listen) (*Server, error) {
	ep := l.Endpoint
	if m.opts.BTSPOnly && len(l.Seed) == 0 {
		return nil, &CleartextError{Wire: "without a seed"}
	}
	switch l.Wire {
	case WireHolon:
		if ep.Transport != ipc.WS {
			return nil, fmt.Errorf("a holon mock listens on ws://HOST:PORT/PATH, not %s", ep)
		}
		if len(l.Seed) > 0 || m.opts.BTSPOnly {
			return nil, &CleartextError{Wire: "over Holon-RPC (WebSocket has no BTSP)"}
		}
		hostPath := strings.TrimPrefix(ep.URL, "ws://")
		addr, path, _ := strings.Cut(hostPath, "/")
		if !l.Remote && !IsLoopback(addr) {
			return nil, &RemoteError{Endpoint: ep.String()}
		}
		hs, err := peer.ListenHolon(addr, peer.HolonConfig{Path: "/" + path, Dispatch: m.dispatch, SpeakFirst: l.SpeakFirst,
			HelloTimeout: 3 * time.Second, MaxMessage: maxRequestBytes, Lenient: true, MaxConns: maxConns,
			Concurrent: true, MaxInflight: maxInflight, MaxInflightTotal: maxInflightAll, MaxInflightBytes: m.maxBytes})
		if err != nil {
			return nil, inUse(ep.String(), err)
		}
		return &Server{Endpoint: hs.Endpoint(), closer: hs}, nil
	}
	cfg := peer.Config{Dispatch: m.dispatch, Lean: l.Wire == WireLean, MaxLine: maxRequestBytes, Concurrent: true,
		MaxInflight: maxInflight, MaxInflightTotal: maxInflightAll, MaxInflightBytes: m.maxBytes, MaxConns: maxConns}
	switch {
	case len(l.Seed) > 0:
		cfg.Accept = peer.RiboCipher(peer.PrefixOptional, m.opts.Name, peer.BTSPGate(btsp.ServerConfig{Seed: l.Seed}, false))
	case l.Wire != WireLean:
		cfg.Accept = peer.RiboCipher(peer.PrefixOptional, m.opts.Name, nil)
	}
	switch ep.Transport {
	case ipc.Unix:
		if err := freeSocket(ep.Path); err != nil {
			return nil, err
		}
		s, err := peer.Listen(ep.Path, cfg)
		if err != nil {
			return nil, err
		}
		_ = os.Chmod(ep.Path, 0o600)
		return &Server{Endpoint: s.Endpoint(), closer: s}, nil
	case ipc.TCP:
		if !l.Remote && !IsLoopback(ep.Address) {
			return nil, &RemoteError{Endpoint: ep.String()}
		}
		s, err := peer.ListenTCP(ep.Address, cfg)
		if err != nil {
			return nil, inUse(ep.String(), err)
		}
		return &Server{Endpoint: s.Endpoint(), closer: s}, nil
	}
	return nil, fmt.Errorf("the mock cannot listen on %s (a Unix socket, tcp://HOST:PORT, ws://HOST:PORT/PATH or stdio)", ep)
}

// freeSocket makes path ready to listen on: nothing there, or a socket file
// of ours that refuses connections (its server is gone: removed). A socket
// that answers, or that cannot be dialed for another reason (a full
// backlog, a slow or busy server, no permission), is an *InUseError; any
// other file is left alone and refused.
func freeSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket: not replacing it", path)
	}
	c, err := net.DialTimeout("unix", path, 200*time.Millisecond)
	if err == nil {
		c.Close()
		return &InUseError{Endpoint: path, Holder: holder(path)}
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return &InUseError{Endpoint: path, Holder: holder(path)}
	}
	// Just before removing: still the file that refused, and ours.
	again, err := os.Lstat(path)
	if err != nil || !os.SameFile(fi, again) {
		return &InUseError{Endpoint: path}
	}
	if st, ok := again.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s is a dead socket of another user: not removing it", path)
	}
	return os.Remove(path)
}

func inUse(ep string, err error) error {
	if strings.Contains(err.Error(), "address already in use") {
		return &InUseError{Endpoint: ep}
	}
	return err
}

// holder names the process that holds a Unix socket, from /proc (Linux),
// or "" when it cannot tell.
func holder(path string) string {
	data, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		return ""
	}
	var inode string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 8 && f[len(f)-1] == path && f[5] == "01" { // listening
			inode = f[6]
			break
		}
	}
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	procs, _ := os.ReadDir("/proc")
	for i, p := range procs {
		if i > 4096 {
			break
		}
		fds, err := os.ReadDir("/proc/" + p.Name() + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink("/proc/" + p.Name() + "/fd/" + fd.Name()); err == nil && l == want {
				comm, _ := os.ReadFile("/proc/" + p.Name() + "/comm")
				return fmt.Sprintf("pid %s (%s)", p.Name(), strings.TrimSpace(string(comm)))
			}
		}
	}
	return ""
}

// ServeStdio answers NDJSON JSON-RPC on in and out until in ends or ctx is
// done: the mock as a stdio bus worker (--listen stdio). A request's
// sessionId is echoed, as a bus worker does for affinity.
//
// Requests are handled concurrently, as on a socket: at most maxInflight at
// once, of maxInflightBytes in all (a full worker reads no more until one
// finishes), each answer
// written whole, one at a time. When in ends, the answers in flight still
// go out; when ctx is done, or a close or cut fault hangs up, they end and
// ServeStdio returns, once an answer being written when ctx ended is
// written (a consumer that stops reading out holds it there: an io.Writer
// cannot be interrupted either). Its reader then ends at in's next line
// or end (an io.Reader cannot be interrupted).
func (m *Mock) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	if m.opts.BTSPOnly {
		return &CleartextError{Wire: "on a stdio bus"}
	}
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := peer.ReadLine(r, maxLineStdio)
			if err != nil {
				readErr <- err
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	w := &stdioOut{w: bufio.NewWriter(out), stop: cancel}
	slots := make(chan struct{}, maxInflight)
	bounds := peer.NewBounds(0, m.maxBytes) // one connection: its bytes (64 of 4 MiB would be 256 MiB)
	var hwg sync.WaitGroup
	defer hwg.Wait() // after cancel on every early return (defers run last first)
	for {
		var line []byte
		select {
		case <-ctx.Done():
			cancel()
			hwg.Wait()
			if w.hungUp() {
				return w.err()
			}
			return parent.Err()
		case err := <-readErr:
			hwg.Wait() // the answers in flight still go out
			if w.hungUp() || errors.Is(err, io.EOF) {
				return w.err()
			}
			return err
		case line = <-lines:
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		msg, derr := ipc.DecodeMessage(line)
		if derr != nil {
			w.line([]byte(peer.ParseErrorLine))
			continue
		}
		if msg.Kind != ipc.KindRequest {
			continue
		}
		release, ok := bounds.Admit(ctx, slots, len(line), nil)
		if !ok {
			continue // ctx ended: the loop's next turn returns
		}
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			defer release()
			m.answerStdio(ctx, w, msg, line)
		}()
	}
}

// answerStdio answers one request of ServeStdio.
func (m *Mock) answerStdio(ctx context.Context, w *stdioOut, msg *ipc.Message, line []byte) {
	a := m.Handle(ctx, msg.Method, msg.Params)
	switch a.Fault {
	case peer.FaultDrop:
		return
	case peer.FaultClose, peer.FaultCut:
		w.hangUp()
		return
	case peer.FaultGarbage:
		w.line([]byte("<html>this is not JSON-RPC</html>"))
		return
	}
	if ctx.Err() != nil {
		return // stopped: nobody to answer
	}
	resp := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
	if sid := sessionOf(line); sid != nil {
		resp["sessionId"] = sid
	}
	if a.Err != nil {
		var re *ipc.RPCError
		if !errors.As(a.Err, &re) {
			re = &ipc.RPCError{Code: -32603, Message: a.Err.Error()}
		}
		resp["error"] = re
	} else {
		if a.Result == nil {
			a.Result = json.RawMessage("null")
		}
		resp["result"] = a.Result
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": &ipc.RPCError{Code: -32603, Message: "encode answer: " + err.Error()}})
	}
	w.line(b)
}

// stdioOut writes ServeStdio's answers whole, one at a time. A write that
// fails (the reader of out is gone) or a hang-up fault stops the serving.
type stdioOut struct {
	mu     sync.Mutex
	w      *bufio.Writer
	stop   context.CancelFunc
	hung   bool // a close or cut fault: nothing more is written
	failed error
}

func (o *stdioOut) line(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.hung || o.failed != nil {
		return
	}
	o.w.Write(b)
	o.w.WriteByte('\n')
	if err := o.w.Flush(); err != nil {
		o.failed = err
		o.stop()
	}
}

func (o *stdioOut) hangUp() {
	o.mu.Lock()
	o.hung = true
	o.mu.Unlock()
	o.stop()
}

// hungUp says serving stopped on out's side: a hang-up fault or a failed write.
func (o *stdioOut) hungUp() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.hung || o.failed != nil
}

// err is a failed write's error (nil after a hang-up fault: the mock's own doing).
func (o *stdioOut) err() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.failed
}

func sessionOf(line []byte) json.RawMessage {
	var env struct {
		SessionID json.RawMessage `json:"sessionId"`
	}
	if json.Unmarshal(line, &env) != nil || len(env.SessionID) == 0 {
		return nil
	}
	return env.SessionID
}
