package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/ipc"
)

// DialFunc opens a connection to a target with trace as its trace hook.
type DialFunc func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error)

// Answerer answers a request the peer sent. It returns the result or an
// error object; both nil means "do not answer".
type Answerer func(m *ipc.Message) (json.RawMessage, *ipc.RPCError)

// Defaults of a TargetSource.
const (
	DefaultInterval   = 5 * time.Second
	DefaultStaleAfter = 2 * time.Second
	DefaultBackoffMin = 500 * time.Millisecond
	DefaultBackoffMax = 30 * time.Second
)

// TargetSource holds a connection open to one target and reports what it
// pushes, polls its liveness, and (for a registry) polls ipc.watch. When the
// connection ends it is re-established with backoff.
type TargetSource struct {
	// Source names the target in events.
	Source string
	// Dial opens the connection.
	Dial DialFunc
	// DialPush, when set, opens the connection instead of Dial, with the
	// PushDial's Push and Reader in its ipc.Options: what the peer pushes
	// is delivered as the connection reads it, with no queue of unread
	// messages, and the reading loop runs on the source's own goroutine
	// when it polls nothing: one goroutine a connection (the TUI listens
	// to 256 targets).
	DialPush func(ctx context.Context, trace func(ipc.TraceEvent), pd PushDial) (*ipc.Conn, error)
	// LivenessMethod is polled every Interval ("health.liveness" when empty;
	// "rpc.heartbeat" suits holons; "-" polls nothing). Any answer, even an
	// error, proves the target alive.
	LivenessMethod string
	// Interval is how often liveness is polled (default 5 s).
	Interval time.Duration
	// StaleAfter is how long a liveness answer may take before the target
	// counts as stale (default 2 s).
	StaleAfter time.Duration
	// Watch polls ipc.watch {since_revision} (Songbird) every WatchInterval
	// (default Interval).
	Watch         bool
	WatchInterval time.Duration
	// Answer answers the peer's requests (nil: DefaultAnswer).
	Answer Answerer
	// BackoffMin and BackoffMax bound reconnection waits (defaults 500 ms, 30 s).
	BackoffMin, BackoffMax time.Duration
	// Pool routes liveness polls on a stdio Bus with several pools (which
	// drops messages without one).
	Pool string

	mu   sync.Mutex
	conn *ipc.Conn // the connection being served, for replies
	seq  uint64    // its number (from 1): Event.Conn of what it asked
	// asked maps the id of each request left unanswered to the connection
	// it came on (askedSeveral: more than one), for Reply; at most
	// maxAsked ids are kept.
	asked map[string]uint64
}

// askedSeveral marks an id that requests on more than one connection used.
const askedSeveral = ^uint64(0)

// maxAsked bounds the ids Reply remembers; past it, new ids are not
// remembered (Reply refuses them; ReplyOn still answers).
const maxAsked = 4096

// Name is the source's name.
func (t *TargetSource) Name() string { return t.Source }

// DefaultAnswer answers client.v1.Client/Hello (holons that speak first
// expect it) with who is listening, and anything else with "method not
// found": tail watches, it does not serve.
func DefaultAnswer(m *ipc.Message) (json.RawMessage, *ipc.RPCError) {
	return answerNotServing(m, "primalscope tail only watches")
}

// NotServing returns the answer of a command that serves no requests to
// what a peer asks: client.v1.Client/Hello gets who is listening, anything
// else "method not found: " and why, which names the command (for
// instance "primalscope call does not serve requests"), so the peer's
// logs say who refused.
func NotServing(why string) func(*ipc.Message) (json.RawMessage, *ipc.RPCError) {
	return func(m *ipc.Message) (json.RawMessage, *ipc.RPCError) { return answerNotServing(m, why) }
}

func answerNotServing(m *ipc.Message, why string) (json.RawMessage, *ipc.RPCError) {
	if m.Method == "client.v1.Client/Hello" {
		return json.RawMessage(`{"name":"primalscope","role":"observer"}`), nil
	}
	return nil, &ipc.RPCError{Code: -32601, Message: "method not found: " + why}
}

