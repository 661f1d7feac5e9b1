package holon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
)

// Heartbeat and reconnect defaults (those of the JS client).
const (
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultHeartbeatTimeout  = 5 * time.Second
	DefaultBackoffMin        = 500 * time.Millisecond
	DefaultBackoffMax        = 30 * time.Second
	DefaultDialTimeout       = 10 * time.Second
)

// SessionOptions configure a Session.
type SessionOptions struct {
	// Options are used for every (re)connection; Trace also receives the
	// session's notes (heartbeats, connection lost, reconnecting).
	Options
	// HeartbeatInterval is how often rpc.heartbeat is sent (default 15 s;
	// negative disables).
	HeartbeatInterval time.Duration
	// HeartbeatTimeout is how long an answer may take before the connection
	// is closed with 4000 and re-established (default 5 s).
	HeartbeatTimeout time.Duration
	// BackoffMin and BackoffMax bound the wait between reconnection attempts;
	// it doubles from min to max with 10 % jitter (defaults 500 ms, 30 s).
	BackoffMin, BackoffMax time.Duration
	// DialTimeout bounds each connection attempt (default 10 s).
	DialTimeout time.Duration
}

// Session is a long-lived Holon-RPC client connection that survives drops.
// It implements the same framer methods as Framer, so an ipc.Conn can run
// over it: the Conn sees one continuous stream. The Session sends
// rpc.heartbeat itself (ids "h<N>", whose answers it consumes), answers the
// server's heartbeats, and reconnects with backoff when the connection is
// lost. Requests that were in flight when it dropped, or are sent while it
// is reconnecting, are answered at once with error 14 (unavailable).
//
// A Session owns its goroutines; they end when ctx ends or Close is called.
type Session struct {
	url  string
	opts SessionOptions

	ctx    context.Context
	cancel context.CancelFunc
	in     chan []byte
	wg     sync.WaitGroup

	mu       sync.Mutex
	cur      *Framer
	pending  map[string]json.RawMessage // user request ids in flight on cur
	deadline time.Time
	hbWait   string // id of the heartbeat awaiting its answer
	hbSent   time.Time
	hbAnswer chan time.Duration

	hbN        atomic.Uint64
	reconnects atomic.Int64
	lastRTT    atomic.Int64
	closeOnce  sync.Once
}

// NewSession connects to rawURL and keeps the connection up until ctx ends
// or Close. The first connection must succeed (its error is returned);
// later drops are reconnected.
func NewSession(ctx context.Context, rawURL string, opts SessionOptions) (*Session, error) {
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.HeartbeatTimeout <= 0 {
		opts.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = DefaultBackoffMin
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = DefaultBackoffMax
		if opts.BackoffMax < opts.BackoffMin {
			opts.BackoffMax = opts.BackoffMin
		}
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	s := &Session{url: rawURL, opts: opts, in: make(chan []byte, 64), pending: map[string]json.RawMessage{}, hbAnswer: make(chan time.Duration, 1)}
	s.opts.Options.ManualHeartbeat = false
	dctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	f, err := Dial(dctx, rawURL, s.opts.Options)
	cancel()
	if err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.cur = f
	s.wg.Add(1)
	go s.run(f)
	return s, nil
}

// Reconnects reports how many times the session has reconnected.
func (s *Session) Reconnects() int64 { return s.reconnects.Load() }

// Connected reports whether a connection is up right now.
func (s *Session) Connected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur != nil
}

// LastHeartbeat is the round trip of the last answered heartbeat (0 before).
func (s *Session) LastHeartbeat() time.Duration { return time.Duration(s.lastRTT.Load()) }

func (s *Session) note(w string) {
	if s.opts.Trace != nil {
		s.opts.Trace(TraceEvent{Time: time.Now(), Kind: TraceNote, Warning: w})
	}
}

func (s *Session) run(f *Framer) {
	defer s.wg.Done()
	wait := backoff.Backoff{Min: s.opts.BackoffMin, Max: s.opts.BackoffMax, Jitter: 0.1}
	for {
		err := s.serve(f)
		s.mu.Lock()
		s.cur = nil
		lost := s.pending
		s.pending = map[string]json.RawMessage{}
		s.hbWait = ""
		s.mu.Unlock()
		for _, id := range lost {
			s.push(unavailable(id, "the Holon-RPC connection was lost before the answer came"))
		}
		if s.ctx.Err() != nil {
			return
		}
		attempt := 0
		for {
			attempt++
			d := wait.Next()
			s.note(fmt.Sprintf("connection lost (%v); reconnecting in %s (attempt %d)", errText(err), d.Round(time.Millisecond), attempt))
			if !backoff.Sleep(s.ctx, d) {
				return
			}
			dctx, cancel := context.WithTimeout(s.ctx, s.opts.DialTimeout)
			nf, derr := Dial(dctx, s.url, s.opts.Options)
			cancel()
			if derr == nil {
				s.reconnects.Add(1)
				s.note(fmt.Sprintf("reconnected to %s after %d attempt(s)", s.url, attempt))
				s.mu.Lock()
				if !s.deadline.IsZero() {
					_ = nf.SetWriteDeadline(s.deadline)
				}
				s.cur = nf
				s.mu.Unlock()
				f = nf
				wait.Reset()
				break
			}
			if s.ctx.Err() != nil {
				return
			}
			err = derr
		}
	}
}

