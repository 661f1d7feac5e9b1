package ipctest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// WrongIDConfig describes an NDJSON peer that answers with ids other than
// the one it was sent: the string "1" for the number 1, "01", 1.0, null...
type WrongIDConfig struct {
	// AnswerIDs are the raw JSON ids each request is answered with, one
	// answer each, in order ("" leaves the id out).
	AnswerIDs []string
	// ThenRealID sends, after those, the answer with the request's own id.
	ThenRealID bool
	// Error answers with a parse error (-32700) instead of a result.
	Error bool
}

// WrongIDPeer is a running NDJSON peer answering with wrong ids, on a Unix
// socket. Requests are read as JSON, whatever their id.
type WrongIDPeer struct {
	cfg WrongIDConfig
	acc *peer.Acceptor
	// Path is the socket path.
	Path string

	requests atomic.Int64
}

// ListenWrongIDs starts a WrongIDPeer on a new Unix socket at path.
func ListenWrongIDs(path string, cfg WrongIDConfig) (*WrongIDPeer, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("wrong-id peer: %w", err)
	}
	p := &WrongIDPeer{cfg: cfg, Path: path}
	p.acc = peer.Serve(ln, p.serve)
	return p, nil
}

// Requests is how many requests the peer received.
func (p *WrongIDPeer) Requests() int64 { return p.requests.Load() }

// Close stops the peer and waits for its goroutines.
func (p *WrongIDPeer) Close() error { return p.acc.Close() }

func (p *WrongIDPeer) serve(_ context.Context, c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		p.requests.Add(1)
		ids := append([]string(nil), p.cfg.AnswerIDs...)
		if p.cfg.ThenRealID {
			ids = append(ids, string(req.ID))
		}
		for _, id := range ids {
			line := `{"jsonrpc":"2.0",`
			if id != "" {
				line += `"id":` + id + `,`
			}
			if p.cfg.Error {
				line += `"error":{"code":-32700,"message":"Parse error"}}` + "\n"
			} else {
				line += `"result":{"ok":true}}` + "\n"
			}
			if _, err := c.Write([]byte(line)); err != nil {
				return
			}
		}
	}
}