// ReplyOn answers a request the peer sent (an event of KindRequest its
// Answer left unanswered) on conn, the connection it came on (the event's
// Conn). Once that connection is gone it fails and sends nothing, also when
// the source has reconnected since: the new connection did not ask, and
// may have sent a request of its own with the same id.
func (t *TargetSource) ReplyOn(ctx context.Context, conn uint64, id, result json.RawMessage, rpcErr *ipc.RPCError) error {
	if conn == 0 {
		return errors.New("reply: the request names no connection (it was not left unanswered by this source)")
	}
	t.mu.Lock()
	c, seq := t.conn, t.seq
	t.mu.Unlock()
	if c == nil || seq != conn {
		return errors.New("reply: the connection that asked is closed; the request can no longer be answered")
	}
	return c.Reply(ctx, id, result, rpcErr)
}

// Reply is ReplyOn for a caller that knows only the request's id: it
// answers on the connection a request with that id came on. It fails and
// sends nothing when that connection is gone, when requests with that id
// came on more than one connection (a peer that reconnected reuses ids:
// use ReplyOn with the event's Conn), or when no such request is known.
func (t *TargetSource) Reply(ctx context.Context, id, result json.RawMessage, rpcErr *ipc.RPCError) error {
	t.mu.Lock()
	conn, ok := t.asked[idKey(id)]
	t.mu.Unlock()
	switch {
	case !ok:
		return errors.New("reply: no request left unanswered has that id")
	case conn == askedSeveral:
		return errors.New("reply: requests with that id came on more than one connection; cannot tell which one asked")
	}
	return t.ReplyOn(ctx, conn, id, result, rpcErr)
}