// serve reads f until it ends, sending heartbeats meanwhile.
func (s *Session) serve(f *Framer) error {
	readDone := make(chan error, 1)
	go func() { readDone <- s.read(f) }()
	var tick <-chan time.Time
	if s.opts.HeartbeatInterval > 0 {
		t := time.NewTicker(s.opts.HeartbeatInterval)
		defer t.Stop()
		tick = t.C
	}
	var hbTimer *time.Timer
	var hbTimeout <-chan time.Time
	stopTimer := func() {
		if hbTimer != nil {
			hbTimer.Stop()
			hbTimer, hbTimeout = nil, nil
		}
	}
	defer stopTimer()
	timedOut := false
	for {
		select {
		case <-s.ctx.Done():
			_ = f.Close()
			<-readDone
			return s.ctx.Err()
		case err := <-readDone:
			if timedOut {
				return fmt.Errorf("no answer to rpc.heartbeat within %s", s.opts.HeartbeatTimeout)
			}
			return err
		case <-tick:
			s.mu.Lock()
			busy := s.hbWait != ""
			s.mu.Unlock()
			if busy {
				continue
			}
			id := "h" + strconv.FormatUint(s.hbN.Add(1), 10)
			frame := []byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"rpc.heartbeat","params":{}}`)
			s.mu.Lock()
			s.hbWait, s.hbSent = id, time.Now()
			s.mu.Unlock()
			f.trace(TraceOut, frame, "")
			if err := f.send(frame, s.opts.HeartbeatTimeout); err != nil {
				s.note("could not send rpc.heartbeat: " + err.Error())
				_ = f.Close()
				continue
			}
			hbTimer = time.NewTimer(s.opts.HeartbeatTimeout)
			hbTimeout = hbTimer.C
		case rtt := <-s.hbAnswer:
			stopTimer()
			s.lastRTT.Store(int64(rtt))
		case <-hbTimeout:
			hbTimer, hbTimeout = nil, nil
			s.mu.Lock()
			id := s.hbWait
			s.mu.Unlock()
			if id == "" {
				continue
			}
			timedOut = true
			s.note(fmt.Sprintf("rpc.heartbeat %s unanswered after %s; closing with 4000", id, s.opts.HeartbeatTimeout))
			_ = f.CloseWith(CloseHeartbeatTimeout, "heartbeat timeout")
		}
	}
}

// read pumps f's frames to ReadFrame, consuming heartbeat answers.
func (s *Session) read(f *Framer) error {
	for {
		frame, err := f.ReadFrame()
		if err != nil {
			return err
		}
		env := Inspect(frame)
		if env.IsResponse && env.IDString != "" {
			s.mu.Lock()
			if env.IDString == s.hbWait {
				rtt := time.Since(s.hbSent)
				s.hbWait = ""
				s.mu.Unlock()
				f.trace(TraceIn, frame, "")
				select {
				case s.hbAnswer <- rtt:
				default:
				}
				continue
			}
			delete(s.pending, env.IDString)
			s.mu.Unlock()
		} else if env.IsResponse && env.ID != nil {
			s.mu.Lock()
			delete(s.pending, string(env.ID))
			s.mu.Unlock()
		}
		if !s.push(frame) {
			return io.EOF
		}
	}
}

func (s *Session) push(frame []byte) bool {
	select {
	case s.in <- frame:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// ReadFrame returns the next message from whichever connection is up. It
// returns io.EOF once the session has been closed.
func (s *Session) ReadFrame() ([]byte, error) {
	select {
	case f := <-s.in:
		return f, nil
	case <-s.ctx.Done():
		return nil, io.EOF
	}
}

// WriteFrame sends p on the current connection. When there is none, or the
// write fails, a request is answered at once with error 14 and the session
// reconnects; the error is nil so the caller's stream stays usable.
func (s *Session) WriteFrame(p []byte) error {
	if s.ctx.Err() != nil {
		return io.ErrClosedPipe
	}
	env := Inspect(p)
	s.mu.Lock()
	f := s.cur
	key := ""
	if env.IsRequest {
		key = env.IDString
		if key == "" {
			key = string(env.ID)
		}
	}
	if f != nil && key != "" {
		s.pending[key] = append(json.RawMessage(nil), env.ID...)
	}
	s.mu.Unlock()
	if f == nil {
		if env.IsRequest {
			s.pushAsync(unavailable(env.ID, "not connected; the session is reconnecting to "+s.url))
		}
		return nil
	}
	if err := f.WriteFrame(p); err != nil {
		s.mu.Lock()
		_, still := s.pending[key]
		delete(s.pending, key)
		s.mu.Unlock()
		if env.IsRequest && still {
			s.pushAsync(unavailable(env.ID, "the write failed: "+err.Error()))
		}
		s.note("write failed: " + err.Error())
		_ = f.Close() // the reader ends and the session reconnects
	}
	return nil
}

// pushAsync queues a frame for ReadFrame without blocking the writer.
func (s *Session) pushAsync(frame []byte) {
	select {
	case s.in <- frame:
		return
	default:
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.push(frame)
	}()
}

// SetWriteDeadline bounds writes on the current and later connections.
func (s *Session) SetWriteDeadline(t time.Time) error {
	s.mu.Lock()
	s.deadline = t
	f := s.cur
	s.mu.Unlock()
	if f != nil {
		return f.SetWriteDeadline(t)
	}
	return nil
}

// Close ends the session: the connection is closed with 1000 and every
// goroutine has exited when it returns.
func (s *Session) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		s.wg.Wait()
	})
	return nil
}

// unavailable is a synthetic Holon-RPC error answer (code 14) for id.
func unavailable(id json.RawMessage, why string) []byte {
	msg, _ := json.Marshal("unavailable: " + why)
	b := make([]byte, 0, 80+len(id)+len(msg))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":14,"message":`...)
	b = append(b, msg...)
	return append(b, `}}`...)
}

func errText(err error) string {
	if err == nil {
		return "closed"
	}
	if errors.Is(err, io.EOF) {
		return "the peer closed the connection"
	}
	return err.Error()
}
