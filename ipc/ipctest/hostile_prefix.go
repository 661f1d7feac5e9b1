package ipctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// Crash is how a PrefixPeer connection ends instead of answering.
type Crash int

const (
	// NoCrash answers every request.
	NoCrash Crash = iota
	// CrashAfterRead reads the whole first request line (so it counts as
	// delivered: a real peer may have acted on it), then closes without a word.
	CrashAfterRead
	// CrashMidLine reads a few bytes of the first line, then closes.
	CrashMidLine
)

// PrefixPeer is an NDJSON JSON-RPC peer written from the riboCipher section
// of ECOSYSTEM-FACTS.md, half-compliant or crashing as configured. It
// records every byte each connection sends and every request it read
// whole, so tests can count deliveries.
type PrefixPeer struct {
	// WantPrefix: a connection must start with EC 01; one without gets
	// error -32002 (id null) and is closed before anything else is read.
	WantPrefix bool
	// SkipUnparseable: a line it cannot parse (such as one that starts with
	// an unknown EC 01) is skipped without a word, as many plain NDJSON
	// servers do; otherwise it answers -32700 with id null and reads on.
	SkipUnparseable bool
	// Crash, if set, says how connection n (from 1) ends.
	Crash func(n int) Crash

	acc  *peer.Acceptor
	path string
	rec  recording
	mu   sync.Mutex
	reqs []string // "method id" of each request read whole
}

// ListenPrefixPeer serves p on a Unix socket at path.
func ListenPrefixPeer(path string, p *PrefixPeer) (*PrefixPeer, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	p.path = path
	p.acc = peer.Serve(ln, func(_ context.Context, c net.Conn) {
		n, rec := p.rec.tee(c)
		p.serve(c, n, rec)
	})
	return p, nil
}

// Path is the socket's path.
func (p *PrefixPeer) Path() string { return p.path }

// Close stops the peer, ends every connection and waits for them.
func (p *PrefixPeer) Close() {
	_ = p.acc.Close()
	_ = os.Remove(p.path)
}

// Requests returns "method id" for every request read whole, in order.
func (p *PrefixPeer) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.reqs...)
}

// Received returns a copy of the bytes each connection sent.
func (p *PrefixPeer) Received() [][]byte { return p.rec.received() }

// Connections is how many connections were accepted.
func (p *PrefixPeer) Connections() int { return int(p.acc.Accepted()) }

func (p *PrefixPeer) serve(c net.Conn, n int, rec io.Reader) {
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	crash := NoCrash
	if p.Crash != nil {
		crash = p.Crash(n)
	}
	if crash == CrashMidLine {
		// Read a few bytes one at a time (never the whole line), then go.
		var b [1]byte
		for i := 0; i < 8; i++ {
			if _, err := rec.Read(b[:]); err != nil {
				return
			}
		}
		return
	}
	br := bufio.NewReader(rec)
	if p.WantPrefix {
		b, err := br.Peek(2)
		if err != nil || b[0] != 0xEC || b[1] != 0x01 {
			_, _ = c.Write([]byte(PrefixRequiredLine + "\n"))
			return
		}
		_, _ = br.Discard(2)
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return
		}
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &m) != nil {
			if !p.SkipUnparseable {
				_, _ = c.Write([]byte(ParseErrorLine + "\n"))
			}
			if err != nil {
				return
			}
			continue
		}
		if err != nil {
			return // a cut line is not a request
		}
		p.mu.Lock()
		p.reqs = append(p.reqs, fmt.Sprintf("%s %s", m.Method, m.ID))
		count := len(p.reqs)
		p.mu.Unlock()
		if crash == CrashAfterRead {
			return
		}
		if m.ID == nil {
			continue
		}
		_, _ = c.Write([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","result":{"status":"alive","n":%d},"id":%s}`+"\n", count, m.ID)))
	}
}