// noteAsked records that the request id, left unanswered, came on
// connection seq (for Reply).
func (t *TargetSource) noteAsked(id json.RawMessage, seq uint64) {
	k := idKey(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.asked == nil {
		t.asked = map[string]uint64{}
	}
	prev, ok := t.asked[k]
	switch {
	case !ok && len(t.asked) < maxAsked:
		t.asked[k] = seq
	case ok && prev != seq:
		t.asked[k] = askedSeveral
	}
}

// idKey is a request id as a map key: its compact JSON (an event's payload
// carries the id re-encoded).
func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// Run watches the target until ctx ends.
func (t *TargetSource) Run(ctx context.Context, emit Emit) error {
	if t.Dial == nil && t.DialPush == nil {
		return errors.New("no dialer")
	}
	interval := orDur(t.Interval, DefaultInterval)
	wait := reconnect(t.BackoffMin, t.BackoffMax)
	st := &liveState{}
	var rev int64 = -1
	for ctx.Err() == nil {
		var (
			c   *ipc.Conn
			err error
			pu  *pushed
		)
		if t.DialPush != nil {
			pu = &pushed{}
			c, err = t.DialPush(ctx, t.traceTo(emit), PushDial{Push: pu.push, Reader: pu.reader})
		} else {
			c, err = t.Dial(ctx, t.traceTo(emit))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ipc.SecurityFailure(err) {
				// A BTSP demand without a seed, a failed handshake:
				// retrying cannot help, and would give an impostor
				// another try.
				st.report(t, emit, StateRefused, 0, err.Error())
				return err
			}
			st.report(t, emit, StateGone, 0, err.Error())
			if !backoff.Sleep(ctx, wait.Next()) {
				return nil
			}
			continue
		}
		wait.Reset()
		ended := t.serve(ctx, c, pu, emit, st, interval, &rev)
		if ctx.Err() != nil {
			return nil
		}
		if ipc.SecurityFailure(ended) {
			// A BTSP session frame refused (forged, replayed, cleartext):
			// a security failure, not a hiccup; not reconnected.
			st.report(t, emit, StateRefused, 0, "connection refused for security: "+errText(ended))
			return ended
		}
		st.report(t, emit, StateGone, 0, "connection ended: "+errText(ended))
		if !backoff.Sleep(ctx, wait.Next()) {
			return nil
		}
	}
	return nil
}

// serve runs one connection until it ends or ctx does. What the peer
// pushes is read here, on the source's own goroutine, between the ticks:
// a source costs the connection's reader and this goroutine, not a third
// one to read Incoming (the TUI listens to 256 targets: 256 goroutines'
// stacks). Liveness and ipc.watch polls, which wait on an answer, run in a
// goroutine of their own while they last, so reading never waits on them.
//
// With pu (DialPush), what the peer pushes is delivered on the
// connection's reading goroutine instead, from here on.
func (t *TargetSource) serve(ctx context.Context, c *ipc.Conn, pu *pushed, emit Emit, st *liveState, interval time.Duration, rev *int64) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	t.mu.Lock()
	t.conn = c
	t.seq++
	seq := t.seq
	t.mu.Unlock()
	answer := t.Answer
	if answer == nil {
		answer = DefaultAnswer
	}
	if pu != nil {
		if lost := pu.start(func(m *ipc.Message) { t.deliver(sctx, c, seq, m, emit, answer) }); lost > 0 {
			emit(droppedEvent(t.Source, lost, lost))
		}
	}
	incoming := c.Incoming() // with pu: closed as the connection ends, and nothing else
	var reported uint64
	// Pushes the connection dropped because this reader fell behind are
	// counted where they were lost, not lost quietly.
	countDropped := func() {
		if d := c.Dropped(); d > reported {
			emit(droppedEvent(t.Source, d-reported, d))
			reported = d
		}
	}
	defer func() {
		t.mu.Lock()
		t.conn = nil
		t.mu.Unlock()
		c.Close() // ends Incoming: what is left in it is delivered below
		if incoming != nil {
			for m := range incoming {
				countDropped()
				t.deliver(sctx, c, seq, m, emit, answer)
			}
		}
		countDropped()
		wg.Wait() // a poll in flight (the connection's end ends it)
	}()
	method := t.LivenessMethod
	if method == "" {
		method = "health.liveness"
	}
	poll := func() {
		if method == "-" {
			return
		}
		stale := orDur(t.StaleAfter, DefaultStaleAfter)
		cctx, ccancel := context.WithTimeout(sctx, stale)
		start := time.Now()
		_, err := c.Send(cctx, ipc.Request{Method: method, Params: json.RawMessage(`{}`), Pool: t.Pool})
		ccancel()
		lat := time.Since(start)
		var re *ipc.RPCError
		var te *ipc.TimeoutError
		switch {
		case err == nil || errors.As(err, &re):
			st.report(t, emit, StateAlive, lat, "")
		case errors.As(err, &te):
			st.report(t, emit, StateStale, lat, fmt.Sprintf("no answer to %s within %s", method, stale))
		}
	}
	// watchOn and rev belong to the polling goroutine (one at a time).
	watchOn := t.Watch
	watch := func() {
		if !watchOn {
			return
		}
		if err := t.pollWatch(sctx, c, emit, rev); err != nil {
			watchOn = false
			emit(Note(t.Source, err.Error()))
		}
	}
	// polled says the polling goroutine ended; busy that it runs;
	// wantPoll and wantWatch are ticks it has yet to serve.
	polled := make(chan struct{}, 1)
	busy, wantPoll, wantWatch := false, method != "-", t.Watch
	startPolls := func() {
		if busy || !wantPoll && !wantWatch {
			return
		}
		doPoll, doWatch := wantPoll, wantWatch
		busy, wantPoll, wantWatch = true, false, false
		wg.Add(1)
		go func() {
			defer wg.Done()
			if doPoll {
				poll()
			}
			if doWatch {
				watch()
			}
			polled <- struct{}{}
		}()
	}
	var read func()
	if pu != nil {
		pu.mu.Lock()
		read = pu.read
		pu.mu.Unlock()
	}
	if read != nil {
		if !wantPoll && !wantWatch {
			// Nothing to poll: the connection is read here, until it
			// ends (or ctx does, which closes it).
			stop := context.AfterFunc(ctx, func() { c.Close() })
			read()
			stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return c.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			read()
		}()
	}
	startPolls()
	// Tickers only for what is polled: a source that polls nothing (the
	// TUI's) waits on its connection alone.
	var ptC, wtC <-chan time.Time
	if method != "-" {
		pt := time.NewTicker(interval)
		defer pt.Stop()
		ptC = pt.C
	}
	if t.Watch {
		wt := time.NewTicker(orDur(t.WatchInterval, interval))
		defer wt.Stop()
		wtC = wt.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case m, ok := <-incoming:
			if !ok {
				incoming = nil // the connection ended: Done says why
				continue
			}
			countDropped()
			t.deliver(sctx, c, seq, m, emit, answer)
		case <-c.Done():
			return c.Err()
		case <-polled:
			busy = false
			startPolls()
		case <-ptC:
			wantPoll = true
			startPolls()
		case <-wtC:
			wantWatch = true
			startPolls()
		}
	}
}

