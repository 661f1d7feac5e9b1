// Package holon speaks Holon-RPC: JSON-RPC 2.0 envelopes in WebSocket text
// frames with the subprotocol "holon-rpc" (see holon-rpc.md and the "Holon-RPC
// in practice" notes of ECOSYSTEM-FACTS.md).
//
// Dial opens one connection and returns a Framer, which ipc.Conn drives like
// any other framing. A Session is a Framer for long-lived use: it sends its
// own heartbeats and reconnects with backoff when the connection drops.
//
// The package is strict in what it sends and tolerant in what it receives:
// frames that bend the envelope rules (numeric ids, errors without ids,
// unknown fields, a server that speaks first, binary frames) are passed on
// and reported as warnings through the trace callback.
//
// It is a leaf: it knows nothing of package ipc, which imports it.
package holon

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// Subprotocol is the WebSocket subprotocol of Holon-RPC.
const Subprotocol = "holon-rpc"

// DefaultPath is where holons serve Holon-RPC.
const DefaultPath = "/rpc"

// DefaultMaxMessage is the largest incoming message accepted unless told
// otherwise (what holons themselves accept).
const DefaultMaxMessage = 1 << 20

// DefaultCloseGrace is how long Close waits for the peer's close frame
// before dropping the connection.
const DefaultCloseGrace = 100 * time.Millisecond

// closeAfterDrop bounds the wait, after the connection was dropped, for the
// WebSocket library's own close to return (it does at once: every read and
// write on a closed socket fails).
const closeAfterDrop = 100 * time.Millisecond

// Close codes holons use.
const (
	CloseNormal           = 1000
	CloseGoingAway        = 1001
	CloseProtocolError    = 1002
	ClosePolicyViolation  = 1008
	CloseMessageTooBig    = 1009
	CloseHeartbeatTimeout = 4000
)

// TraceKind says what a TraceEvent reports.
type TraceKind uint8

const (
	// TraceIn is a frame the framer consumed itself (a heartbeat it answered,
	// a heartbeat response): the Conn never sees it.
	TraceIn TraceKind = iota + 1
	// TraceOut is a frame the framer sent on its own (heartbeats, answers).
	TraceOut
	// TraceNote is a protocol warning or something about the connection
	// (binary frame ignored, reconnecting, closed with a code).
	TraceNote
)

// TraceEvent is reported to Options.Trace.
type TraceEvent struct {
	Time time.Time
	Kind TraceKind
	// Data is the frame (TraceIn, TraceOut), nil for notes.
	Data []byte
	// Warning names the bent rule or the event ("" for plain frames).
	Warning string
}

// Options configure Dial.
type Options struct {
	// MaxMessage bounds one incoming message (default DefaultMaxMessage).
	MaxMessage int64
	// Insecure skips TLS certificate verification for wss://. Off by default.
	Insecure bool
	// TLSConfig, when set, is used for wss:// (Insecure still applies).
	TLSConfig *tls.Config
	// Subprotocols offered (default ["holon-rpc"]).
	Subprotocols []string
	// Header is added to the upgrade request.
	Header http.Header
	// Trace receives warnings and the frames the framer handles itself. It is
	// called synchronously and must not block.
	Trace func(TraceEvent)
	// ManualHeartbeat leaves the server's rpc.heartbeat requests to the caller
	// instead of answering them with {} inside the framer.
	ManualHeartbeat bool
	// CloseGrace is how long Close waits for the peer's close frame before
	// dropping the connection (default DefaultCloseGrace; negative: drop at
	// once). Close never waits longer, whatever the peer does.
	CloseGrace time.Duration
}

// CloseError reports that the WebSocket was closed with a status code.
type CloseError struct {
	Code   int
	Reason string
	// ByPeer is false when primalscope closed it (for example after a
	// heartbeat timeout).
	ByPeer bool
}

func (e *CloseError) Error() string {
	who := "peer closed the WebSocket"
	if !e.ByPeer {
		who = "closed the WebSocket"
	}
	s := fmt.Sprintf("%s with %d (%s)", who, e.Code, CloseCodeMeaning(e.Code))
	if e.Reason != "" {
		s += ": " + clip(e.Reason, 200)
	}
	if h := closeHint(e); h != "" {
		s += " — " + h
	}
	return s
}

