package ipc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
)

// The reading side of a Conn: frames in, answers matched to their calls,
// pushes held within the byte budget and delivered, the connection's end.

func (c *Conn) readLoop() {
	// demand is the peer's BTSP demand the connection ended on (a secure
	// framer whose reconnect with BTSP failed): the calls in flight get the
	// whole story, and every later call is refused with it.
	var demand *BTSPRequiredError
	defer func() {
		c.mu.Lock()
		if !c.closed {
			c.closed = true
		}
		n := len(c.pending)
		err := c.closedErrLocked(n)
		for id, p := range c.pending {
			if c.unattributed > 0 {
				// In flight when the peer refused a request it did not
				// name: it may be this one.
				p.ch <- result{err: c.unattributedErrLocked(p)}
			} else {
				p.ch <- result{err: err}
			}
			delete(c.pending, id)
		}
		if demand != nil && c.peerErr == nil {
			c.peerErr = demand
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
			_ = errors.As(err, &demand)
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
	holon := c.opts.Wire == WireHolon
	switch {
	case len(t) == 0:
		return 0, false, "an answer without an id"
	case t[0] == '"':
		if !holon {
			return 0, false, "id " + shownID(t) + " is a string; primalscope sent numeric ids (matched by exact value and type)"
		}
		// The common answer, "7": digits only, so valid JSON and its own
		// value (no allocation); anything else is unescaped first.
		if len(t) >= 2 && t[len(t)-1] == '"' && allDigits(t[1:len(t)-1]) {
			n, ok := canonicalUint(t[1 : len(t)-1])
			if !ok {
				return 0, false, "id " + shownID(t) + " is not one primalscope sent"
			}
			return n, true, ""
		}
		var s string
		if json.Unmarshal(t, &s) != nil {
			return 0, false, "id " + shownID(t) + " is not a valid JSON string"
		}
		n, ok := canonicalUint([]byte(s))
		if !ok {
			return 0, false, "id " + shownID(t) + " is not one primalscope sent"
		}
		return n, true, ""
	case t[0] == '-' || t[0] >= '0' && t[0] <= '9':
		if holon {
			return 0, false, "id " + shownID(t) + " is a number; primalscope sent string ids (matched by exact value and type)"
		}
		n, ok := canonicalUint(t)
		if !ok {
			return 0, false, "id " + shownID(t) + " is not one primalscope sent (ids are integers, matched as written)"
		}
		return n, true, ""
	}
	return 0, false, "id " + shownID(t) + " is neither a string nor a number"
}

// shownID is an id as a trace shows it: its first 40 bytes.
func shownID(t []byte) string { return string(cut(t, 40)) }

// allDigits reports whether b is decimal digits only (empty included).
func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// canonicalUint parses s as primalscope writes ids: decimal digits, no sign,
// no leading zero.
func canonicalUint(s []byte) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false // past uint64
		}
		n = n*10 + d
	}
	return n, true
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
		m, derr = decodeMessage(frame, &c.names)
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
		end := false
		if ok && p != nil && foreign == "" {
			delete(c.pending, id)
			c.settled.add(id)
			end = c.settleUnattributedLocked()
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
				m.Warning = fmt.Sprintf("stale_response_id: call %d had already been given up (it timed out, or was not resent after a refusal)", id)
			default:
				m.Warning = fmt.Sprintf("unknown_response_id: no call %d was sent", id)
				c.unknownIDs++
				c.lastUnknown = "id " + string(cut(m.ID, 40))
			}
		}
		c.mu.Unlock()
		c.traceRead(frame, m.Time, m.Warning)
		if end {
			c.endUnattributed()
		}
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
			c.traceRead(frame, m.Time, m.Warning)
			c.deliver(m)
			return answer{}, false
		}
		// An error with a null or missing id: the peer could not tell which
		// call it answers (a parse error) or is refusing the whole
		// connection (BTSP required). It ends the call in flight when there
		// is exactly one; with more, see Conn.unattributed.
		c.traceRead(frame, m.Time, "error without an id")
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
		if len(c.pending) == 1 && c.unattributed == 0 {
			for id, p := range c.pending {
				delete(c.pending, id)
				c.mu.Unlock()
				p.ch <- result{m: m}
				return answer{}, false
			}
		}
		if len(c.pending) > 1 || c.unattributed > 0 {
			// It answers one of the calls in flight, which cannot be
			// told (a peer that closes after a parse error, as the stdio
			// bus does, and one that reads on alike): see unattributed.
			if c.unattributed == 0 {
				c.unattrIn = len(c.pending)
			}
			c.unattributed++
			n := len(c.pending)
			end := c.settleUnattributedLocked()
			c.mu.Unlock()
			c.trace(Note, nil, fmt.Sprintf("the peer's error with no id answers one of the %d call(s) in flight, which cannot be told: "+
				"no new call is sent on this connection; the calls answered by id keep their answers, the rest fail as unattributed (not resent), then it closes", n))
			c.deliver(m)
			if end {
				c.endUnattributed()
			}
			return answer{}, false
		}
		c.mu.Unlock()
		c.deliver(m)
	case KindRequest:
		if isNull(m.ID) {
			// A peer's method with "id":null is a notification in JSON-RPC
			// 1.0's manner: an answer could name no call it made, so it is
			// shown and never answered (a server answers a client's null
			// id, as JSON-RPC 2.0 asks; a client does not).
			m.Kind = KindNotification
			m.Warning = joinWarning(m.Warning, "null_id_request: a method with \"id\":null, taken as a notification (not answered)")
			c.traceRead(frame, m.Time, m.Warning)
			c.deliver(m)
			return answer{}, false
		}
		c.traceRead(frame, m.Time, m.Warning)
		if c.opts.Handler != nil {
			c.handOff(m)
			return answer{}, false
		}
		c.deliver(m)
	default:
		c.traceRead(frame, m.Time, m.Warning)
		c.deliver(m)
	}
	return answer{}, false
}

