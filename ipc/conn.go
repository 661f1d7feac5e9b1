package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// Options configure a Conn (and, through Dial, its transport).
type Options struct {
	// Wire selects the request encoding; responses of every wire are accepted.
	Wire Wire
	// MaxFrame bounds one incoming message in bytes (default DefaultMaxFrame).
	MaxFrame int64
	// Trace, when set, receives every frame in both directions. It is called
	// synchronously from the Conn's goroutines and must not block.
	Trace func(TraceEvent)
	// IncomingBuffer is how many pushed messages wait unread before the
	// oldest are dropped and counted (default 1024).
	IncomingBuffer int
	// Handler answers server-initiated requests automatically; may be nil.
	Handler Handler
	// MaxHandlers bounds how many Handler calls run at once (default
	// DefaultMaxHandlers); the requests beyond it are refused.
	MaxHandlers int
	// MaxHeldBytes bounds the bytes the Conn holds on the peer's behalf:
	// pushed messages waiting unread on Incoming and server requests its
	// Handler is working on (default DefaultMaxHeldBytes; never less than
	// one message of MaxFrame). Past it, the oldest unread pushes are
	// dropped and counted (see Dropped), and server requests are refused
	// as beyond MaxHandlers; the reading goroutine never waits for room.
	MaxHeldBytes int64
	// Endpoint names the peer in errors.
	Endpoint string
	// ConnectTimeout bounds establishing the transport (default 2 s).
	ConnectTimeout time.Duration
	// Security says how socket transports handle the riboCipher prefix and
	// BTSP (see security.go); the zero value is the plain wire.
	Security Security
	// Peer says which local users may serve a Unix socket (peercred.go);
	// the zero value refuses every one but the user and root.
	Peer PeerPolicy
	// Insecure skips TLS certificate verification of wss:// peers (the
	// CLI's --insecure). Off by default.
	Insecure bool
}

// Request is one call or notification with full control over the envelope.
type Request struct {
	Method string
	// Params is the raw JSON params; nil leaves "params" out.
	Params json.RawMessage
	// Notify sends it without an id and waits for no answer.
	Notify bool
	// SessionID and Pool add the stdio bus routing fields when non-empty.
	SessionID string
	Pool      string
}

// Response is a peer's answer to one call.
type Response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *RPCError       `json:"error,omitempty"`
	// Raw is the whole response frame as the peer sent it.
	Raw json.RawMessage `json:"-"`
	// Sent is the whole request frame as primalscope sent it.
	Sent    json.RawMessage `json:"-"`
	Elapsed time.Duration   `json:"elapsed"`
	Warning string          `json:"warning,omitempty"`
}

type result struct {
	m   *Message
	err error
}

type pendingCall struct {
	ch     chan result
	method string
	// session and pool are the stdio bus routing fields the call was sent
	// with: an answer that names another session or pool is not its answer.
	session, pool string
}

// answer is a matched response waiting to be handed to its call (see
// readLoop: it waits while more frames are already buffered).
type answer struct {
	p  *pendingCall
	m  *Message
	id uint64
}

// bufferedFramer is a Framer that can tell whether a whole frame is already
// read and waiting (LineFramer), so the Conn can look at it before it hands
// over an answer: a duplicate answer sent right behind the first is then
// reported with it, not lost when the caller closes the connection.
type bufferedFramer interface {
	FrameBuffered() bool
}

