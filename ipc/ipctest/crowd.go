package ipctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// Crowd is a socket directory crowded with small primals, some of them
// hung, written from the wire facts rather than from primalscope's client:
//
//   - a live one speaks plain NDJSON JSON-RPC 2.0 (an optional riboCipher
//     EC 01 prefix is accepted, an EC 00 probe is answered and closed, any
//     other EC byte is closed without a word) and answers what a level-1
//     primal answers: health.liveness {"status":"alive"}, health.check,
//     health.readiness, identity.get {primal, version} and
//     capabilities.list {primal, version, methods}; other methods get
//     -32601, a line that is not JSON gets -32700 with id null;
//   - a silent one accepts every connection and reads what is sent, but
//     never answers (a hung primal); it lets go of a connection when the
//     client does.
//
// Each listener has one goroutine; each connection one more, for as long
// as the client keeps it. Names are live<NNNN>.sock and mute<NNNN>.sock.
type Crowd struct {
	// Dir is the directory holding the sockets.
	Dir string
	// Live and Silent are the socket paths of each kind.
	Live, Silent []string

	socks  []*peer.Acceptor
	byPath map[string]*peer.Acceptor
}

// crowdMaxLine bounds one request line of a crowd primal.
const crowdMaxLine = 1 << 20

// StartCrowd makes live answering and silent hung primals in dir (which
// must exist). Close stops them all.
func StartCrowd(dir string, live, silent int) (*Crowd, error) {
	c := &Crowd{Dir: dir, byPath: map[string]*peer.Acceptor{}}
	add := func(name string, mute bool) error {
		path := filepath.Join(dir, name+".sock")
		_ = os.Remove(path)
		ln, err := net.Listen("unix", path)
		if err != nil {
			return fmt.Errorf("crowd: listen %s: %w", path, err)
		}
		serve := func(_ context.Context, conn net.Conn) { serveCrowdPrimal(conn, name) }
		if mute {
			serve = func(_ context.Context, conn net.Conn) { _, _ = io.Copy(io.Discard, conn) }
		}
		a := peer.Serve(ln, serve)
		c.socks = append(c.socks, a)
		c.byPath[path] = a
		if mute {
			c.Silent = append(c.Silent, path)
		} else {
			c.Live = append(c.Live, path)
		}
		return nil
	}
	for i := 0; i < live; i++ {
		if err := add(fmt.Sprintf("live%04d", i), false); err != nil {
			c.Close()
			return nil, err
		}
	}
	for i := 0; i < silent; i++ {
		if err := add(fmt.Sprintf("mute%04d", i), true); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Accepted reports how many connections the socket at path has accepted
// (-1 when path is not one of the crowd's).
func (c *Crowd) Accepted(path string) int {
	a, ok := c.byPath[path]
	if !ok {
		return -1
	}
	return int(a.Accepted())
}

// Close stops every listener, closes every connection and waits for every
// goroutine of the crowd to end. The socket files are removed.
func (c *Crowd) Close() error {
	for _, a := range c.socks {
		_ = a.Close()
	}
	return nil
}

// serveCrowdPrimal answers one connection of a live crowd primal until the
// client closes it or sends something it drops the connection for.
func serveCrowdPrimal(conn net.Conn, name string) {
	r := bufio.NewReaderSize(conn, 4096)
	w := bufio.NewWriter(conn)
	if b, err := r.Peek(1); err != nil {
		return
	} else if b[0] == 0xEC {
		p, err := r.Peek(2)
		if err != nil {
			return
		}
		switch p[1] {
		case 0x01:
			_, _ = r.Discard(2)
		case 0x00:
			_, _ = fmt.Fprintf(conn, `{"primal":%q,"signal":"riboCipher-v1","status":"ok"}`+"\n", name)
			return
		default:
			return // a handshake or a tier it does not speak
		}
	}
	for {
		line, err := peer.ReadLine(r, crowdMaxLine)
		if err != nil {
			return
		}
		if len(line) == 0 {
			continue
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil || req.Method == "" {
			_, _ = w.WriteString(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n")
			if w.Flush() != nil {
				return
			}
			continue
		}
		if len(req.ID) == 0 {
			continue // a notification
		}
		var result any
		switch req.Method {
		case "health.liveness":
			result = map[string]any{"status": "alive"}
		case "health.check":
			result = map[string]any{"status": "healthy"}
		case "health.readiness":
			result = map[string]any{"status": "ready"}
		case "identity.get":
			result = map[string]any{"primal": name, "version": "1.0.0"}
		case "capabilities.list":
			result = map[string]any{"primal": name, "version": "1.0.0", "methods": []string{
				"capabilities.list", "identity.get", "health.liveness", "health.check", "health.readiness"}}
		}
		var out []byte
		if result == nil {
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": "Method not found"}})
		} else {
			out, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
		}
		_, _ = w.Write(append(out, '\n'))
		if w.Flush() != nil {
			return
		}
	}
}
