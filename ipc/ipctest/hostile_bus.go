package ipctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// BusAnswer is one answer a HostileBus sends to each request. Its fields
// say how the answer differs from an honest one: zero values copy the
// request (its id, sessionId and pool), as a stdio bus passing a worker's
// answer through would.
type BusAnswer struct {
	// ID is the raw JSON id to answer with ("" copies the request's).
	ID string
	// SessionID is the sessionId to put in the answer ("" copies the
	// request's, "-" leaves it out).
	SessionID string
	// Pool is the top-level pool to put in the answer ("" copies the
	// request's, "-" leaves it out).
	Pool string
	// Result is the raw JSON result ("" means {"from":"bus"}).
	Result string
}

// HostileBusConfig describes a stdio bus (kernel v0.1.0, client side: NDJSON
// with the routing fields id, sessionId and pool) that answers each request
// with Answers, in order, all in one write: answers of another session or
// pool, for ids never sent, or twice.
type HostileBusConfig struct {
	Answers []BusAnswer
	// Raw, when set, is sent instead of Answers: lines written as they are
	// (each must end with a newline), "$ID" replaced by the request's id.
	Raw string
}

// HostileBus is a running hostile stdio bus on a Unix socket.
type HostileBus struct {
	cfg HostileBusConfig
	acc *peer.Acceptor
	// Path is the socket path.
	Path string

	requests atomic.Int64
}

// ListenHostileBus starts a HostileBus on a new Unix socket at path.
func ListenHostileBus(path string, cfg HostileBusConfig) (*HostileBus, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("hostile bus: %w", err)
	}
	b := &HostileBus{cfg: cfg, Path: path}
	b.acc = peer.Serve(ln, b.serve)
	return b, nil
}

// Requests is how many requests the bus received.
func (b *HostileBus) Requests() int64 { return b.requests.Load() }

// Close stops the bus and waits for its goroutines.
func (b *HostileBus) Close() error { return b.acc.Close() }

func (b *HostileBus) serve(_ context.Context, c net.Conn) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for sc.Scan() {
		var req struct {
			ID        json.RawMessage `json:"id"`
			SessionID string          `json:"sessionId"`
			Pool      string          `json:"pool"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		b.requests.Add(1)
		var out []byte
		if b.cfg.Raw != "" {
			out = bytes.ReplaceAll([]byte(b.cfg.Raw), []byte("$ID"), req.ID)
		}
		for _, a := range b.cfg.Answers {
			id := string(req.ID)
			if a.ID != "" {
				id = a.ID
			}
			line := map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id)}
			pick := func(key, v, own string) {
				switch v {
				case "-":
				case "":
					if own != "" {
						line[key] = own
					}
				default:
					line[key] = v
				}
			}
			pick("sessionId", a.SessionID, req.SessionID)
			pick("pool", a.Pool, req.Pool)
			res := a.Result
			if res == "" {
				res = `{"from":"bus"}`
			}
			line["result"] = json.RawMessage(res)
			enc, err := json.Marshal(line)
			if err != nil {
				return
			}
			out = append(append(out, enc...), '\n')
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}