// CloseCodeMeaning names a WebSocket close code.
func CloseCodeMeaning(code int) string {
	switch code {
	case CloseNormal:
		return "normal closure"
	case CloseGoingAway:
		return "going away"
	case CloseProtocolError:
		return "protocol error"
	case 1003:
		return "unsupported data"
	case 1005:
		return "no status"
	case 1006:
		return "abnormal closure"
	case 1007:
		return "invalid payload"
	case ClosePolicyViolation:
		return "policy violation"
	case CloseMessageTooBig:
		return "message too big"
	case 1011:
		return "server error"
	case CloseHeartbeatTimeout:
		return "heartbeat timeout"
	}
	if code >= 4000 && code < 5000 {
		return "application-defined"
	}
	return "unknown code"
}

func closeHint(e *CloseError) string {
	r := strings.ToLower(e.Reason)
	switch {
	case !e.ByPeer && (e.Code == CloseProtocolError || e.Code == 1007):
		return "the peer broke the WebSocket protocol; primalscope closed the connection"
	case e.Code == CloseProtocolError && strings.Contains(r, "subprotocol"):
		return `the server wants the "holon-rpc" WebSocket subprotocol offered in the upgrade`
	case e.Code == CloseProtocolError:
		return "the server rejected an envelope it received (Holon-RPC servers close on any envelope fault)"
	case e.Code == ClosePolicyViolation:
		return "the server refused what it was sent"
	case e.Code == CloseMessageTooBig:
		return "a message was over the peer's size limit (holons accept 1 MiB)"
	case e.Code == CloseHeartbeatTimeout && !e.ByPeer:
		return "the peer did not answer rpc.heartbeat in time"
	}
	return ""
}

// HTTPError reports an upgrade the server refused with an HTTP status.
type HTTPError struct {
	URL    string
	Status int
	Body   string // the first bytes of the answer, cleaned for display
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("%s answered HTTP %d instead of upgrading to a WebSocket", e.URL, e.Status)
	switch e.Status {
	case http.StatusNotFound:
		path := "/"
		if u, err := url.Parse(e.URL); err == nil && u.Path != "" {
			path = u.Path
		}
		s += fmt.Sprintf(": nothing is served at %s (holons serve Holon-RPC at %s)", path, DefaultPath)
	case http.StatusUpgradeRequired, http.StatusBadRequest:
		s += ": the server did not accept this WebSocket upgrade"
	}
	if e.Body != "" {
		s += "; it said: " + e.Body
	}
	return s
}

// MessageTooBigError reports a message over the limit.
type MessageTooBigError struct{ Limit int64 }

func (e *MessageTooBigError) Error() string {
	return fmt.Sprintf("peer sent a WebSocket message larger than the %d-byte limit (raise it with --max-frame)", e.Limit)
}

// Framer carries Holon-RPC over one WebSocket connection. ReadFrame returns
// text frames; binary frames are skipped and reported. It answers the server's
// rpc.heartbeat with {} unless Options.ManualHeartbeat. It is safe for one
// reader and concurrent writers.
type Framer struct {
	ws       *websocket.Conn
	raw      *rawConns // the TCP connection under ws, to drop it at once
	url      string
	opts     Options
	ctx      context.Context
	cancel   context.CancelFunc
	wrote    atomic.Bool // anything sent yet (to tell a server speaking first)
	readAny  bool
	dlMu     sync.Mutex
	deadline time.Time
	abort    context.CancelFunc // cancels the write in progress
	closing  atomic.Bool
	broken   atomic.Bool // a read failed: no close handshake is worth waiting for
	once     sync.Once
	// Protocol is the subprotocol the server confirmed ("" when none).
	Protocol string
}

