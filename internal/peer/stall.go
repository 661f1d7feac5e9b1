package peer

import (
	"context"
	"encoding/json"
	"sync"
)

// Stall makes a server stop answering in time, the way a stale primal does
// while it still holds its socket: while stalled, every request waits until
// the stall ends (or the server closes), then is answered. The zero value is
// not stalled and safe for concurrent use.
type Stall struct {
	mu      sync.Mutex
	on      bool
	release chan struct{} // closed when the stall ends
}

// Set stalls or releases the server and reports whether that changed
// anything.
func (s *Stall) Set(on bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on == on {
		return false
	}
	s.on = on
	if on {
		s.release = make(chan struct{})
	} else {
		close(s.release)
	}
	return true
}

// Stalled reports whether the server is stalled now.
func (s *Stall) Stalled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on
}

// wait returns when the server is not stalled or ctx ends.
func (s *Stall) wait(ctx context.Context) {
	s.mu.Lock()
	if !s.on {
		s.mu.Unlock()
		return
	}
	ch := s.release
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

// Wrap returns cfg with every method held while the server is stalled. The
// server handles requests concurrently, so a held request does not keep the
// connection from reading (as a real stalled primal reads and never answers).
func (s *Stall) Wrap(cfg Config) Config {
	methods := make(map[string]HandlerFunc, len(cfg.Methods))
	for name, h := range cfg.Methods {
		methods[name] = func(ctx context.Context, p json.RawMessage) (any, error) {
			s.wait(ctx)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return h(ctx, p)
		}
	}
	cfg.Methods = methods
	cfg.Concurrent = true
	return cfg
}
