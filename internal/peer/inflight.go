package peer

import (
	"context"
	"time"

	"golang.org/x/sync/semaphore"
)

// Bounds are a server's bounds on the requests it handles at once over
// every connection together: how many (MaxInflightTotal) and how many bytes
// they came in (MaxInflightBytes). A count alone let 256 requests of 4 MiB
// each (1 GiB) be held at once. The zero Bounds bound nothing; the mock's
// stdio worker uses them too.
type Bounds struct {
	all      chan struct{}       // a place per request; nil: no bound
	bytes    *semaphore.Weighted // a request's size; nil: no bound
	maxBytes int64
}

// NewBounds bounds total requests (0: no bound) of maxBytes bytes in all
// (0: no bound).
func NewBounds(total int, maxBytes int64) Bounds {
	var b Bounds
	if total > 0 {
		b.all = make(chan struct{}, total)
	}
	if maxBytes > 0 {
		b.bytes, b.maxBytes = semaphore.NewWeighted(maxBytes), maxBytes
	}
	return b
}

// Admit takes what one request of size bytes needs before it is handled: a
// place in own (its connection's slots; nil: no bound), one in the server's
// count and its size in the server's bytes (a request larger than the byte
// bound takes all of it), waiting while any is full, the connection unread
// meanwhile. It returns how to give them back; ok=false when the connection
// ended first (ctx ended, or gone, looked at every hangupCheck with how long
// the wait has lasted, says the client left; gone may be nil), and then
// nothing is held and the request is not handled.
func (b Bounds) Admit(ctx context.Context, own chan struct{}, size int, gone func(waited time.Duration) bool) (release func(), ok bool) {
	if own == nil && b.all == nil && b.bytes == nil {
		return releaseNothing, true // no bound: nothing to take (nor to allocate)
	}
	n := int64(size)
	if b.bytes != nil && n > b.maxBytes {
		n = b.maxBytes
	}
	if n < 1 {
		n = 1
	}
	var (
		wctx context.Context
		stop func()
	)
	waitCtx := func() context.Context {
		if wctx == nil {
			wctx, stop = watchGone(ctx, gone)
		}
		return wctx
	}
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	take := func(ch chan struct{}) bool {
		if ch == nil {
			return true
		}
		select {
		case ch <- struct{}{}:
			return true
		default:
		}
		select {
		case ch <- struct{}{}:
			return true
		case <-waitCtx().Done():
			return false
		}
	}
	give := func(ch chan struct{}) {
		if ch != nil {
			<-ch
		}
	}
	if !take(own) {
		return nil, false
	}
	if !take(b.all) {
		give(own)
		return nil, false
	}
	if b.bytes != nil && !b.bytes.TryAcquire(n) {
		if b.bytes.Acquire(waitCtx(), n) != nil {
			give(b.all)
			give(own)
			return nil, false
		}
	}
	return func() {
		if b.bytes != nil {
			b.bytes.Release(n)
		}
		give(b.all)
		give(own)
	}, true
}

func releaseNothing() {}

// watchGone is ctx, also ended once gone (looked at every hangupCheck, with
// how long the watching has lasted) reports the client left; stop ends the
// watching.
func watchGone(ctx context.Context, gone func(waited time.Duration) bool) (context.Context, func()) {
	wctx, cancel := context.WithCancel(ctx)
	if gone == nil {
		return wctx, cancel
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTicker(hangupCheck)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
				if gone(time.Since(start)) {
					cancel()
					return
				}
			}
		}
	}()
	return wctx, func() {
		cancel()
		<-done
	}
}
