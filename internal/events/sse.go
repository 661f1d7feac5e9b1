package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ecoPrimals/primalscope/internal/backoff"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// SSESource reads the biomeOS API's server-sent events from its Unix socket
// (after the riboCipher prefix) and reopens the stream with backoff when it
// ends, resuming from the last event id.
type SSESource struct {
	// Source names the target in events.
	Source string
	// Path is the socket path.
	Path string
	// Options tune the stream (path, prefix, limits).
	Options sse.Options
	// BackoffMin and BackoffMax bound the waits between attempts (defaults
	// 500 ms, 30 s; a server's retry field raises the minimum).
	BackoffMin, BackoffMax time.Duration
}

// Name is the source's name.
func (s *SSESource) Name() string { return s.Source }

// Run reads the stream until ctx ends. A stream refused for security (a
// socket served by a local user the user does not trust) is said as
// liveness StateRefused (the merge notes why it stopped) and ends the
// source: it is not reopened.
func (s *SSESource) Run(ctx context.Context, emit Emit) error {
	wait := reconnect(s.BackoffMin, s.BackoffMax)
	opts := s.Options
	connected := false
	failing := false
	for ctx.Err() == nil {
		st, err := sse.OpenUnix(ctx, s.Path, opts)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ipc.SecurityFailure(err) {
				b, _ := json.Marshal(map[string]string{"state": StateRefused, "reason": err.Error()})
				emit(Event{Source: s.Source, Kind: KindLiveness, Name: StateRefused, Payload: b})
				return err
			}
			if !failing {
				emit(Note(s.Source, "event stream: "+err.Error()))
				failing = true
			}
		} else {
			failing = false
			if connected {
				emit(Note(s.Source, "event stream reopened"))
			}
			connected = true
			wait.Reset()
			err = s.read(ctx, st, emit, &opts)
			st.Close()
			if ctx.Err() != nil {
				return nil
			}
			emit(Note(s.Source, "event stream ended: "+errText(err)))
			wait.Raise(st.Retry())
		}
		if !backoff.Sleep(ctx, wait.Next()) {
			return nil
		}
	}
	return nil
}

func (s *SSESource) read(ctx context.Context, st *sse.Stream, emit Emit, opts *sse.Options) error {
	for {
		ev, err := st.Next()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var le *sse.LineTooLongError
			var ee *sse.EventTooLargeError
			if errors.As(err, &le) || errors.As(err, &ee) {
				emit(Note(s.Source, "event stream: "+err.Error()))
			}
			return err
		}
		opts.LastEventID = ev.ID
		emit(Event{Source: s.Source, Kind: KindSSE, Name: sseName(ev), Payload: rawOrString(bytes.TrimSpace(ev.Data))})
	}
}

// sseName is the event's JSON "type" when it has one, else the SSE event
// field.
func sseName(ev sse.Event) string {
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(ev.Data, &head) == nil && head.Type != "" {
		return head.Type
	}
	return ev.Type
}
