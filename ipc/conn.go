package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

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
	// Push, when set, takes what the peer pushes (everything Incoming
	// would deliver), in order, on the reading goroutine (and on a
	// Handler's goroutine for a request it passes on), instead of
	// Incoming: nothing waits unread in the Conn, which allocates no queue
	// for it (IncomingBuffer slots of it, whole, per connection), and
	// Incoming delivers nothing (it is closed when the connection ends).
	// Push must not wait long: while it runs, the peer is not read. For a
	// connection that only listens, whose consumer queues what it is
	// given anyway.
	Push func(*Message)
	// Reader, when set, is handed the Conn's reading loop, read, instead
	// of a goroutine being started for it: the owner runs read on a
	// goroutine it has anyway (a listener's own), where it returns when
	// the connection ends. Until read runs nothing is read, so no call is
	// answered. Close does not wait for an owner who never runs it: read
	// then returns at once.
	Reader func(read func())
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
	// ReadPace, when set, has a socket connection read at most once per
	// ReadPace while the peer sends less than a read takes (what arrived
	// meanwhile is read in one go): for a connection that only listens,
	// where a flood of small messages would otherwise wake the reader once
	// a message. It delays what arrives by up to ReadPace; a peer sending
	// faster is read as fast as before. 0 reads at once (calls want that).
	ReadPace time.Duration
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
	// ResultCuts: see Message.ResultCuts.
	ResultCuts []int     `json:"-"`
	Error      *RPCError `json:"error,omitempty"`
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
	// names are the short strings the reader decoded last (methods,
	// "2.0"), shared by the messages that repeat them; reader only.
	names nameCache

	nextID atomic.Uint64
	// reading is readNotYet until the reading loop runs (readRunning), or
	// Close takes its place (readClosed): see Options.Reader.
	reading atomic.Int32

	mu       sync.Mutex
	pending  map[uint64]*pendingCall
	settled  idRing // answered ids, to tell duplicates
	timedOut idRing // abandoned ids (timed out, not resent), to tell stale answers
	closed   bool
	closeErr error // why the connection ended
	peerErr  error // an id-less error the peer sent (BTSP required, parse error...)
	// unattributed counts the errors with no id (a parse error...) the
	// peer sent while more than one call was in flight, and unattrIn how
	// many were in flight at the first: each answers one of them, and which
	// cannot be told. From the first on, no new call is sent; the calls in
	// flight keep the answers the peer gives them by id, and the last ones
	// left, as many as such errors, fail with *UnattributedError (a peer
	// answers every request it read: they are the ones it refused, or
	// still runs); then the connection is closed (see settleUnattributedLocked).
	unattributed int
	unattrIn     int
	invalid      int    // frames that were not JSON-RPC
	lastBad      []byte // the most recent such frame, cut short
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
	queue := opts.IncomingBuffer
	if opts.Push != nil {
		queue = 0 // Incoming delivers nothing: Push takes it all
	}
	c := &Conn{
		f:        f,
		opts:     opts,
		pending:  make(map[uint64]*pendingCall),
		settled:  newIDRing(4096),
		timedOut: newIDRing(4096),
		incoming: make(chan *Message, queue),
		done:     make(chan struct{}),
	}
	if nr, ok := f.(notResentReporter); ok {
		nr.setNotResent(c.failNotResent)
	}
	if opts.Handler != nil {
		c.handlers = make(chan struct{}, opts.MaxHandlers)
		c.handlerCtx, c.handlerCancel = context.WithCancel(context.Background())
	}
	if opts.Reader != nil {
		opts.Reader(c.read)
	} else {
		c.reading.Store(readRunning)
		go c.readLoop()
	}
	return c
}

// ctxWriter is a Framer that may resend a message later (secureFramer,
// after the peer refused the connection it was written on): it is told
// the context of the call that writes it, and resends it only while that
// call still waits.
type ctxWriter interface {
	writeFrameCtx(ctx context.Context, p []byte) error
}

// The states of a Conn's reading loop (Conn.reading).
const (
	readNotYet int32 = iota
	readRunning
	readClosed
)

// read runs the reading loop unless it runs already or Close ran first
// (Options.Reader).
func (c *Conn) read() {
	if c.reading.CompareAndSwap(readNotYet, readRunning) {
		c.readLoop()
	}
}

