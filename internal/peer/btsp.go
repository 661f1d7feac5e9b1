package peer

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// BTSPRequiredLine is what a family-scoped primal answers to cleartext.
const BTSPRequiredLine = `{"jsonrpc":"2.0","error":{"code":-32600,"message":"BTSP handshake required","data":{"reason":"This socket is family-scoped and requires a BTSP handshake before JSON-RPC traffic.","btsp_version":"2.0"}},"id":null}`

// BTSPGate returns an Accept hook for a family-scoped primal: a client that
// starts a BTSP handshake (either framing, with or without the riboCipher
// prefix) is served through the resulting session; a cleartext client gets
// the "BTSP handshake required" error and is closed, unless cleartext is true
// (some BearDog versions let plain JSON-RPC through for local composition).
// cfg.Seed must be set; cfg.Reader is filled in.
func BTSPGate(cfg btsp.ServerConfig, cleartext bool) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		first, err := peekStart(r)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil && len(first) == 0 {
			return nil, false
		}
		if btsp.IsHandshakeStart(first) {
			cc := cfg // per connection: connections are served concurrently
			cc.Reader = r
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := btsp.Server(ctx, c, cc)
			if err != nil {
				return nil, false
			}
			return s, true
		}
		if cleartext {
			return nil, true
		}
		_, _ = c.Write([]byte(BTSPRequiredLine + "\n"))
		return nil, false
	}
}

// peekStart returns the first line the client sent, or at least 5 bytes.
func peekStart(r *bufio.Reader) ([]byte, error) {
	for n := 1; ; n++ {
		b, err := r.Peek(n)
		if err != nil {
			return b, err
		}
		if n >= 5 && (bytes.IndexByte(b, '\n') >= 0 || n >= r.Size() || n >= 512) {
			return b, nil
		}
		if r.Buffered() > n {
			continue
		}
		if n >= 5 {
			return b, nil
		}
	}
}