// Dial opens a Holon-RPC connection to rawURL (ws:// or wss://; a URL with
// no path gets DefaultPath). ctx bounds the whole dialling: TCP connect, TLS,
// the upgrade and its answer. It does not bound the connection returned.
func Dial(ctx context.Context, rawURL string, opts Options) (*Framer, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("holon: %w", err)
	}
	switch strings.ToLower(u.Scheme) {
	case "ws", "wss":
	default:
		return nil, fmt.Errorf("holon: %s: want a ws:// or wss:// URL", rawURL)
	}
	if u.Path == "" {
		u.Path = DefaultPath
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.Subprotocols == nil {
		opts.Subprotocols = []string{Subprotocol}
	}
	raw := &rawConns{}
	tr := transport(strings.EqualFold(u.Scheme, "wss"), opts, raw)
	client := &http.Client{Transport: upgradeCheck{rt: tr, offered: opts.Subprotocols}}
	ws, resp, err := websocket.Dial(ctx, u.String(), &websocket.DialOptions{
		HTTPClient:      client,
		HTTPHeader:      opts.Header,
		Subprotocols:    opts.Subprotocols,
		CompressionMode: websocket.CompressionDisabled, // upgradeCheck refuses any extension
	})
	if err != nil {
		defer raw.close() // nothing of a failed upgrade stays open
		defer tr.CloseIdleConnections()
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols {
			he := &HTTPError{URL: u.String(), Status: resp.StatusCode}
			if resp.Body != nil {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
				resp.Body.Close()
				he.Body = clip(strings.TrimSpace(string(b)), 200)
			}
			return nil, he
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("holon: upgrade %s: %w", u.String(), err)
	}
	ws.SetReadLimit(opts.MaxMessage)
	fctx, cancel := context.WithCancel(context.Background())
	f := &Framer{ws: ws, raw: raw, url: u.String(), opts: opts, ctx: fctx, cancel: cancel, Protocol: ws.Subprotocol()}
	if f.Protocol != Subprotocol && len(opts.Subprotocols) > 0 && opts.Subprotocols[0] == Subprotocol {
		f.note(`server did not confirm the "holon-rpc" subprotocol`)
	}
	return f, nil
}

// rawConns remembers the TCP connections a Framer's transport dialled (one,
// or a few if the HTTP client retried), so Close can drop them at once:
// with the socket closed every wait inside the WebSocket library ends. It
// also keeps the frameWatch over each, to ask what it saw.
type rawConns struct {
	mu      sync.Mutex
	conns   []net.Conn
	watches []*frameWatch
	closed  bool
}

func (r *rawConns) add(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		c.Close()
		return
	}
	r.conns = append(r.conns, c)
}

// watch returns c (the connection the WebSocket runs over, after TLS for
// wss://) behind a frameWatch.
func (r *rawConns) watch(c net.Conn) net.Conn {
	w := &frameWatch{Conn: c}
	r.mu.Lock()
	r.watches = append(r.watches, w)
	r.mu.Unlock()
	return w
}

// violation is the protocol violation a frameWatch saw, or nil.
func (r *rawConns) violation() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watches {
		if err := w.violation(); err != nil {
			return err
		}
	}
	return nil
}

func (r *rawConns) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
}

func transport(secure bool, opts Options, raw *rawConns) *http.Transport {
	d := &net.Dialer{Timeout: 10 * time.Second}
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			raw.add(c)
			if secure {
				return c, nil // watched after TLS (DialTLSContext)
			}
			return raw.watch(c), nil
		},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Second,
		MaxIdleConns:          1,
	}
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if opts.TLSConfig != nil {
			cfg = opts.TLSConfig.Clone()
		}
		if opts.Insecure {
			cfg.InsecureSkipVerify = true
		}
		t.TLSClientConfig = cfg
		// TLS done here rather than by the transport, so the frames are
		// watched in clear. HTTP/1.1 only, as a WebSocket upgrade needs.
		cfg.NextProtos = []string{"http/1.1"}
		t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := t.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc := cfg.Clone()
			if tc.ServerName == "" {
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					host = addr
				}
				tc.ServerName = host
			}
			conn := tls.Client(c, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				c.Close()
				return nil, err
			}
			return raw.watch(conn), nil
		}
	}
	return t
}

// URL is the address this framer is connected to.
func (f *Framer) URL() string { return f.url }

func (f *Framer) note(w string) {
	if f.opts.Trace != nil {
		f.opts.Trace(TraceEvent{Time: time.Now(), Kind: TraceNote, Warning: w})
	}
}

func (f *Framer) trace(k TraceKind, data []byte, w string) {
	if f.opts.Trace != nil {
		f.opts.Trace(TraceEvent{Time: time.Now(), Kind: k, Data: data, Warning: w})
	}
}

