package composition

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func serveTCP(t *testing.T, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	s, err := ipctest.ListenTCP("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFederationTwoNodesOverTCP: this node's registry names another node
// (discovery.peers); that node's registry, reached over TCP, lists a primal
// also reached over TCP. The map draws it in its own group, and edges cross
// the nodes only where the consumer's own node has no provider.
func TestFederationTwoNodesOverTCP(t *testing.T) {
	// Node B: a vault primal and its registry, both on loopback TCP.
	vault := serveTCP(t, level3("vault", map[string][]string{"storage": {"put", "get"}}, []string{"crypto.sign"}, nil).Config())
	sbB := ipctest.NewSongbird()
	sbB.Register(ipctest.Service{PrimalID: "vault", Capabilities: []string{"storage"}, Endpoint: "tcp://" + vault.Endpoint().Address})
	regB := serveTCP(t, sbB.Config())
	_, port, _ := net.SplitHostPort(regB.Endpoint().Address)
	portB, _ := strconv.Atoi(port)

	// Node A (this one): a consumer of storage, a crypto provider, and a
	// registry that names node B.
	dir := tempDir(t)
	serve(t, dir, "app.sock", level3("app", map[string][]string{"app": {"run"}}, []string{"storage.put"}, nil).Config())
	serve(t, dir, "beardog.sock", level3("beardog", map[string][]string{"crypto": {"sign"}}, []string{}, nil).Config())
	sbA := ipctest.NewSongbird()
	sbA.SetPeers(ipctest.SongbirdPeer{NodeID: "node-b", Address: "127.0.0.1", TCPPort: portB})
	serve(t, dir, "songbird.sock", sbA.Config())

	ts := sweep(t, dir)
	gath := Gather(ctxT(t), dialer(t), ts, GatherOptions{Timeout: time.Second, Federation: true})
	if len(gath.Remote) != 1 || gath.Remote[0].Node != "node-b" {
		t.Fatalf("remote = %+v, errs %v", gath.Remote, gath.Errs)
	}
	g := Build(Inputs{Targets: ts, Remote: gath.Remote})
	var vid string
	for _, n := range g.Nodes {
		if n.Name == "vault" {
			if n.Node != "node-b" || n.Health != "live" || n.Group() != "node-b/" {
				t.Fatalf("vault node = %+v", n)
			}
			vid = n.ID
		}
	}
	if vid == "" {
		t.Fatalf("vault not in the map: %+v", g.Nodes)
	}
	app, bd := idOf(t, g, "app"), idOf(t, g, "beardog")
	if e := edgeOf(g, app, vid, "storage.put"); e == nil || e.State != StateOK {
		t.Errorf("app → storage.put → node-b's vault = %+v", e)
	}
	if e := edgeOf(g, vid, bd, "crypto.sign"); e == nil || e.State != StateOK {
		t.Errorf("node-b's vault → crypto.sign → this node's beardog = %+v", e)
	}
}
