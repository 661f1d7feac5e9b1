package discovery

// How probes share this process: places to dial, be busy and hold a
// connection, connect timeouts, the moving hold that adapts to a slow
// machine, and the cut signal of SweepUntilJudged.

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// cutSignal tells the probes of a sweep that every other target has been
// judged: a liveness answer that has been awaited at least after is not
// waited for any longer.
type cutSignal struct {
	ch    chan struct{}
	after atomic.Int64 // time.Duration, set before ch is closed
	once  sync.Once
}

func newCutSignal() *cutSignal { return &cutSignal{ch: make(chan struct{})} }

// fire closes the signal (once), asking liveness waits of at least after
// to end.
func (c *cutSignal) fire(after time.Duration) {
	c.once.Do(func() {
		c.after.Store(int64(after))
		close(c.ch)
	})
}

// errCutOff ends a liveness wait cut off by SweepUntilJudged.
var errCutOff = errors.New("cut off: every other target was judged")

// watch cancels a liveness call started at start once c fires and the call
// has waited c.after; it returns when ctx ends.
func (c *cutSignal) watch(ctx context.Context, cancel context.CancelCauseFunc, start time.Time) {
	select {
	case <-c.ch:
	case <-ctx.Done():
		return
	}
	if left := time.Duration(c.after.Load()) - time.Since(start); left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	cancel(errCutOff)
}

// localConnectFloor is the least time given to connect() on a Unix socket.
// The kernel never makes such a connect wait (it succeeds, or fails at
// once: refused, no such file, backlog full), so a timeout there only
// measures this process's own scheduling; on a busy machine a 50 ms timer
// would pass live and dead sockets off as stale.
const localConnectFloor = 500 * time.Millisecond

func connectTimeoutFor(ep ipc.Endpoint, opts ProbeOptions) time.Duration {
	opts = opts.withDefaults()
	if ep.Transport == ipc.Unix || ep.Transport == ipc.Abstract {
		return max(opts.ConnectTimeout, localConnectFloor)
	}
	if ep.Transport == ipc.TCP {
		host, _, err := net.SplitHostPort(ep.Address)
		if err == nil {
			ip := net.ParseIP(host)
			if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
				return opts.RemoteConnectTimeout
			}
		}
	}
	return opts.ConnectTimeout
}

// acquire takes a place in ch, unless ctx ends first (or has ended: a
// free place does not win over a context already done).
func acquire(ctx context.Context, ch chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case ch <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// minBusyHold is the least time a probe stays busy while it waits for its
// first answer.
const minBusyHold = 20 * time.Millisecond

// busyHold is how long a probe keeps its busy place while it waits:
// twice the recent time to a first answer, from minBusyHold to a quarter
// of the stale timeout. When this process is slow to read answers (a
// loaded machine), answers take longer, probes stay busy longer and fewer
// start at once, so that no answering target waits for its turn to be
// read past its own deadline.
func (p *Prober) busyHold() time.Duration {
	most := p.opts.StaleTimeout / 4
	avg := p.answerNS.Load()
	if avg == 0 {
		return most // nothing measured yet: be slow to let more in
	}
	return min(max(2*time.Duration(avg), minBusyHold), most)
}

// noteSlow records that this process has just shown it is slow.
func (p *Prober) noteSlow() { p.slowAt.Store(time.Now().UnixNano()) }

// doubtful reports whether a probe's timeout (a stale verdict, or a call
// that timed out) may be this process's own fault: it showed it was slow
// (an answer or a connect that took long, a deadline noticed late) after
// the probe started. Asked once the other probes are done, it sees the
// slow answers that a jam noted only after the verdict.
func (p *Prober) doubtful(r Probe) bool {
	return p.slowAt.Load() >= r.At.UnixNano()
}

// noteAnswer adds one first-answer time to the moving average: a slower
// answer weighs 1/2, a faster one 1/8, so that the hold grows at once when
// this process falls behind and shrinks only gradually.
func (p *Prober) noteAnswer(d time.Duration) {
	if d > p.opts.StaleTimeout/4 {
		p.noteSlow()
	}
	for {
		old := p.answerNS.Load()
		next := int64(d)
		switch {
		case old == 0:
		case next > old:
			next = old + (next-old)/2
		default:
			next = old + (next-old)/8
		}
		if p.answerNS.CompareAndSwap(old, next) {
			return
		}
	}
}