// Conn multiplexes concurrent calls over one framed connection. Responses are
// matched to calls by id in any order; everything else the peer sends arrives
// on Incoming. A Conn owns one reading goroutine, which ends when the peer
// closes or Close is called; Close waits for it.
type Conn struct {
	f    Framer
	opts Options

	nextID atomic.Uint64

	mu       sync.Mutex
	pending  map[uint64]*pendingCall
	settled  idRing // answered ids, to tell duplicates
	timedOut idRing // abandoned ids, to tell stale answers
	closed   bool
	closeErr error  // why the connection ended
	peerErr  error  // an id-less error the peer sent (BTSP required, parse error...)
	invalid  int    // frames that were not JSON-RPC
	lastBad  []byte // the most recent such frame, cut short
	// unknownIDs counts answers to ids primalscope never sent; lastUnknown
	// is the latest such id, cut short.
	unknownIDs  int
	lastUnknown string
	dropped     uint64 // pushed messages dropped because nobody read them
	// Bytes held for the peer (see Options.MaxHeldBytes): queued holds the
	// size of each message in Incoming, oldest first (a consumer takes from
	// the front, so what is still there is always its last len(incoming)
	// entries), queuedBytes their sum, and handling the bytes of the server
	// requests the Handler is working on.
	queued      []int64
	queuedBytes int64
	handling    int64
	refused     uint64 // server requests refused (MaxHandlers or MaxHeldBytes)
	overNoted   bool   // the trace was told pushes are dropped for MaxHeldBytes
	wmu         sync.Mutex
	incoming    chan *Message
	done        chan struct{}

	// Server-initiated requests run off the reading goroutine: handlers
	// holds a token per running Handler call, handlerCtx ends with the
	// connection, and the reading goroutine waits for handlerWG before it
	// closes Incoming and Done.
	handlers      chan struct{}
	handlerCtx    context.Context
	handlerCancel context.CancelFunc
	handlerWG     sync.WaitGroup
}

// NewConn starts a Conn over f. The Conn owns f from now on.
//
// Over a Holon-RPC framer (package holon) the Conn speaks the Holon wire
// whatever opts.Wire says: the framer sends every request with a string id,
// so only string ids can answer them.
func NewConn(f Framer, opts Options) *Conn {
	switch f.(type) {
	case *holon.Framer, *holon.Session:
		opts.Wire = WireHolon
	}
	if opts.IncomingBuffer <= 0 {
		opts.IncomingBuffer = 1024
	}
	if opts.MaxHandlers <= 0 {
		opts.MaxHandlers = DefaultMaxHandlers
	}
	if opts.MaxHeldBytes <= 0 {
		opts.MaxHeldBytes = DefaultMaxHeldBytes
	}
	maxFrame := opts.MaxFrame
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	// One message of the largest size accepted always fits.
	opts.MaxHeldBytes = max(opts.MaxHeldBytes, maxFrame+heldOverhead)
	c := &Conn{
		f:        f,
		opts:     opts,
		pending:  make(map[uint64]*pendingCall),
		settled:  newIDRing(4096),
		timedOut: newIDRing(4096),
		incoming: make(chan *Message, opts.IncomingBuffer),
		done:     make(chan struct{}),
	}
	if opts.Handler != nil {
		c.handlers = make(chan struct{}, opts.MaxHandlers)
		c.handlerCtx, c.handlerCancel = context.WithCancel(context.Background())
	}
	go c.readLoop()
	return c
}

// Incoming delivers what the peer pushes: notifications, server-initiated
// requests, lean events, and unmatched or invalid frames. It is closed when
// the connection ends. When it is full, or holds Options.MaxHeldBytes, the
// oldest messages are dropped and counted (see Dropped) so a slow reader
// never stalls responses nor lets the peer fill the memory.
func (c *Conn) Incoming() <-chan *Message { return c.incoming }

// Dropped reports how many pushed messages were dropped unread.
func (c *Conn) Dropped() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dropped
}

// HeldBytes reports how many bytes the Conn holds on the peer's behalf
// right now: unread pushes on Incoming and server requests being handled
// (see Options.MaxHeldBytes).
func (c *Conn) HeldBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.syncQueuedLocked()
	return c.queuedBytes + c.handling
}

// Refused reports how many server requests were refused unhandled (too
// many running, or too many bytes held).
func (c *Conn) Refused() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// Done is closed when the connection has ended and its goroutine has exited.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err reports why the connection ended, or nil while it is open.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		return nil
	}
	return c.closeErr
}

