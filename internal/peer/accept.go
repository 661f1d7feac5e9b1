package peer

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Acceptor serves the connections of one listener, each on a goroutine of
// its own, until Close ends them all. Every simulated peer and test fake
// that owns a listener runs on one.
type Acceptor struct {
	ln    net.Listener
	serve func(context.Context, net.Conn)

	ctx      context.Context // ends when Close begins
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	accepted atomic.Int64
}

// Serve accepts connections on ln until Close: serve runs once per
// connection on a goroutine of its own, with a context that ends when Close
// begins, and the connection is closed when it returns. An accept that fails
// for another reason than the listener closing (EMFILE, say) is retried
// after a short pause, as a real server keeps accepting.
func Serve(ln net.Listener, serve func(ctx context.Context, c net.Conn)) *Acceptor {
	a := &Acceptor{ln: ln, serve: serve, conns: map[net.Conn]struct{}{}}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.wg.Add(1)
	go a.loop()
	return a
}

// Addr is the listener's address.
func (a *Acceptor) Addr() net.Addr { return a.ln.Addr() }

// Accepted reports how many connections were accepted.
func (a *Acceptor) Accepted() int64 { return a.accepted.Load() }

// Close stops accepting, closes every open connection and waits until every
// serve has returned. It returns the listener's close error; a second Close
// returns nil at once.
func (a *Acceptor) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.cancel()
	for c := range a.conns {
		_ = c.Close()
	}
	a.mu.Unlock()
	err := a.ln.Close()
	a.wg.Wait()
	return err
}

func (a *Acceptor) loop() {
	defer a.wg.Done()
	for {
		c, err := a.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-a.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		a.accepted.Add(1)
		a.mu.Lock()
		if a.closed {
			a.mu.Unlock()
			_ = c.Close()
			return
		}
		a.conns[c] = struct{}{}
		a.wg.Add(1)
		a.mu.Unlock()
		go func() {
			defer a.wg.Done()
			defer func() {
				a.mu.Lock()
				delete(a.conns, c)
				a.mu.Unlock()
				_ = c.Close()
			}()
			a.serve(a.ctx, c)
		}()
	}
}
