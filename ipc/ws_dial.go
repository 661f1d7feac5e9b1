package ipc

import (
	"context"

	"github.com/ecoPrimals/primalscope/ipc/holon"
)

// dialHolon opens a Holon-RPC WebSocket. TLS certificates are verified
// unless opts.Insecure says otherwise (the CLI's --insecure). The message limit is Holon-RPC's 1 MiB unless MaxFrame was
// set to something other than the NDJSON default.
func dialHolon(ctx context.Context, ep Endpoint, opts Options) (Framer, error) {
	hopts := holon.Options{MaxMessage: opts.MaxFrame, Insecure: opts.Insecure}
	if opts.MaxFrame <= 0 || opts.MaxFrame == DefaultMaxFrame {
		hopts.MaxMessage = holon.DefaultMaxMessage
	}
	if opts.Trace != nil {
		hopts.Trace = HolonTrace(opts.Trace)
	}
	timeout := opts.ConnectTimeout
	if timeout <= 0 {
		timeout = holon.DefaultDialTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f, err := holon.Dial(dctx, ep.URL, hopts)
	if err != nil {
		return nil, &DialError{Endpoint: ep.String(), Err: err}
	}
	return f, nil
}

// HolonTrace adapts a Conn trace hook to the holon package's trace events,
// so frames the holon framer or session handles itself (heartbeats) and its
// protocol warnings reach the same trace.
func HolonTrace(trace func(TraceEvent)) func(holon.TraceEvent) {
	return func(ev holon.TraceEvent) {
		d := Note
		switch ev.Kind {
		case holon.TraceIn:
			d = In
		case holon.TraceOut:
			d = Out
		}
		w := ev.Warning
		if d == Note && w != "" {
			w = "holon: " + w
		}
		trace(TraceEvent{Time: ev.Time, Dir: d, Data: ev.Data, Size: len(ev.Data), Warning: w})
	}
}
