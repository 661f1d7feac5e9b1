package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// HolonConfig describes a simulated Holon-RPC server (a go-holons WebBridge or a
// js-web-holons server, and the ways real ones bend the rules).
type HolonConfig struct {
	// Methods answer requests by method name. rpc.heartbeat and rpc.peers
	// are built in.
	Methods map[string]HandlerFunc
	// Path is where Holon-RPC is served (default /rpc); other paths are 404.
	Path string
	// Lenient serves clients that did not offer the subprotocol and answers
	// envelope faults with an error; a strict server (the default) closes
	// with 1002 on both, as the JS server does.
	Lenient bool
	// SpeakFirst sends client.v1.Client/Hello (id "s1") right after the
	// upgrade and expects the client to answer it within HelloTimeout
	// (default 10 s; a go-holons server waits 3 s).
	SpeakFirst   bool
	HelloTimeout time.Duration
	// IDlessErrors answers errors without an id, and parse errors with
	// "id":null, as some Go servers do.
	IDlessErrors bool
	// NumericIDs echoes numeric-looking ids back as JSON numbers.
	NumericIDs bool
	// BinaryFrame sends a binary frame right after the upgrade.
	BinaryFrame bool
	// Heartbeat makes the server send rpc.heartbeat this often (0: never).
	Heartbeat time.Duration
	// IgnoreHeartbeats leaves the client's rpc.heartbeat unanswered.
	IgnoreHeartbeats bool
	// MaxMessage bounds one incoming message (default 1 MiB).
	MaxMessage int64
	// MaxConns bounds the connections served at once (0: no bound); an
	// upgrade past it is answered 503.
	MaxConns int
	// Dispatch, when set, answers every request but the built-in
	// rpc.heartbeat and rpc.peers in place of Methods (see Config.Dispatch).
	Dispatch DispatchFunc
	// Concurrent handles each message of a connection on its own goroutine
	// (answers may be reordered; each is written whole), at most
	// MaxInflight of one connection at once (0: no bound), as Config's.
	// A full connection is not read until one finishes or the client
	// leaves. Handlers end with their connection.
	Concurrent  bool
	MaxInflight int
	// MaxInflightTotal bounds the messages handled at once over every
	// connection together (Concurrent servers; 0: no bound), as Config's.
	MaxInflightTotal int
	// MaxInflightBytes bounds the bytes of the messages handled at once
	// over every connection together (Concurrent servers; 0: no bound), as
	// Config's.
	MaxInflightBytes int64
}

// netConnKey carries an upgraded request's network connection in its
// context (http.Server.ConnContext), to see the client leave while the
// connection is not read.
type netConnKey struct{}

// HolonServer is a running simulated Holon-RPC server on a loopback TCP port.
type HolonServer struct {
	cfg HolonConfig
	ln  net.Listener
	srv *http.Server
	// URL is the ws:// URL of the Holon-RPC path.
	URL string

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	conns map[*HolonConn]struct{}

	accepted       atomic.Int64
	helloAnswered  atomic.Int64
	beatsAnswered  atomic.Int64 // server heartbeats the clients answered
	beatsReceived  atomic.Int64 // client heartbeats received
	protocolFaults atomic.Int64
	calls          atomic.Int64
	// bounds hold a place and the size of every message being handled,
	// over every connection (HolonConfig.MaxInflightTotal, MaxInflightBytes).
	bounds Bounds
}

// HolonConn is one client connection to a HolonServer.
type HolonConn struct {
	srv    *HolonServer
	ws     *websocket.Conn
	nextID atomic.Uint64
	pmu    sync.Mutex
	asks   map[string]chan json.RawMessage
}

