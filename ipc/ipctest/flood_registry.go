package ipctest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// FloodRegistry is a hostile Songbird registry (ECOSYSTEM-FACTS: ipc.list
// answers {services:[{primal_id, capabilities, virtual_endpoint,
// native_endpoint}]}, discovery.peers {peers:[{node_id, address,
// tcp_port}]}) that tries to steer and swamp discovery: ipc.list answers
// Entries registrations (about 120 bytes each: 100,000 make a 12 MB
// answer), written as they are made, never held whole; discovery.peers
// answers Peers nodes on consecutive loopback ports from PeerPort.
type FloodRegistry struct {
	// Entries is how many registrations ipc.list answers; Endpoint(i)
	// says where the i-th lives (default: a Unix socket under /nonexistent).
	Entries  int
	Endpoint func(i int) string
	// Name(i) names the i-th registration (default "flood%06d").
	Name func(i int) string
	// Peers and PeerPort make the discovery.peers answer.
	Peers    int
	PeerPort int

	path  string
	acc   *peer.Acceptor
	lists atomic.Int64
	peers atomic.Int64
}

// ListenFloodRegistry starts r at path (songbird.sock, for discovery to
// find it).
func ListenFloodRegistry(path string, r *FloodRegistry) (*FloodRegistry, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	r.path = path
	r.acc = peer.Serve(ln, r.serve)
	return r, nil
}

// Lists and PeerCalls count the ipc.list and discovery.peers requests.
func (r *FloodRegistry) Lists() int64     { return r.lists.Load() }
func (r *FloodRegistry) PeerCalls() int64 { return r.peers.Load() }

// Close stops it.
func (r *FloodRegistry) Close() error {
	err := r.acc.Close()
	_ = os.Remove(r.path)
	return err
}

func (r *FloodRegistry) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	w := bufio.NewWriterSize(c, 64<<10)
	for ctx.Err() == nil {
		line, err := peer.ReadLine(br, 1<<20)
		if err != nil {
			return
		}
		line = bytes.TrimPrefix(line, []byte{0xEC, 0x01})
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
			continue
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":`, req.ID)
		switch req.Method {
		case "health.liveness":
			w.WriteString(`{"status":"alive"}`)
		case "identity.get":
			w.WriteString(`{"primal":"songbird","version":"9.9.9"}`)
		case "ipc.list":
			r.lists.Add(1)
			r.writeList(w)
		case "discovery.peers":
			r.peers.Add(1)
			w.WriteString(`{"peers":[`)
			for i := 0; i < r.Peers; i++ {
				if i > 0 {
					w.WriteByte(',')
				}
				fmt.Fprintf(w, `{"node_id":"node%05d","address":"127.0.0.1","tcp_port":%d}`, i, r.PeerPort+i)
			}
			w.WriteString(`]}`)
		default:
			w.Reset(c) // drop the half-written answer
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`+"\n", req.ID)
			if w.Flush() != nil {
				return
			}
			continue
		}
		w.WriteString("}\n")
		if w.Flush() != nil {
			return
		}
	}
}

func (r *FloodRegistry) writeList(w *bufio.Writer) {
	w.WriteString(`{"services":[`)
	for i := 0; i < r.Entries; i++ {
		if i > 0 {
			w.WriteByte(',')
		}
		name := fmt.Sprintf("flood%06d", i)
		if r.Name != nil {
			name = r.Name(i)
		}
		ep := "unix:///nonexistent/" + name + ".sock"
		if r.Endpoint != nil {
			ep = r.Endpoint(i)
		}
		fmt.Fprintf(w, `{"primal_id":%s,"capabilities":["flood.cap%d"],"virtual_endpoint":"sb://%d","native_endpoint":%s}`,
			strconv.Quote(name), i%50, i, strconv.Quote(ep))
	}
	w.WriteString(`]}`)
}