// Link reports the connection under c: its generation, which counts how
// many times it was re-established (a Holon-RPC session reconnects by
// itself; other connections never do), and whether it is up right now. A
// request the peer sent on one generation cannot be answered on another.
func (c *Conn) Link() (gen int64, up bool) {
	c.mu.Lock()
	up = !c.closed
	c.mu.Unlock()
	if s, ok := c.f.(interface {
		Reconnects() int64
		Connected() bool
	}); ok {
		return s.Reconnects(), up && s.Connected()
	}
	return 0, up
}

// InFlight reports how many calls are waiting for an answer.
func (c *Conn) InFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// contextCloser is a framer whose close waits on the peer (a WebSocket close
// handshake) no longer than ctx allows.
type contextCloser interface {
	CloseContext(ctx context.Context) error
}

// Close ends the connection, fails calls in flight with *ClosedError, and
// waits for the Conn's goroutine to exit. It is bounded whatever the peer
// does (a WebSocket peer gets at most holon.DefaultCloseGrace for its close
// frame, none after one of its calls timed out).
func (c *Conn) Close() error { return c.CloseContext(context.Background()) }

// CloseContext is Close with what it may wait on the peer (a WebSocket
// peer's close frame) cut to what ctx leaves: past ctx's deadline the
// connection is dropped at once.
func (c *Conn) CloseContext(ctx context.Context) error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.closeErr = nil
	}
	hung := len(c.timedOut.ids) > 0
	c.mu.Unlock()
	var err error
	if cc, ok := c.f.(contextCloser); ok {
		if hung {
			// A peer that let a call time out gets no grace for its
			// close frame: the connection is dropped at once.
			var cancel context.CancelFunc
			ctx, cancel = context.WithCancel(ctx)
			cancel()
		}
		err = cc.CloseContext(ctx)
	} else {
		err = c.f.Close()
	}
	<-c.done
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// Call sends method with params and waits for the answer. params may be nil,
// json.RawMessage, []byte holding JSON, or any value encoding/json accepts.
// A peer's error answer is returned as both the Response and an *RPCError.
func (c *Conn) Call(ctx context.Context, method string, params any) (*Response, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return nil, err
	}
	return c.Send(ctx, Request{Method: method, Params: raw})
}

// Notify sends a notification (no id); nothing answers it.
func (c *Conn) Notify(ctx context.Context, method string, params any) error {
	raw, err := marshalParams(params)
	if err != nil {
		return err
	}
	_, err = c.Send(ctx, Request{Method: method, Params: raw, Notify: true})
	return err
}