// ReadFrame returns the next text message. Binary messages are ignored and
// reported; the server's rpc.heartbeat is answered here. When the WebSocket
// closes, the error is a *CloseError (or *MessageTooBigError, or io.EOF
// after a local Close).
func (f *Framer) ReadFrame() ([]byte, error) {
	for {
		typ, data, err := f.ws.Read(f.ctx)
		if err != nil {
			return nil, f.readErr(err)
		}
		if typ != websocket.MessageText {
			f.note(fmt.Sprintf("binary frame of %d bytes ignored (Holon-RPC uses text frames only)", len(data)))
			continue
		}
		if !utf8.Valid(data) {
			// RFC 6455 §8.1: the WebSocket library does not check text
			// frames are UTF-8; the endpoint must fail the connection.
			return nil, f.fail(1007, "a text message is not valid UTF-8 (RFC 6455 §8.1)")
		}
		env := Inspect(data)
		first := !f.readAny
		f.readAny = true
		if first && !f.wrote.Load() && env.IsRequest {
			env.Warnings = append(env.Warnings, "server spoke first: request "+clip(env.Method, 80)+" before the client sent anything")
		}
		for _, w := range env.Warnings {
			f.note(w)
		}
		if env.IsRequest && env.Method == "rpc.heartbeat" && !f.opts.ManualHeartbeat {
			f.trace(TraceIn, data, "")
			f.answerHeartbeat(env)
			continue
		}
		return data, nil
	}
}

func (f *Framer) answerHeartbeat(env Envelope) {
	reply := make([]byte, 0, 48+len(env.ID))
	reply = append(reply, `{"jsonrpc":"2.0","id":`...)
	reply = append(reply, env.ID...)
	reply = append(reply, `,"result":{}}`...)
	f.trace(TraceOut, reply, "")
	if err := f.send(reply, 5*time.Second); err != nil {
		f.note("could not answer rpc.heartbeat: " + err.Error())
	}
}

// send writes a frame of the framer's own (not the Conn's) within timeout.
func (f *Framer) send(p []byte, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(f.ctx, timeout)
	defer cancel()
	f.wrote.Store(true)
	return f.ws.Write(ctx, websocket.MessageText, p)
}

// fail ends the connection for a protocol violation of the peer's: the
// close frame with code and reason is sent, the connection dropped without
// waiting for the peer's, and the error says why.
func (f *Framer) fail(code int, reason string) error {
	e := &CloseError{Code: code, Reason: reason}
	f.note(e.Error())
	f.closeWithin(code, reason, DefaultCloseGrace)
	f.broken.Store(true)
	return e
}

func (f *Framer) readErr(err error) error {
	if verr := f.raw.violation(); verr != nil && !f.closing.Load() {
		return f.fail(CloseProtocolError, verr.Error())
	}
	if f.closing.Load() {
		return io.EOF
	}
	f.broken.Store(true)
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		e := &CloseError{Code: int(ce.Code), Reason: ce.Reason, ByPeer: true}
		f.note(e.Error())
		return e
	}
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return &MessageTooBigError{Limit: f.opts.MaxMessage}
	}
	if errors.Is(err, context.Canceled) {
		return io.EOF
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("the WebSocket ended without a close frame: %w", io.EOF)
	}
	return fmt.Errorf("read WebSocket: %w", err)
}

// WriteFrame sends p as one text message, within the write deadline if set.
// A request written with a numeric id or without params (by a caller that
// speaks plain JSON-RPC) is sent as Holon-RPC wants it: the id as a string,
// "params":{}; a note in the trace says so. Answers keep their id exactly.
func (f *Framer) WriteFrame(p []byte) error {
	if q, ok := strictRequest(p); ok {
		f.note("request rewritten for Holon-RPC (string id, params object): " + clip(string(q), 160))
		p = q
	}
	f.dlMu.Lock()
	if !f.deadline.IsZero() && !f.deadline.After(time.Now()) {
		f.dlMu.Unlock()
		return fmt.Errorf("write WebSocket: %w", os.ErrDeadlineExceeded)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	if !f.deadline.IsZero() {
		var c2 context.CancelFunc
		ctx, c2 = context.WithDeadline(ctx, f.deadline)
		c1 := cancel
		cancel = func() { c2(); c1() }
	}
	f.abort = cancel
	f.dlMu.Unlock()
	f.wrote.Store(true)
	err := f.ws.Write(ctx, websocket.MessageText, p)
	f.dlMu.Lock()
	f.abort = nil
	f.dlMu.Unlock()
	deadlineHit := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil {
		if deadlineHit || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("write WebSocket: %w", os.ErrDeadlineExceeded)
		}
		return fmt.Errorf("write WebSocket: %w", err)
	}
	return nil
}

