package discovery

// One call during a probe and how its outcome is read: dial errors,
// garbage answers, timeouts, the wire an answer used.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc"
)

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// classifyDialErr tells dead (nothing there) from stale (a listener that
// does not accept in time).
func classifyDialErr(err error) State {
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOTSOCK),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return StateDead
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return StateError
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.EAGAIN) {
		return StateStale
	}
	return StateDead
}

// callWatching sends method and waits for its answer, giving up early when
// the peer sends something that is not JSON-RPC (garbage is described in
// the third result) or closes the connection. err is the call's error.
func callWatching(ctx context.Context, c *ipc.Conn, method, pool string) (resp *ipc.Response, cr CallResult, garbage string, err error) {
	type out struct {
		resp *ipc.Response
		err  error
	}
	ch := make(chan out, 1)
	start := time.Now()
	go func() {
		r, err := c.Send(ctx, ipc.Request{Method: method, Params: json.RawMessage("{}"), Pool: pool})
		ch <- out{r, err}
	}()
	finish := func(o out) (*ipc.Response, CallResult, string, error) {
		cr := CallResult{Latency: time.Since(start)}
		if o.resp != nil && o.resp.Error != nil {
			cr.Code, cr.Message = o.resp.Error.Code, human.Clip(o.resp.Error.Message, 256)
			return o.resp, cr, "", o.err
		}
		if o.err != nil {
			cr.Err = describeCallErr(o.err)
			return o.resp, cr, "", o.err
		}
		cr.OK = true
		return o.resp, cr, "", nil
	}
	incoming := c.Incoming()
	for {
		select {
		case o := <-ch:
			return finish(o)
		case m, ok := <-incoming:
			if !ok {
				incoming = nil
				continue
			}
			if m.Kind == ipc.KindInvalid {
				// The answer is not JSON-RPC: do not wait for the deadline.
				// The call's goroutine ends when the Conn is closed.
				return nil, CallResult{Err: "garbage answer", Latency: time.Since(start)},
					"answered with something that is not JSON-RPC: " + human.Clip(string(m.Raw), 60), errGarbage
			}
		}
	}
}

var errGarbage = errors.New("garbage answer")

func describeCallErr(err error) string {
	var te *ipc.TimeoutError
	if errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded) {
		return "timeout: " + err.Error()
	}
	var ce *ipc.ClosedError
	if errors.As(err, &ce) {
		return "closed: " + err.Error()
	}
	return err.Error()
}

// wireOf tells a JSON-RPC answer from a lean one (no "jsonrpc" member).
func wireOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if bytes.Contains(raw, []byte(`"jsonrpc"`)) {
		return "jsonrpc"
	}
	return "lean"
}

// topKeys returns the top-level keys of a JSON object (nil otherwise).
func topKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		if len(out) < 256 {
			out = append(out, human.Clip(k, 64))
		}
	}
	sort.Strings(out)
	return out
}
