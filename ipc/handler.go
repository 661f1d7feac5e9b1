package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
)

// Handler answers a server-initiated request inside the Conn (a holon's
// Hello, say). Each request runs on its own goroutine, off the reading
// goroutine, so a slow handler delays only its own answer; at most
// Options.MaxHandlers run at once, and a request beyond them, or one that
// would take the bytes held for the peer past Options.MaxHeldBytes, is
// answered at once with a "resource exhausted" error (Holon-RPC code 8 on the Holon
// wire, -32000 on the others) without running the handler. ctx ends
// when the connection does (Close waits for running handlers, so a handler
// must return once ctx is done). It returns handled=false to let the request
// reach Incoming instead (after what arrived while it ran).
type Handler func(ctx context.Context, m *Message) (result json.RawMessage, rpcErr *RPCError, handled bool)

// DefaultMaxHandlers is how many server-initiated requests a Conn's Handler
// works on at once unless Options.MaxHandlers says otherwise.
const DefaultMaxHandlers = 32

// replyTimeout bounds writing the answer to one server-initiated request.
const replyTimeout = 5 * time.Second

// handOff runs the Handler on a server-initiated request on a goroutine of
// its own, or refuses the request when MaxHandlers are already running: a
// peer waiting on the answer (a holon's Hello) learns at once that it will
// not come, rather than at its own timeout.
func (c *Conn) handOff(m *Message) {
	select {
	case c.handlers <- struct{}{}:
	default:
		c.refuse(m, fmt.Sprintf("%d handlers already running", c.opts.MaxHandlers),
			fmt.Sprintf("primalscope is already handling %d requests from this peer", c.opts.MaxHandlers))
		return
	}
	size := heldSize(m)
	c.mu.Lock()
	fits, note := c.roomLocked(size, false)
	if fits {
		c.handling += size
	}
	held := c.queuedBytes + c.handling
	c.mu.Unlock()
	c.traceNote(note)
	if !fits {
		<-c.handlers
		c.refuse(m, fmt.Sprintf("%s already held for this peer (the limit is %s)", human.Bytes(held), human.Bytes(c.opts.MaxHeldBytes)),
			"primalscope already holds too many bytes from this peer")
		return
	}
	c.handlerWG.Add(1)
	go func() {
		defer c.handlerWG.Done()
		defer func() { <-c.handlers }()
		res, rerr, ok := c.opts.Handler(c.handlerCtx, m)
		c.mu.Lock()
		c.handling -= size
		c.mu.Unlock()
		if !ok {
			c.deliver(m)
			return
		}
		c.reply(m.ID, res, rerr)
	}()
}

// refuse answers a server request "resource exhausted" without handling
// it; why is for the trace, told for the peer.
func (c *Conn) refuse(m *Message, why, told string) {
	c.mu.Lock()
	c.refused++
	c.mu.Unlock()
	c.trace(Note, nil, fmt.Sprintf("refused server request %s: %s", cut(m.ID, 40), why))
	c.reply(m.ID, nil, c.exhausted(told))
}

// reply answers a server-initiated request, bounded by replyTimeout and by
// the connection's life.
func (c *Conn) reply(id json.RawMessage, res json.RawMessage, rerr *RPCError) {
	if len(id) == 0 {
		return // a notification: nothing to answer
	}
	ctx, cancel := context.WithTimeout(c.handlerCtx, replyTimeout)
	defer cancel()
	_ = c.write(ctx, c.encodeReply(id, res, rerr))
}

// exhausted is the error a refused server request is answered with: the
// Holon-RPC spec's code 8 (resource exhausted) on the Holon wire, and an
// implementation-defined server error (JSON-RPC 2.0 reserves -32000 to
// -32099 for them) on the others.
func (c *Conn) exhausted(told string) *RPCError {
	code := int64(-32000)
	if c.opts.Wire == WireHolon {
		code = 8
	}
	return &RPCError{Code: code, Message: "resource exhausted: " + told}
}