// SetWriteDeadline bounds later writes; a deadline in the past also aborts
// a write in progress (which ends the connection, as with any cut frame).
func (f *Framer) SetWriteDeadline(t time.Time) error {
	f.dlMu.Lock()
	defer f.dlMu.Unlock()
	f.deadline = t
	if f.abort != nil && !t.IsZero() && !t.After(time.Now()) {
		f.abort()
	}
	return nil
}

// Close closes the WebSocket with 1000 and unblocks ReadFrame. It returns
// within Options.CloseGrace and a few milliseconds, whatever the peer does.
func (f *Framer) Close() error { return f.CloseWith(CloseNormal, "") }

// CloseWith closes the WebSocket with a status code and reason. The peer
// gets Options.CloseGrace (DefaultCloseGrace) to answer with its close
// frame; then, or at once when the connection is already broken, the TCP
// connection is dropped. It never waits on the peer longer than that: a
// peer that never sends its close frame, floods pings or fragments, or
// announces a frame it never finishes cannot hold it.
func (f *Framer) CloseWith(code int, reason string) error {
	grace := f.opts.CloseGrace
	if grace == 0 {
		grace = DefaultCloseGrace
	}
	return f.closeWithin(code, reason, grace)
}

// CloseContext is Close with the grace cut to what is left of ctx: a
// caller whose deadline has passed drops the connection at once.
func (f *Framer) CloseContext(ctx context.Context) error {
	grace := f.opts.CloseGrace
	if grace == 0 {
		grace = DefaultCloseGrace
	}
	if ctx.Err() != nil {
		grace = -1
	} else if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl))
	}
	return f.closeWithin(CloseNormal, "", grace)
}

func (f *Framer) closeWithin(code int, reason string, grace time.Duration) error {
	var err error
	f.once.Do(func() {
		f.closing.Store(true)
		if f.broken.Load() {
			grace = -1 // the read side failed: no close frame will come
		}
		done := make(chan error, 1)
		if grace > 0 {
			go func() { done <- f.ws.Close(websocket.StatusCode(code), reason) }()
			t := time.NewTimer(grace)
			select {
			case err = <-done:
				t.Stop()
				f.cancel()
				f.raw.close()
				err = closeErr(err)
				return
			case <-t.C:
			}
		} else {
			go func() { done <- f.ws.CloseNow() }()
		}
		// Drop the connection: the library's close handshake, and a read
		// or write it is stuck in, fail at once.
		f.cancel()
		f.raw.close()
		t := time.NewTimer(closeAfterDrop)
		defer t.Stop()
		select {
		case <-done: // errors of a connection dropped on purpose say nothing
		case <-t.C:
			// The library's goroutine ends by itself on the closed socket.
		}
	})
	return err
}

func closeErr(err error) error {
	var ce websocket.CloseError
	if err == nil || errors.As(err, &ce) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// strictRequest rewrites a request with a numeric id or without params into
// a strict Holon-RPC request. ok=false leaves p as it is.
func strictRequest(p []byte) ([]byte, bool) {
	t := bytes.Trim(p, " \t\r\n")
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return nil, false
	}
	f, ok := scanFields(t)
	if !ok || f.Method == nil || f.ID == nil || f.Result != nil || f.Error != nil {
		return nil, false
	}
	var method string
	if jsonKind(f.Method) != 's' || json.Unmarshal(f.Method, &method) != nil || method == "" {
		return nil, false
	}
	if f.Params != nil && jsonKind(f.Params) != 'o' && jsonKind(f.Params) != '0' {
		return nil, false
	}
	if f.JSONRPC != nil && string(f.JSONRPC) != `"2.0"` {
		return nil, false
	}
	numeric := jsonKind(f.ID) == 'n'
	if !numeric && f.Params != nil && f.JSONRPC != nil {
		return nil, false
	}
	if !numeric && (jsonKind(f.ID) != 's' || string(f.ID) == `""`) {
		return nil, false
	}
	id := f.ID
	if numeric {
		n := json.Number(bytes.TrimSpace(id))
		if _, err := n.Int64(); err != nil {
			return nil, false
		}
		id = append(append([]byte{'"'}, n...), '"')
	}
	params := f.Params
	if params == nil || jsonKind(params) == '0' {
		params = json.RawMessage(`{}`)
	}
	out := make([]byte, 0, len(t)+16)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"method":`...)
	out = append(out, f.Method...)
	out = append(out, `,"params":`...)
	out = append(out, params...)
	return append(out, '}'), true
}
