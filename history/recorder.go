package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// DefaultQueueSize is how many entries a Recorder holds waiting for its
// writer before Record starts refusing them.
const DefaultQueueSize = 1024

// maxBatch is how many queued entries one transaction commits at most.
const maxBatch = 256

// Errors a Pending can end with besides the store's own.
var (
	// ErrQueueFull: the writer is that far behind; the entry was dropped.
	ErrQueueFull = errors.New("history queue full, call not recorded")
	// ErrRecorderClosed: Record after Close; the entry was dropped.
	ErrRecorderClosed = errors.New("history recorder closed, call not recorded")
	// ErrDisabled: Record on a nil Recorder (history turned off).
	ErrDisabled = errors.New("history is off")
)

// RecorderOptions tune a Recorder.
type RecorderOptions struct {
	// QueueSize bounds the entries waiting for the writer (DefaultQueueSize).
	QueueSize int
	// OnError, when set, is called from the writer goroutine with every
	// write or trim that failed, for the caller to show as a warning. It
	// must not block for long.
	OnError func(error)
}

// Recorder writes entries to a Store off the caller's path: one writer
// goroutine, fed by a bounded queue, commits them in batches and trims the
// store between batches. A failing store never panics and never blocks
// Record: the failure comes back from Pending.Wait and through OnError.
//
// A nil *Recorder is valid: it records nothing (Record's Pending fails with
// ErrDisabled) and Close does nothing.
type Recorder struct {
	store   *Store
	onError func(error)

	mu     sync.Mutex // guards closed and sends on queue
	closed bool
	queue  chan *Pending

	ctx    context.Context // the writer's; cancelled when Close gives up
	cancel context.CancelFunc
	done   chan struct{} // closed when the writer has returned
}

// Pending is one entry on its way to the store.
type Pending struct {
	entry Entry
	done  chan struct{}
	id    int64 // set before done is closed
	err   error // set before done is closed
}

func failed(err error) *Pending {
	p := &Pending{done: make(chan struct{}), err: err}
	close(p.done)
	return p
}

// Wait blocks until the entry is committed (nil), or failed (the error), or
// ctx ends. After Wait returns nil the entry is durable: it survives the
// process being killed right after. When ctx ends first the entry stays
// queued and may still be written.
func (p *Pending) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	default:
	}
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("wait for history write: %w", ctx.Err())
	}
}

// Done is closed when the entry is committed or has failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// ID returns the entry's id once it is committed, else 0.
func (p *Pending) ID() int64 {
	select {
	case <-p.done:
		return p.id
	default:
		return 0
	}
}

// NewRecorder starts a Recorder writing to s. Close it to stop its goroutine;
// closing the Recorder does not close s.
func NewRecorder(s *Store, o RecorderOptions) *Recorder {
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{
		store:   s,
		onError: o.OnError,
		queue:   make(chan *Pending, o.QueueSize),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go r.run()
	return r
}

// Record queues e for the store and returns at once. The Recorder owns e's
// byte slices from now on: the caller must not change them.
func (r *Recorder) Record(e Entry) *Pending {
	if r == nil {
		return failed(ErrDisabled)
	}
	p := &Pending{entry: e, done: make(chan struct{})}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return failed(ErrRecorderClosed)
	}
	select {
	case r.queue <- p:
		return p
	default:
		return failed(ErrQueueFull)
	}
}

// Close stops taking entries, writes those already queued and stops the
// writer. If ctx ends first, the entries not yet written fail and Close
// returns ctx's error once the writer has stopped.
func (r *Recorder) Close(ctx context.Context) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		close(r.queue)
	}
	r.mu.Unlock()
	select {
	case <-r.done:
		r.cancel()
		return nil
	case <-ctx.Done():
		r.cancel() // in-flight statements are interrupted; the rest fail fast
		<-r.done
		return fmt.Errorf("close history recorder: %w", ctx.Err())
	}
}

func (r *Recorder) warn(err error) {
	if r.onError != nil && err != nil {
		r.onError(err)
	}
}

// run is the writer goroutine.
func (r *Recorder) run() {
	defer close(r.done)
	r.trim() // a store may start over its caps (caps lowered since)
	batch := make([]*Pending, 0, maxBatch)
	for {
		p, ok := <-r.queue
		if !ok {
			return
		}
		batch = append(batch[:0], p)
	fill:
		for len(batch) < maxBatch {
			select {
			case q, ok := <-r.queue:
				if !ok {
					break fill
				}
				batch = append(batch, q)
			default:
				break fill
			}
		}
		r.write(batch)
		clear(batch) // let written entries be collected
	}
}

// write commits a batch and finishes its Pendings; then trims if needed.
func (r *Recorder) write(batch []*Pending) {
	entries := make([]Entry, len(batch))
	for i, p := range batch {
		entries[i] = p.entry
	}
	ids, tot, err := r.safeAdd(entries)
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.id = ids[i]
		}
		p.entry = Entry{}
		close(p.done)
	}
	if err != nil {
		r.warn(err)
		return
	}
	if r.store.over(tot) {
		r.trim()
	}
	// Checkpoint now that the callers have been answered, unless more
	// entries wait (then after them, unless the WAL keeps growing).
	if r.store.checkpointDue(1) && len(r.queue) == 0 || r.store.checkpointDue(4) {
		if err := r.store.Checkpoint(r.ctx); err != nil {
			r.warn(err)
		}
	}
}

func (r *Recorder) safeAdd(entries []Entry) (ids []int64, tot Totals, err error) {
	defer func() {
		if v := recover(); v != nil {
			ids, err = nil, fmt.Errorf("add to history: internal error: %v", v)
		}
	}()
	return r.store.add(r.ctx, entries)
}

// trim removes old calls in small steps, going back to writing whenever an
// entry is waiting, so that trimming never holds up a Wait for long.
func (r *Recorder) trim() {
	defer func() {
		if v := recover(); v != nil {
			r.warn(fmt.Errorf("trim history: internal error: %v", v))
		}
	}()
	for {
		_, more, err := r.store.trimStep(r.ctx, r.store.writer())
		if err != nil {
			r.warn(err)
			return
		}
		if !more || len(r.queue) > 0 {
			return // the next batch's totals will bring us back here
		}
	}
}
