package events

import (
	"context"
	"sync"
)

// GroupOptions configure a Group.
type GroupOptions struct {
	// Max bounds how many sources run at once (0: no bound).
	Max int
	// Ended, when set, is called from a source's goroutine when the source
	// returned by itself (not stopped, not because the group's context
	// ended); err is why (nil when it simply finished).
	Ended func(key string, err error)
}

// Group runs sources, each under a key, at most Max at once, all emitting
// into one Emit. Sources can be started and stopped as the consumer's needs
// change (the TUI hears the targets it shows, up to a bound) or all started
// at once and left to run (Merge, for tail). A source that cannot go on is
// reported as a note. The group owns every goroutine it starts: they end
// when their source is stopped, returns, or the group's context ends; Close
// waits for them.
type Group struct {
	ctx  context.Context
	emit Emit
	opts GroupOptions

	mu      sync.Mutex
	running map[string]*member
	closed  bool
	wg      sync.WaitGroup
}

type member struct {
	src    Source
	cancel context.CancelFunc
}

// NewGroup returns an empty group whose sources run until ctx ends.
func NewGroup(ctx context.Context, emit Emit, opts GroupOptions) *Group {
	return &Group{ctx: ctx, emit: emit, opts: opts, running: map[string]*member{}}
}

// Start runs src under key. It does nothing and reports false when key
// already runs, the group is full, or it is closed.
func (g *Group) Start(key string, src Source) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.ctx.Err() != nil || g.running[key] != nil || (g.opts.Max > 0 && len(g.running) >= g.opts.Max) {
		return false
	}
	ctx, cancel := context.WithCancel(g.ctx)
	m := &member{src: src, cancel: cancel}
	g.running[key] = m
	g.wg.Add(1) // under the lock, so Close never waits on a group that grows after it
	go func() {
		defer g.wg.Done()
		err := src.Run(ctx, g.emit)
		stopped := ctx.Err() != nil
		cancel()
		g.mu.Lock()
		if g.running[key] == m {
			delete(g.running, key)
		}
		g.mu.Unlock()
		if stopped {
			return
		}
		if err != nil {
			g.emit(Note(src.Name(), "stopped watching: "+err.Error()))
		}
		if g.opts.Ended != nil {
			g.opts.Ended(key, err)
		}
	}()
	return true
}

// Stop stops the source under key, if one runs; it returns at once (the
// source ends in its own goroutine).
func (g *Group) Stop(key string) {
	g.mu.Lock()
	m := g.running[key]
	delete(g.running, key)
	g.mu.Unlock()
	if m != nil {
		m.cancel()
	}
}

// Running reports whether a source runs under key.
func (g *Group) Running(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[key] != nil
}

// Len is how many sources run.
func (g *Group) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.running)
}

// Source returns the source running under key, or nil.
func (g *Group) Source(key string) Source {
	g.mu.Lock()
	defer g.mu.Unlock()
	if m := g.running[key]; m != nil {
		return m.src
	}
	return nil
}

// Wait waits for every source started so far to end (by itself, stopped,
// or with the group's context). Start must not be called while it waits.
func (g *Group) Wait() { g.wg.Wait() }

// Close stops every source and waits for them; later Starts do nothing.
func (g *Group) Close() {
	g.mu.Lock()
	g.closed = true
	ms := g.running
	g.running = map[string]*member{}
	g.mu.Unlock()
	for _, m := range ms {
		m.cancel()
	}
	g.wg.Wait()
}