// Send sends req and, unless it is a notification, waits for its answer until
// ctx ends. Errors: *RPCError (the peer's answer), *TimeoutError,
// context.Canceled, *ClosedError, *BTSPRequiredError, *FrameTooLargeError
// (wrapped in *ClosedError).
func (c *Conn) Send(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, c.ctxErr(err, req, 0)
	}
	if req.Params != nil && !json.Valid(req.Params) {
		return nil, fmt.Errorf("%s: params are not valid JSON", req.Method)
	}
	var id uint64
	var p *pendingCall
	if !req.Notify {
		id = c.nextID.Add(1)
		p = &pendingCall{ch: make(chan result, 1), method: req.Method, session: req.SessionID, pool: req.Pool}
	}
	frame := c.encodeRequest(id, req)
	c.mu.Lock()
	if be, ok := c.peerErr.(*BTSPRequiredError); ok {
		// The peer said BTSP is required: never send it a call in cleartext.
		c.mu.Unlock()
		return nil, be
	}
	if c.closed {
		err := c.closedErrLocked(0)
		c.mu.Unlock()
		return nil, err
	}
	if p != nil {
		c.pending[id] = p
	}
	c.mu.Unlock()

	start := time.Now()
	if err := c.write(ctx, frame); err != nil {
		if p != nil {
			c.forget(id, false)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
			te := c.ctxErr(context.DeadlineExceeded, req, time.Since(start))
			if t, ok := te.(*TimeoutError); ok {
				// The request never left: say so, rather than blame an answer.
				t.Unsent = true
			}
			return nil, te
		}
		if isPeerGone(err) {
			// The peer hung up: what it said last (a parse error, a refusal
			// answered before the request was written) may be in the
			// reader's hands; let it finish, briefly, to say why.
			wait := time.NewTimer(50 * time.Millisecond)
			select {
			case <-c.done:
			case <-ctx.Done():
			case <-wait.C:
			}
			wait.Stop()
			c.mu.Lock()
			said := c.peerErr != nil
			cerr := c.closedErrLocked(0)
			c.mu.Unlock()
			if said {
				return nil, cerr
			}
		}
		return nil, c.Err0(err)
	}
	if p == nil {
		return nil, nil
	}
	select {
	case r := <-p.ch:
		if r.err != nil {
			var ce *ClosedError
			if ctx.Err() != nil && errors.As(r.err, &ce) {
				// The deadline passed as the connection ended (a write
				// cut by the deadline ends it too): the call timed out.
				c.forget(id, true)
				return nil, c.ctxErr(ctx.Err(), req, time.Since(start))
			}
			return nil, r.err
		}
		resp := &Response{
			ID: r.m.ID, Result: r.m.Result, Error: r.m.Error, Raw: r.m.Raw, Sent: frame,
			Elapsed: r.m.Time.Sub(start), Warning: r.m.Warning,
		}
		if resp.Error != nil {
			return resp, resp.Error
		}
		return resp, nil
	case <-ctx.Done():
		c.forget(id, true)
		return nil, c.ctxErr(ctx.Err(), req, time.Since(start))
	}
}

// Reply answers a server-initiated request with a result or an error.
func (c *Conn) Reply(ctx context.Context, id json.RawMessage, res json.RawMessage, rpcErr *RPCError) error {
	if len(id) == 0 || !json.Valid(id) {
		return errors.New("reply: the request has no valid id")
	}
	frame := c.encodeReply(id, res, rpcErr)
	c.mu.Lock()
	if c.closed {
		err := c.closedErrLocked(0)
		c.mu.Unlock()
		return err
	}
	c.mu.Unlock()
	if err := c.write(ctx, frame); err != nil {
		return c.Err0(err)
	}
	return nil
}

// Err0 wraps a transport error in *ClosedError unless it is already typed.
func (c *Conn) Err0(err error) error {
	var ce *ClosedError
	if errors.As(err, &ce) {
		return err
	}
	return &ClosedError{Cause: err}
}

func (c *Conn) ctxErr(err error, req Request, waited time.Duration) error {
	if errors.Is(err, context.DeadlineExceeded) {
		te := &TimeoutError{Method: req.Method, After: waited}
		var parts []string
		if req.Pool != "" {
			parts = append(parts, "pool "+req.Pool)
		}
		if req.SessionID != "" {
			parts = append(parts, "session "+req.SessionID)
		}
		c.mu.Lock()
		if c.invalid > 0 {
			parts = append(parts, fmt.Sprintf("the peer sent %d frame(s) that are not JSON-RPC, the last: %q", c.invalid, c.lastBad))
		}
		if c.unknownIDs > 0 {
			parts = append(parts, fmt.Sprintf("the peer sent %d answer(s) matching no call, the last: %s", c.unknownIDs, c.lastUnknown))
		}
		c.mu.Unlock()
		if len(parts) > 0 {
			te.Where = joinComma(parts)
		}
		return te
	}
	return fmt.Errorf("%s: %w", req.Method, err)
}

func joinComma(p []string) string {
	var b bytes.Buffer
	for i, s := range p {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s)
	}
	return b.String()
}