// PushDial is what a connection DialPush opens takes into its ipc.Options.
type PushDial struct {
	Push   func(*ipc.Message)
	Reader func(read func())
}

// pushed takes what a connection opened by DialPush pushes, on its
// reading goroutine, and delivers it once serve has the connection: the
// reader starts before Dial returns, so what arrives before that waits
// (at most maxEarly messages; past that they are counted as dropped).
type pushed struct {
	mu      sync.Mutex
	deliver func(*ipc.Message) // nil until serve has the connection
	early   []*ipc.Message
	lost    uint64
	// read is the connection's reading loop, when it was handed over
	// (ipc.Options.Reader); serve runs it.
	read func()
}

func (p *pushed) reader(read func()) {
	p.mu.Lock()
	p.read = read
	p.mu.Unlock()
}

// maxEarly bounds the messages that wait for serve (ipc's default queue).
const maxEarly = 1024

func (p *pushed) push(m *ipc.Message) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.deliver != nil:
		p.deliver(m)
	case len(p.early) < maxEarly:
		p.early = append(p.early, m)
	default:
		p.lost++
	}
}

// start delivers what waited, in order, then has everything delivered as
// it arrives; it returns how many messages did not fit while waiting.
func (p *pushed) start(deliver func(*ipc.Message)) (lost uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.early {
		deliver(m)
	}
	p.early = nil
	p.deliver = deliver
	return p.lost
}

