package holon_test

import (
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestConnLinkFollowsSession: a Conn over a Holon-RPC session says when
// the connection under it was replaced, so a request the server sent on
// the old one is not answered on the new one.
func TestConnLinkFollowsSession(t *testing.T) {
	srv := startHolon(t, holon.Options{}, ipctest.HolonConfig{})
	s := fastSession(t, srv.URL, &notes{}, -1)
	c := ipc.NewConn(s, ipc.Options{Wire: ipc.WireHolon})
	defer c.Close()
	gen, up := c.Link()
	if gen != 0 || !up {
		t.Fatalf("first connection: generation %d, up %v", gen, up)
	}
	// The server registers a connection after its upgrade: drop it only
	// once it holds it (a Drop before that drops nothing).
	eventually(t, "the server's connection", func() bool { return len(srv.Conns()) > 0 })
	srv.Drop()
	eventually(t, "the reconnect", func() bool { g, up := c.Link(); return g >= 1 && up })
	c.Close()
	if _, up := c.Link(); up {
		t.Error("a closed Conn says its link is up")
	}
}