// ListenHolon starts a Holon-RPC server on addr ("127.0.0.1:0" picks a port).
func ListenHolon(addr string, cfg HolonConfig) (*HolonServer, error) {
	if cfg.Path == "" {
		cfg.Path = holon.DefaultPath
	}
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = holon.DefaultMaxMessage
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	s := &HolonServer{cfg: cfg, ln: ln, conns: map[*HolonConn]struct{}{}}
	if cfg.Concurrent {
		s.bounds = NewBounds(cfg.MaxInflightTotal, cfg.MaxInflightBytes)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc(cfg.Path, s.handle)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, netConnKey{}, c) }}
	s.URL = "ws://" + ln.Addr().String() + cfg.Path
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the listener's host:port.
func (s *HolonServer) Addr() string { return s.ln.Addr().String() }

// Endpoint is the server's ipc endpoint.
func (s *HolonServer) Endpoint() ipc.Endpoint { return ipc.Endpoint{Transport: ipc.WS, URL: s.URL} }

// Accepted counts upgraded connections (reconnects show here).
func (s *HolonServer) Accepted() int64 { return s.accepted.Load() }

// HelloAnswered counts answers to the server's client.v1.Client/Hello.
func (s *HolonServer) HelloAnswered() int64 { return s.helloAnswered.Load() }

// HeartbeatsAnswered counts the server's rpc.heartbeat the clients answered.
func (s *HolonServer) HeartbeatsAnswered() int64 { return s.beatsAnswered.Load() }

// HeartbeatsReceived counts rpc.heartbeat requests the clients sent.
func (s *HolonServer) HeartbeatsReceived() int64 { return s.beatsReceived.Load() }

// ProtocolFaults counts envelopes from clients that broke the rules.
func (s *HolonServer) ProtocolFaults() int64 { return s.protocolFaults.Load() }

// Calls counts requests answered by Methods.
func (s *HolonServer) Calls() int64 { return s.calls.Load() }

// Conns lists the open connections.
func (s *HolonServer) Conns() []*HolonConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*HolonConn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Drop cuts every connection without a close frame (a crash, a network
// loss), to exercise reconnects. The server keeps listening.
func (s *HolonServer) Drop() {
	for _, c := range s.Conns() {
		_ = c.ws.CloseNow()
	}
}

// CloseAll starts closing every connection with code and reason (the close
// handshake completes in the background).
func (s *HolonServer) CloseAll(code int, reason string) {
	for _, c := range s.Conns() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			_ = c.ws.Close(websocket.StatusCode(code), reason)
		}()
	}
}

// Request sends a server-initiated request to every connection and does not
// wait for the answers.
func (s *HolonServer) Request(method string, params any) {
	for _, c := range s.Conns() {
		_, _ = c.send(method, params)
	}
}