// pollWatch asks ipc.watch for changes since the last revision. The first
// poll only learns the current revision: tail shows what happens from now.
func (t *TargetSource) pollWatch(ctx context.Context, c *ipc.Conn, emit Emit, rev *int64) error {
	since := *rev
	if since < 0 {
		since = 0
	}
	cctx, cancel := context.WithTimeout(ctx, orDur(t.StaleAfter, DefaultStaleAfter))
	defer cancel()
	resp, err := c.Call(cctx, "ipc.watch", map[string]int64{"since_revision": since})
	var re *ipc.RPCError
	switch {
	case errors.As(err, &re) && (re.Code == -32601 || strings.Contains(strings.ToLower(re.Message), "unknown method")):
		return fmt.Errorf("the registry does not offer ipc.watch (%s)", re.Message)
	case err != nil:
		return nil // a slow or failed poll: try again next tick
	}
	var w struct {
		Revision int64             `json:"revision"`
		Events   []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(resp.Result, &w); err != nil {
		return fmt.Errorf("ipc.watch answered something unreadable: %v", err)
	}
	first := *rev < 0
	if w.Revision > *rev || first {
		*rev = w.Revision
	}
	if first {
		return nil
	}
	for _, ev := range w.Events {
		var head struct {
			Kind     string `json:"kind"`
			Revision int64  `json:"revision"`
		}
		_ = json.Unmarshal(ev, &head)
		if head.Revision != 0 && head.Revision <= since {
			continue // a registry that ignores since_revision
		}
		emit(Event{Source: t.Source, Kind: KindRegistry, Name: head.Kind, Payload: rawOrString(ev)})
	}
	return nil
}

// deliver turns one pushed message into an event, answering requests;
// a request left unanswered carries its connection, seq.
func (t *TargetSource) deliver(ctx context.Context, c *ipc.Conn, seq uint64, m *ipc.Message, emit Emit, answer Answerer) {
	ev := FromMessage(t.Source, m)
	if m.Kind == ipc.KindRequest {
		res, rerr := answer(m)
		if rerr == nil && res == nil {
			ev.Conn = seq
			t.noteAsked(m.ID, seq)
		}
		if rerr != nil || res != nil {
			p := map[string]json.RawMessage{"id": rawOrString(m.ID), "params": rawOrString(m.Params)}
			if rerr != nil {
				p["answered_error"], _ = json.Marshal(rerr)
			} else {
				p["answered"] = rawOrString(res)
			}
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := c.Reply(rctx, m.ID, res, rerr); err != nil {
				p["answer_failed"] = jsonString(err.Error())
			}
			cancel()
			ev.Payload, _ = json.Marshal(p)
		}
	}
	emit(ev)
}

// FromMessage is the event a message a peer pushed makes: a notification
// or a lean event with its params or data, a request with its id and params
// ({"id", "params"}), and anything else a note with the connection's
// warning and (the start of) the frame ({"warning", "frame"}).
func FromMessage(source string, m *ipc.Message) Event {
	ev := Event{Source: source, Time: m.Time}
	payload := rawOrString
	if m.JSONChecked {
		// The connection's scanner validated the frame: checking the
		// payload again cost a tenth of a notification's way to the screen.
		payload = rawOrNull
	}
	switch m.Kind {
	case ipc.KindNotification:
		ev.Kind, ev.Name, ev.Payload = KindNotification, m.Method, payload(m.Params)
	case ipc.KindEvent:
		ev.Kind, ev.Name, ev.Payload = KindEvent, m.Type, payload(m.Data)
	case ipc.KindRequest:
		b, _ := json.Marshal(map[string]json.RawMessage{"id": rawOrString(m.ID), "params": rawOrString(m.Params)})
		ev.Kind, ev.Name, ev.Payload = KindRequest, m.Method, b
	default:
		w := m.Warning
		if w == "" {
			w = m.Kind.String() + " message"
		}
		b, _ := json.Marshal(map[string]json.RawMessage{"warning": jsonString(w), "frame": rawOrString(cutBytes(m.Raw, 2048))})
		ev.Kind, ev.Name, ev.Payload = KindNote, m.Kind.String(), b
	}
	return ev
}

// traceTo reports connection notes and the peer's heartbeats (answered
// below the Conn) as events.
func (t *TargetSource) traceTo(emit Emit) func(ipc.TraceEvent) {
	return func(ev ipc.TraceEvent) {
		switch {
		case ev.Dir == ipc.Note && ev.Warning != "":
			e := Note(t.Source, ev.Warning)
			e.Time = ev.Time
			emit(e)
		case ev.Dir == ipc.In && bytes.Contains(ev.Data, []byte(`"rpc.heartbeat"`)):
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			if json.Unmarshal(ev.Data, &m) == nil && m.Method == "rpc.heartbeat" && len(m.ID) > 0 {
				b, _ := json.Marshal(map[string]json.RawMessage{"id": m.ID, "params": rawOrString(m.Params), "answered": json.RawMessage(`{}`)})
				emit(Event{Source: t.Source, Time: ev.Time, Kind: KindRequest, Name: "rpc.heartbeat", Payload: b})
			}
		}
	}
}

// liveState tracks one target's liveness to report changes.
type liveState struct {
	mu    sync.Mutex
	state string
}

func (l *liveState) report(t *TargetSource, emit Emit, state string, lat time.Duration, why string) {
	l.mu.Lock()
	was := l.state
	l.state = state
	l.mu.Unlock()
	if state == StateGone && was == StateGone {
		return // still gone: say it once
	}
	p := map[string]any{"state": state}
	if state != StateGone && state != StateRefused {
		p["latency_ms"] = float64(lat.Microseconds()) / 1000
	}
	if was != "" && was != state {
		p["was"] = was
	}
	if why != "" {
		p["reason"] = why
	}
	b, _ := json.Marshal(p)
	emit(Event{Source: t.Source, Kind: KindLiveness, Name: state, Payload: b})
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// reconnect is the backoff between connection attempts: from lo to hi
// (defaults DefaultBackoffMin, DefaultBackoffMax), ±10 % jitter.
func reconnect(lo, hi time.Duration) backoff.Backoff {
	return backoff.Backoff{Min: orDur(lo, DefaultBackoffMin), Max: orDur(hi, DefaultBackoffMax), Jitter: 0.1}
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	return err.Error()
}

func cutBytes(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	return b[:n]
}

// droppedEvent says a connection dropped n pushed messages (total so far)
// because they arrived faster than they were read.
func droppedEvent(source string, n, total uint64) Event {
	return Event{Source: source, Time: time.Now(), Kind: KindDropped,
		Payload: json.RawMessage(fmt.Sprintf(`{"dropped":%d,"total":%d,"where":"connection"}`, n, total))}
}