// forget removes a pending call; timedOut marks its id as abandoned.
func (c *Conn) forget(id uint64, timedOut bool) {
	c.mu.Lock()
	delete(c.pending, id)
	if timedOut {
		c.timedOut.add(id)
	}
	c.mu.Unlock()
}

func (c *Conn) write(ctx context.Context, frame []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	wd, canDeadline := c.f.(WriteDeadliner)
	if canDeadline {
		if dl, ok := ctx.Deadline(); ok {
			_ = wd.SetWriteDeadline(dl)
			defer wd.SetWriteDeadline(time.Time{})
		} else if ctx.Done() != nil {
			fired := make(chan struct{})
			stop := context.AfterFunc(ctx, func() {
				_ = wd.SetWriteDeadline(time.Unix(1, 0))
				close(fired)
			})
			defer func() {
				if !stop() {
					// The cancel fired: wait until it has set its deadline,
					// so the reset below cannot be overtaken by it and fail
					// the next write on this connection.
					<-fired
					_ = wd.SetWriteDeadline(time.Time{})
				}
			}()
		}
	}
	c.trace(Out, frame, "") // before the write, so the trace never shows an answer before its call
	if err := c.f.WriteFrame(frame); err != nil {
		if errors.Is(err, errNotWritten) {
			// Nothing reached the stream: only this call fails.
			c.trace(Note, nil, "not sent: "+err.Error())
			return err
		}
		// A frame cut short leaves the stream unusable: end the connection.
		c.trace(Note, nil, "write failed: "+err.Error())
		c.fail(fmt.Errorf("write: %w", err))
		return err
	}
	return nil
}

func (c *Conn) trace(d Direction, data []byte, warning string) {
	if c.opts.Trace != nil {
		c.opts.Trace(TraceEvent{Time: time.Now(), Dir: d, Data: data, Size: len(data), Warning: warning})
	}
}

// fail ends the connection because of err (from the transport or the peer).
func (c *Conn) fail(err error) {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.closeErr = err
	}
	c.mu.Unlock()
	_ = c.f.Close()
}

func (c *Conn) readLoop() {
	defer func() {
		c.mu.Lock()
		if !c.closed {
			c.closed = true
		}
		n := len(c.pending)
		err := c.closedErrLocked(n)
		for id, p := range c.pending {
			p.ch <- result{err: err}
			delete(c.pending, id)
		}
		c.mu.Unlock()
		if c.handlerCancel != nil {
			c.handlerCancel()
			c.handlerWG.Wait() // a handler may still deliver to Incoming
		}
		close(c.incoming)
		close(c.done)
	}()
	// Matched answers are handed to their calls once no further frame is
	// already buffered: a second answer to the same call, or any other
	// frame the peer sent in the same burst, is looked at first (a
	// duplicate then shows in the answer's Warning).
	bf, _ := c.f.(bufferedFramer)
	var ready []answer
	hand := func() {
		for i, a := range ready {
			a.p.ch <- result{m: a.m}
			ready[i] = answer{}
		}
		ready = ready[:0]
	}
	for {
		frame, err := c.f.ReadFrame()
		if err != nil {
			hand()
			c.mu.Lock()
			if !c.closed {
				c.closed = true
				if err == io.EOF {
					err = errors.New("peer closed the connection")
				}
				c.closeErr = err
			}
			c.mu.Unlock()
			c.trace(Note, nil, "connection ended: "+errString(err))
			return
		}
		if a, ok := c.handle(frame, ready); ok {
			ready = append(ready, a)
		}
		if len(ready) > 0 && (bf == nil || !bf.FrameBuffered()) {
			hand()
		}
	}
}