// Close stops the server and every connection and waits for its goroutines.
func (s *HolonServer) Close() error {
	s.mu.Lock()
	s.cancel()
	s.mu.Unlock()
	err := s.srv.Close()
	for _, c := range s.Conns() {
		_ = c.ws.CloseNow()
	}
	s.wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

func (s *HolonServer) handle(w http.ResponseWriter, r *http.Request) {
	if s.ctx.Err() != nil {
		http.Error(w, "closing", http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	full := s.cfg.MaxConns > 0 && len(s.conns) >= s.cfg.MaxConns
	s.mu.Unlock()
	if full {
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{holon.Subprotocol}})
	if err != nil {
		return
	}
	s.accepted.Add(1)
	if ws.Subprotocol() != holon.Subprotocol && !s.cfg.Lenient {
		_ = ws.Close(websocket.StatusProtocolError, "missing holon-rpc subprotocol")
		return
	}
	ws.SetReadLimit(s.cfg.MaxMessage)
	c := &HolonConn{srv: s, ws: ws, asks: map[string]chan json.RawMessage{}}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		_ = ws.CloseNow()
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = ws.CloseNow()
		s.wg.Done()
	}()
	ctx, cancel := context.WithCancel(s.ctx)
	// The connection's handlers end with it: it is cancelled (the client
	// left, or the server stops), then they are waited for.
	var hwg sync.WaitGroup
	defer func() {
		cancel()
		hwg.Wait()
	}()
	var slots chan struct{}
	if s.cfg.Concurrent && s.cfg.MaxInflight > 0 {
		slots = make(chan struct{}, s.cfg.MaxInflight)
	}
	raw, _ := r.Context().Value(netConnKey{}).(net.Conn)
	// gone says, while the connection is not read, that its client is done
	// sending (a WebSocket has no half-close, so that client left), or,
	// full for fullProbe, that it answered the urgent byte with a reset (a
	// client that closed with frames unsent sends no FIN while they wait).
	var probed atomic.Bool
	gone := func(full time.Duration) bool {
		return raw != nil && (peerDoneSending(raw) || probeTCP(raw, &probed, full))
	}
	if s.cfg.BinaryFrame {
		_ = ws.Write(ctx, websocket.MessageBinary, []byte{0xde, 0xad, 0xbe, 0xef})
	}
	if s.cfg.SpeakFirst {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			wait := s.cfg.HelloTimeout
			if wait <= 0 {
				wait = 10 * time.Second
			}
			actx, acancel := context.WithTimeout(ctx, wait)
			defer acancel()
			if _, err := c.Ask(actx, "client.v1.Client/Hello", map[string]any{"server": "peer-holon", "version": "1.0.0"}); err == nil {
				s.helloAnswered.Add(1)
			}
		}()
	}
	if s.cfg.Heartbeat > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			t := time.NewTicker(s.cfg.Heartbeat)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				actx, acancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := c.Ask(actx, "rpc.heartbeat", map[string]any{})
				acancel()
				if err == nil {
					s.beatsAnswered.Add(1)
				}
			}
		}()
	}
	for {
		typ, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			s.protocolFaults.Add(1)
			if !s.cfg.Lenient {
				_ = ws.Close(websocket.StatusProtocolError, "binary frames are not Holon-RPC")
				return
			}
			continue
		}
		if s.cfg.Concurrent {
			release, ok := s.bounds.Admit(ctx, slots, len(data), gone)
			if !ok {
				return
			}
			hwg.Add(1)
			go func() {
				defer hwg.Done()
				defer release()
				if !c.dispatch(ctx, data) {
					cancel() // ends the read, and the connection
				}
			}()
			continue
		}
		if !c.dispatch(ctx, data) {
			return
		}
	}
}

// dispatch handles one client frame; false ends the connection.
func (c *HolonConn) dispatch(ctx context.Context, data []byte) bool {
	s := c.srv
	env := holon.Inspect(data)
	if len(env.Warnings) > 0 {
		s.protocolFaults.Add(1)
		if !s.cfg.Lenient {
			_ = c.ws.Close(websocket.StatusProtocolError, "invalid envelope: "+env.Warnings[0])
			return false
		}
		if env.Invalid {
			c.writeError(ctx, nil, -32700, "parse error")
			return true
		}
	}
	if env.IsResponse {
		c.pmu.Lock()
		ch := c.asks[env.IDString]
		delete(c.asks, env.IDString)
		c.pmu.Unlock()
		if ch != nil {
			var m struct {
				Result json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal(data, &m)
			ch <- m.Result
		}
		return true
	}
	if !env.IsRequest {
		c.writeError(ctx, nil, -32600, "invalid request")
		return true
	}
	var req struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(data, &req)
	switch env.Method {
	case "rpc.heartbeat":
		s.beatsReceived.Add(1)
		if s.cfg.IgnoreHeartbeats {
			return true
		}
		c.writeResult(ctx, env.ID, json.RawMessage(`{}`))
		return true
	case "rpc.peers":
		c.writeResult(ctx, env.ID, json.RawMessage(`{"peers":[{"id":"c1","methods":[]}]}`))
		return true
	}
	h := s.cfg.Methods[env.Method]
	if h == nil && s.cfg.Dispatch == nil {
		c.writeError(ctx, env.ID, 12, "method not registered: "+env.Method)
		return true
	}
	s.calls.Add(1)
	var res any
	var err error
	if s.cfg.Dispatch != nil {
		var fault Fault
		res, err, fault = s.cfg.Dispatch(ctx, env.Method, req.Params)
		switch fault {
		case FaultDrop:
			return true
		case FaultClose, FaultCut:
			_ = c.ws.Close(websocket.StatusGoingAway, "mock fault")
			return false
		case FaultGarbage:
			_ = c.ws.Write(ctx, websocket.MessageText, []byte("<html>this is not Holon-RPC</html>"))
			return true
		}
	} else {
		res, err = h(ctx, req.Params)
	}
	if err != nil {
		var re *ipc.RPCError
		if errors.As(err, &re) {
			c.writeError(ctx, env.ID, re.Code, re.Message)
		} else {
			c.writeError(ctx, env.ID, 13, err.Error())
		}
		return true
	}
	raw, ok := res.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(res)
		if err != nil {
			c.writeError(ctx, env.ID, 13, "encode result: "+err.Error())
			return true
		}
		raw = b
	}
	c.writeResult(ctx, env.ID, raw)
	return true
}