// notResentReporter is a Framer that may drop messages it was given
// instead of resending them on a new connection (secureFramer).
type notResentReporter interface {
	setNotResent(func(frames [][]byte, why string))
}

// failNotResent fails the calls of frames, requests written on a connection
// the peer refused and not resent on the next one, with *NotResentError:
// they may have reached the peer, and are never sent twice. Their ids join
// the abandoned ones (timedOut): a late answer to one is stale, not an
// answer to a call never sent.
func (c *Conn) failNotResent(frames [][]byte, why string) {
	for _, fr := range frames {
		m, err := DecodeMessage(fr)
		if err != nil || m.Kind != KindRequest || len(m.ID) == 0 {
			c.trace(Note, fr, "not resent after the peer refused the connection ("+why+"): it may have reached the peer")
			continue
		}
		id, ok, _ := c.matchID(m.ID)
		c.mu.Lock()
		p := c.pending[id]
		if ok && p != nil {
			delete(c.pending, id)
			c.timedOut.add(id)
		}
		c.mu.Unlock()
		c.trace(Note, fr, "not resent after the peer refused the connection ("+why+"): it may have reached the peer")
		if ok && p != nil {
			p.ch <- result{err: &NotResentError{Method: p.method, Refusal: why}}
		}
	}
}

// Incoming delivers what the peer pushes: notifications, server-initiated
// requests, lean events, and unmatched or invalid frames (unless
// Options.Push takes them). It is closed when the connection ends. When it is full, or holds Options.MaxHeldBytes, the
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
	if c.reading.CompareAndSwap(readNotYet, readClosed) {
		// The owner never ran the reading loop (Options.Reader): it runs
		// here, on a closed framer, and ends the connection at once.
		c.readLoop()
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
// (wrapped in *ClosedError), *NotResentError (the peer refused the
// connection after an earlier request: this one may have reached it and is
// not sent again), *UnattributedError (the peer answered an error with no
// id while several calls were in flight, and this one got no answer of its
// own).
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
	if c.unattributed > 0 {
		// The peer refused a request it did not name: the calls in flight
		// are being settled, and nothing more goes on this connection.
		err := &ClosedError{Cause: fmt.Errorf("not sent: %w", c.unattributedCauseLocked())}
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
		var be *BTSPRequiredError
		if errors.As(err, &be) {
			// The peer demanded BTSP and none could be opened: nothing was
			// written (see secureFramer.refuseWrites).
			return nil, be
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
			if errors.As(r.err, &ce) && deadlinePassed(ctx) && !refusedForSecurity(r.err) {
				// The deadline passed as the connection ended (a write
				// cut by the deadline ends it too, and so does a
				// reconnect cut by it, as a handshake timeout or a failed
				// dial): the call timed out. The clock says so: a socket's
				// deadline, set from ctx's, may fire a hair before ctx
				// reports it. A refusal for security stays what it is.
				c.forget(id, true)
				return nil, c.ctxErr(context.DeadlineExceeded, req, time.Since(start))
			}
			return nil, r.err
		}
		resp := &Response{
			ID: r.m.ID, Result: r.m.Result, ResultCuts: r.m.ResultCuts, Error: r.m.Error, Raw: r.m.Raw, Sent: frame,
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
	// After an error with no id, a call leaving (its deadline, its
	// cancel) may leave as few calls as such errors: those are the refused
	// ones, and the connection, which takes no new call, ends (as when an
	// answer settles them).
	end := c.unattributed > 0 && c.settleUnattributedLocked()
	c.mu.Unlock()
	if end {
		c.endUnattributed()
	}
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
	var err error
	if cw, ok := c.f.(ctxWriter); ok {
		err = cw.writeFrameCtx(ctx, frame)
	} else {
		err = c.f.WriteFrame(frame)
	}
	if err != nil {
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
		// A frame read (In) is a Message's Raw, which no one changes.
		c.opts.Trace(TraceEvent{Time: time.Now(), Dir: d, Data: data, Size: len(data), Warning: warning, Kept: d == In})
	}
}

// traceRead traces a frame read, at the time its Message was stamped
// with: the clock is read once a frame, not again for its trace (a
// flood's reader read it twice a notification).
func (c *Conn) traceRead(frame []byte, at time.Time, warning string) {
	if c.opts.Trace != nil {
		c.opts.Trace(TraceEvent{Time: at, Dir: In, Data: frame, Size: len(frame), Warning: warning, Kept: true})
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
