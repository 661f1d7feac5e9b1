package demo

import (
	"fmt"
	"net"
	"strconv"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

// RemoteNodeID is the id of the demo's second node.
const RemoteNodeID = "demo-node-2"

// federation serves, with Options.Federation, a second node, reached over
// TCP only: its own
// Songbird-like registry on a loopback port, which the demo's registry
// names in discovery.peers (and which names this node back, through the
// demo registry's own TCP listener), listing skunkbat, a TCP primal that
// consumes crypto.sign_ed25519 from this node's beardog: an edge between
// nodes.
func (e *Ecosystem) federation() error {
	if !e.opts.Federation {
		return nil
	}
	local, err := e.serveTCP(e.songbirdPrimal().Config())
	if err != nil {
		return err
	}
	sb := &peer.Primal{
		Name: "skunkbat", Version: "0.2.0", Domain: "defense", License: "AGPL-3.0-or-later", Level3: true,
		Groups: []peer.Group{{Type: "defense", Description: "Threat scans of a node's primals",
			Methods: []string{"scan", "report"}}},
		Consumed: []string{"crypto.sign_ed25519"},
		OpDeps:   map[string][]string{"defense.report": {"defense.scan"}},
	}
	ps, err := e.serveTCP(sb.Config())
	if err != nil {
		return err
	}
	e.Remote = peer.NewRegistry()
	e.Remote.Register(Registration{PrimalID: "skunkbat", Capabilities: []string{"defense"}, Endpoint: "tcp://" + ps.Addr})
	remote, err := e.serveTCP(e.registryPrimal(e.Remote, e.Family).Config())
	if err != nil {
		return err
	}
	e.Registry.SetPeers(registryPeer(RemoteNodeID, remote.Addr))
	e.Remote.SetPeers(registryPeer(nodeID, local.Addr))
	e.AddEntry(Entry{Name: "songbird@" + RemoteNodeID, Path: "tcp://" + remote.Addr,
		What: fmt.Sprintf("registry of a second node (discovery.peers), listing skunkbat at tcp://%s, which consumes crypto.sign_ed25519 from this node", ps.Addr)})
	return nil
}

func registryPeer(id, addr string) peer.RegistryPeer {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return peer.RegistryPeer{NodeID: id, Address: host, TCPPort: p}
}