// matchID finds the call an answer's id names. Ids are matched by exact
// value and type, as JSON-RPC 2.0 and Holon-RPC ask ("a response must reuse
// the exact request ID"): on the Holon wire primalscope sends the string
// "7" and only the string "7" answers it; on the other wires it sends the
// number 7 and only the number 7, written as an integer, answers it. So the
// string "7" or "07" is not an answer to 7, 7 is not an answer to "7", and
// neither is 7.0 or 7e0: a peer that rewrote the id (through a float, or by
// stringifying it) may be answering something else, and guessing would take
// another request's answer for this one. A string is compared by value, so
// an escaped "\u0037" is "7". why says, for the trace, what was wrong.
func (c *Conn) matchID(raw json.RawMessage) (id uint64, ok bool, why string) {
	t := bytes.TrimSpace(raw)
	shown := string(cut(t, 40))
	holon := c.opts.Wire == WireHolon
	switch {
	case len(t) == 0:
		return 0, false, "an answer without an id"
	case t[0] == '"':
		var s string
		if json.Unmarshal(t, &s) != nil {
			return 0, false, "id " + shown + " is not a valid JSON string"
		}
		if !holon {
			return 0, false, "id " + shown + " is a string; primalscope sent numeric ids (matched by exact value and type)"
		}
		n, ok := canonicalUint(s)
		if !ok {
			return 0, false, "id " + shown + " is not one primalscope sent"
		}
		return n, true, ""
	case t[0] == '-' || t[0] >= '0' && t[0] <= '9':
		if holon {
			return 0, false, "id " + shown + " is a number; primalscope sent string ids (matched by exact value and type)"
		}
		n, ok := canonicalUint(string(t))
		if !ok {
			return 0, false, "id " + shown + " is not one primalscope sent (ids are integers, matched as written)"
		}
		return n, true, ""
	}
	return 0, false, "id " + shown + " is neither a string nor a number"
}

// canonicalUint parses s as primalscope writes ids: decimal digits, no sign,
// no leading zero.
func canonicalUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