// settleUnattributedLocked fails the calls in flight once no more of them
// are left than the peer sent errors with no id (see Conn.unattributed):
// a peer answers each request it read, by id or, when it could not read
// it, with such an error, so the calls left are the ones it refused, or
// one it still runs; which of them cannot be told, so each fails with
// *UnattributedError, and its id joins the abandoned ones (a late answer
// is stale). It reports whether the connection is to be closed (then
// endUnattributed, without c.mu). Called with c.mu held.
func (c *Conn) settleUnattributedLocked() bool {
	if c.unattributed == 0 || len(c.pending) > c.unattributed {
		return false
	}
	for id, p := range c.pending {
		p.ch <- result{err: c.unattributedErrLocked(p)}
		delete(c.pending, id)
		c.timedOut.add(id)
	}
	return true
}

// endUnattributed closes the connection once its calls are settled after
// an error with no id: its stream holds a request the peer refused without
// saying which, and nothing more is sent on it.
func (c *Conn) endUnattributed() {
	c.mu.Lock()
	cause := c.unattributedCauseLocked()
	c.mu.Unlock()
	c.trace(Note, nil, "closing: "+cause.Error())
	c.fail(cause)
}

func (c *Conn) unattributedErrLocked(p *pendingCall) error {
	re, _ := c.peerErr.(*RPCError)
	return &UnattributedError{Method: p.method, Peer: re, InFlight: c.unattrIn}
}

func (c *Conn) unattributedCauseLocked() error {
	return fmt.Errorf("the peer answered %d error(s) with no id (the last: %v) while %d calls were in flight: which request it refused cannot be told, and the connection takes no new call",
		c.unattributed, c.peerErr, c.unattrIn)
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

// deliver hands m to Options.Push, or to Incoming, dropping the oldest unread messages when it
// is full or holds too many bytes; m itself is dropped when it cannot fit.
func (c *Conn) deliver(m *Message) {
	if c.opts.Push != nil {
		c.opts.Push(m)
		return
	}
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
