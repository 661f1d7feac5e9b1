package ipc_test

import (
	"net"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestConnLinkPlain: a plain connection is never re-established: its
// generation stays 0, and it is down once closed.
func TestConnLinkPlain(t *testing.T) {
	a, peer := net.Pipe()
	c := ipc.NewConn(ipc.NetFramer(a, 1<<20), ipc.Options{})
	if gen, up := c.Link(); gen != 0 || !up {
		t.Fatalf("open: generation %d, up %v", gen, up)
	}
	peer.Close()
	<-c.Done()
	if gen, up := c.Link(); gen != 0 || up {
		t.Fatalf("after the peer closed: generation %d, up %v", gen, up)
	}
	c.Close()
}
