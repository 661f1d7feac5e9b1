package ipctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// ParseErrorPeer is an NDJSON JSON-RPC server written from JSON-RPC 2.0
// and ECOSYSTEM-FACTS.md (not from this project's client) for a line it
// cannot parse: it answers the parse error with a null id, as the
// standard says ({"jsonrpc":"2.0","id":null,"error":{"code":-32700,...}}),
// and then either closes the connection (the stdio bus's "Malformed
// input ... then close") or reads on and answers every later request by
// its id. A line it cannot parse is one that is not JSON (a riboCipher
// prefix it does not know, EC 01 before the JSON), one that is no
// request (no method), or one longer than MaxLine bytes (a server's line
// limit; 64 KiB at most).
type ParseErrorPeer struct {
	// MaxLine is the longest line the peer parses (0: no limit).
	MaxLine int
	// Batch is how many lines the peer reads before it answers any (the
	// parse errors first, in order, then the requests): a test knows its
	// requests were all in flight when the parse error came. 0 or 1: each
	// line is answered as it is read.
	Batch int
	// CloseOnError closes the connection right after a parse error, with
	// the requests read and not yet answered left unanswered (the stdio
	// bus); otherwise the peer reads on.
	CloseOnError bool
	// Mute: after a parse error the peer reads on and runs what it reads
	// but answers nothing more (a peer that hangs, or answers long after
	// its callers gave up).
	Mute bool

	acc  *peer.Acceptor
	path string
	mu   sync.Mutex
	ran  map[string]int
}

// ListenParseErrorPeer serves p on a Unix socket at path.
func ListenParseErrorPeer(path string, p *ParseErrorPeer) (*ParseErrorPeer, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("parse-error peer: %w", err)
	}
	p.path, p.ran = path, map[string]int{}
	p.acc = peer.Serve(ln, p.serve)
	return p, nil
}

// Path is the socket's path.
func (p *ParseErrorPeer) Path() string { return p.path }

// Ran is how many times the peer ran method (a request it parsed).
func (p *ParseErrorPeer) Ran(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ran[method]
}

// Close stops the peer and waits for its connections.
func (p *ParseErrorPeer) Close() error { return p.acc.Close() }

func (p *ParseErrorPeer) serve(ctx context.Context, c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReaderSize(c, 64<<10)
	type req struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	var held []req
	parseErrs, erred := 0, false
	flush := func() bool {
		for ; parseErrs > 0; parseErrs-- {
			erred = true
			if _, err := c.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n")); err != nil {
				return false
			}
			if p.CloseOnError {
				return false
			}
		}
		for _, r := range held {
			p.mu.Lock()
			p.ran[r.Method]++
			p.mu.Unlock()
			if len(r.ID) == 0 || string(r.ID) == "null" || (p.Mute && erred) {
				continue // a notification, or a mute peer
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]string{"ran": r.Method}})
			if _, err := c.Write(append(b, '\n')); err != nil {
				return false
			}
		}
		held = held[:0]
		return true
	}
	lines := 0
	for ctx.Err() == nil {
		line, err := br.ReadSlice('\n')
		long := false
		for err == bufio.ErrBufferFull { // longer than the buffer: read to its end
			long = true
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return
		}
		lines++
		var r req
		if long || (p.MaxLine > 0 && len(line) > p.MaxLine) || json.Unmarshal(line, &r) != nil || r.Method == "" {
			parseErrs++
		} else {
			held = append(held, r)
		}
		if lines >= p.Batch && !flush() {
			return
		}
	}
}