func (c *HolonConn) idOut(id json.RawMessage) json.RawMessage {
	if c.srv.cfg.NumericIDs {
		var s string
		if json.Unmarshal(id, &s) == nil {
			if _, err := strconv.ParseUint(s, 10, 64); err == nil {
				return json.RawMessage(s)
			}
		}
	}
	return id
}

func (c *HolonConn) writeResult(ctx context.Context, id, res json.RawMessage) {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, c.idOut(id)...)
	b = append(b, `,"result":`...)
	b = append(b, res...)
	b = append(b, '}')
	_ = c.ws.Write(ctx, websocket.MessageText, b)
}

func (c *HolonConn) writeError(ctx context.Context, id json.RawMessage, code int64, msg string) {
	m, _ := json.Marshal(msg)
	b := []byte(`{"jsonrpc":"2.0",`)
	switch {
	case id == nil && c.srv.cfg.IDlessErrors:
	case id == nil:
		b = append(b, `"id":null,`...)
	case c.srv.cfg.IDlessErrors:
		// Some Go servers leave the id out of every error answer.
	default:
		b = append(b, `"id":`...)
		b = append(b, c.idOut(id)...)
		b = append(b, ',')
	}
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, code, 10)
	b = append(b, `,"message":`...)
	b = append(b, m...)
	b = append(b, `}}`...)
	_ = c.ws.Write(ctx, websocket.MessageText, b)
}

// send writes a server-initiated request with a new id "s<N>".
func (c *HolonConn) send(method string, params any) (string, error) {
	id := "s" + strconv.FormatUint(c.nextID.Add(1), 10)
	return id, c.sendID(id, method, params)
}

func (c *HolonConn) sendID(id, method string, params any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	b := []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":`)
	mb, _ := json.Marshal(method)
	b = append(b, mb...)
	b = append(b, `,"params":`...)
	b = append(b, p...)
	b = append(b, '}')
	ctx, cancel := context.WithTimeout(c.srv.ctx, 5*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// Ask sends a server-initiated request and waits for the client's result.
func (c *HolonConn) Ask(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ch := make(chan json.RawMessage, 1)
	id := "s" + strconv.FormatUint(c.nextID.Add(1), 10)
	c.pmu.Lock()
	c.asks[id] = ch
	c.pmu.Unlock()
	if err := c.sendID(id, method, params); err != nil {
		c.pmu.Lock()
		delete(c.asks, id)
		c.pmu.Unlock()
		return nil, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-ctx.Done():
		c.pmu.Lock()
		delete(c.asks, id)
		c.pmu.Unlock()
		return nil, ctx.Err()
	}
}

// Close closes this connection with code and reason.
func (c *HolonConn) Close(code int, reason string) error {
	return c.ws.Close(websocket.StatusCode(code), reason)
}

// WriteRaw sends a raw text frame.
func (c *HolonConn) WriteRaw(p []byte) error {
	ctx, cancel := context.WithTimeout(c.srv.ctx, 5*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, p)
}