func errString(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

// predecoder is a Framer that may have decoded the frame it returned
// already (secureFramer, for its first answer).
type predecoder interface {
	takeDecoded(frame []byte) (*Message, bool, error)
}

// handle takes one frame from the peer. A response matched to a call is
// returned for readLoop to hand over; ready are those matched already and
// not yet handed over (a duplicate of one of them is noted in its Warning).
func (c *Conn) handle(frame []byte, ready []answer) (answer, bool) {
	var (
		m    *Message
		derr error
		ok   bool
	)
	if pd, is := c.f.(predecoder); is {
		m, ok, derr = pd.takeDecoded(frame)
	}
	if !ok {
		m, derr = DecodeMessage(frame)
	}
	m.Time = time.Now()
	if derr != nil {
		m.Warning = derr.Error()
		c.mu.Lock()
		c.invalid++
		c.lastBad = cut(frame, 80)
		c.mu.Unlock()
	}
	switch m.Kind {
	case KindResponse:
		id, ok, why := c.matchID(m.ID)
		c.mu.Lock()
		p := c.pending[id]
		foreign := ""
		if ok && p != nil {
			foreign = busMismatch(p, m)
		}
		if ok && p != nil && foreign == "" {
			delete(c.pending, id)
			c.settled.add(id)
		} else {
			m.Kind = KindUnmatched
			switch {
			case !ok:
				m.Warning = "unknown_response_id: " + why
				c.unknownIDs++
				c.lastUnknown = why
			case foreign != "":
				// The call stays in flight: its own answer may follow.
				m.Warning = fmt.Sprintf("foreign_response: call %d %s; not taken as its answer", id, foreign)
				c.unknownIDs++
				c.lastUnknown = fmt.Sprintf("id %d %s", id, foreign)
			case c.settled.has(id):
				m.Warning = fmt.Sprintf("duplicate_response_id: call %d was already answered", id)
				for _, a := range ready {
					if a.id == id {
						a.m.Warning = joinWarning(a.m.Warning, fmt.Sprintf(
							"duplicate_response_id: the peer answered call %d again right after; the second answer was not used: %s",
							id, cut(frame, 120)))
					}
				}
			case c.timedOut.has(id):
				m.Warning = fmt.Sprintf("stale_response_id: call %d had already timed out", id)
			default:
				m.Warning = fmt.Sprintf("unknown_response_id: no call %d was sent", id)
				c.unknownIDs++
				c.lastUnknown = "id " + string(cut(m.ID, 40))
			}
		}
		c.mu.Unlock()
		c.trace(In, frame, m.Warning)
		if m.Kind == KindResponse {
			return answer{p: p, m: m, id: id}, true
		}
		c.deliver(m)
	case KindUnmatched:
		if m.Error == nil {
			// A result with a null or missing id answers nothing: no call
			// can be told apart by it, and taking it for the one in
			// flight would accept anyone's answer.
			m.Warning = "unknown_response_id: a result with a null or missing id is no call's answer"
			c.mu.Lock()
			c.unknownIDs++
			c.lastUnknown = "a result with a null id"
			c.mu.Unlock()
			c.trace(In, frame, m.Warning)
			c.deliver(m)
			return answer{}, false
		}
		// An error with a null or missing id: the peer could not tell which
		// call it answers (a parse error) or is refusing the whole
		// connection (BTSP required). It ends the call in flight when there
		// is exactly one.
		c.trace(In, frame, "error without an id")
		if m.Error != nil && m.Error.IsBTSPRequired() {
			c.mu.Lock()
			c.peerErr = &BTSPRequiredError{Endpoint: c.opts.Endpoint, Peer: m.Error}
			for id, p := range c.pending {
				p.ch <- result{err: c.peerErr}
				delete(c.pending, id)
			}
			c.mu.Unlock()
			c.deliver(m)
			return answer{}, false
		}
		c.mu.Lock()
		if m.Error != nil {
			c.peerErr = m.Error
		}
		if len(c.pending) == 1 {
			for id, p := range c.pending {
				delete(c.pending, id)
				c.mu.Unlock()
				p.ch <- result{m: m}
				return answer{}, false
			}
		}
		c.mu.Unlock()
		c.deliver(m)
	case KindRequest:
		c.trace(In, frame, m.Warning)
		if c.opts.Handler != nil {
			c.handOff(m)
			return answer{}, false
		}
		c.deliver(m)
	default:
		c.trace(In, frame, m.Warning)
		c.deliver(m)
	}
	return answer{}, false
}

// busMismatch says how an answer's stdio bus routing fields contradict the
// call it names by id ("" when they do not): a sessionId or pool it
// carries must be the call's own. A worker need not repeat them, so an
// answer without them is the call's; one naming another session or pool
// (or one when the call was sent without) is another's answer, or forged.
func busMismatch(p *pendingCall, m *Message) string {
	if m.SessionID != "" && m.SessionID != p.session {
		if p.session == "" {
			return fmt.Sprintf("was sent without a session; this answer is of session %q", human.Clip(m.SessionID, 40))
		}
		return fmt.Sprintf("was sent in session %q; this answer is of session %q", human.Clip(p.session, 40), human.Clip(m.SessionID, 40))
	}
	if m.Pool != "" && m.Pool != p.pool {
		if p.pool == "" {
			return fmt.Sprintf("was sent without a pool; this answer is from pool %q", human.Clip(m.Pool, 40))
		}
		return fmt.Sprintf("was sent to pool %q; this answer is from pool %q", human.Clip(p.pool, 40), human.Clip(m.Pool, 40))
	}
	return ""
}

// joinWarning adds w to the warnings already in have.
func joinWarning(have, w string) string {
	if have == "" {
		return w
	}
	return have + "; " + w
}

// DefaultMaxHeldBytes is how many bytes a Conn holds on a peer's behalf
// (unread pushes and server requests being handled) unless
// Options.MaxHeldBytes says otherwise.
const DefaultMaxHeldBytes = 64 << 20

// heldOverhead is what a message costs beyond its frame (the Message and
// its bookkeeping), so that a flood of tiny frames is bounded too.
const heldOverhead = 256

// heldSize is what holding m costs: its frame (the decoded fields are
// slices of it) and its error's data, which is a copy.
func heldSize(m *Message) int64 {
	n := int64(len(m.Raw)) + heldOverhead
	if m.Error != nil {
		n += int64(len(m.Error.Data))
	}
	return n
}

// syncQueuedLocked forgets the sizes of the messages a consumer has taken
// from Incoming since. Only deliver adds to Incoming, under c.mu, so what
// is left in it is the newest len(c.incoming) of queued; a consumer taking
// one meanwhile only makes the count an overestimate.
func (c *Conn) syncQueuedLocked() {
	for len(c.queued) > len(c.incoming) {
		c.queuedBytes -= c.queued[0]
		c.queued[0] = 0
		c.queued = c.queued[1:]
	}
	if len(c.queued) == 0 {
		c.queued = nil // let the backing array go
	}
}

// roomLocked drops the oldest unread pushes until size more bytes fit in
// MaxHeldBytes (and, when full, one more message fits in Incoming), and
// reports whether they do. It never waits. The first time the byte limit
// costs a push, it returns a note for the trace (once per Conn: a note per
// drop would flood whoever reads the trace, and Dropped counts them all).
func (c *Conn) roomLocked(size int64, slot bool) (fits bool, note string) {
	c.syncQueuedLocked()
	over := false
	for len(c.queued) > 0 {
		bytesOver := c.queuedBytes+c.handling+size > c.opts.MaxHeldBytes
		if !bytesOver && !(slot && len(c.incoming) == cap(c.incoming)) {
			break
		}
		over = over || bytesOver
		select {
		case <-c.incoming:
			c.dropped++
		default: // a consumer took it first
		}
		c.syncQueuedLocked()
	}
	fits = c.queuedBytes+c.handling+size <= c.opts.MaxHeldBytes
	if (over || !fits && slot) && !c.overNoted {
		c.overNoted = true
		note = fmt.Sprintf("dropping unread pushed messages: %s held for this peer reached the limit of %s (Dropped counts them)",
			human.Bytes(c.queuedBytes+c.handling+size), human.Bytes(c.opts.MaxHeldBytes))
	}
	return fits, note
}

// traceNote traces note unless it is empty.
func (c *Conn) traceNote(note string) {
	if note != "" {
		c.trace(Note, nil, note)
	}
}

// deliver hands m to Incoming, dropping the oldest unread messages when it
// is full or holds too many bytes; m itself is dropped when it cannot fit.
func (c *Conn) deliver(m *Message) {
	size := heldSize(m)
	c.mu.Lock()
	fits, note := c.roomLocked(size, true)
	if !fits {
		c.dropped++
		c.mu.Unlock()
		c.traceNote(note)
		return
	}
	select {
	case c.incoming <- m:
		c.queued = append(c.queued, size)
		c.queuedBytes += size
	default: // cannot happen: room was made under c.mu, the only sender's lock
		c.dropped++
	}
	c.mu.Unlock()
	c.traceNote(note)
}

func (c *Conn) closedErrLocked(inFlight int) error {
	if be, ok := c.peerErr.(*BTSPRequiredError); ok {
		return be
	}
	cause := c.closeErr
	if c.peerErr != nil {
		if cause == nil {
			cause = fmt.Errorf("after the peer said: %w", c.peerErr)
		} else {
			cause = fmt.Errorf("%w (the peer had said: %v)", cause, c.peerErr)
		}
	}
	return &ClosedError{InFlight: inFlight, Cause: cause}
}

// cut is a copy of at most n bytes of b, for a message (human.Clip); b
// may be a large frame, so only what can be kept is converted.
func cut(b []byte, n int) []byte {
	return []byte(human.Clip(string(b[:min(len(b), n+1)]), n))
}

// errNotWritten marks a write error after which nothing reached the stream
// (so the connection is still usable).
var errNotWritten = errors.New("nothing was written")
