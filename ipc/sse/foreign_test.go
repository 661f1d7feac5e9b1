package sse_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// foreignSocket starts a socket served by another local user (nobody) in a
// shared sticky directory, or skips when the tests cannot be root.
func foreignSocket(t *testing.T) *ipctest.ForeignPeer {
	t.Helper()
	p, _ := ipctest.ServeForeign(t, "biomeos-api.sock")
	return p
}

// An event stream served by another local user is refused before a byte
// (the riboCipher prefix, the GET) is sent, even when the policy asks only
// to observe; a trusted uid is spoken to.
func TestOpenUnixRefusesForeignSocket(t *testing.T) {
	p := foreignSocket(t)
	for _, pol := range []ipc.PeerPolicy{{}, {Observe: true}} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		st, err := sse.OpenUnix(ctx, p.Path, sse.Options{ConnectTimeout: time.Second, Peer: pol})
		cancel()
		if err == nil {
			st.Close()
			t.Fatal("an event stream served by nobody was opened")
		}
		var fe *ipc.ForeignPeerError
		if !errors.As(err, &fe) || fe.Peer.UID != ipctest.NobodyUID {
			t.Fatalf("want *ipc.ForeignPeerError for uid %d, got %T %v", ipctest.NobodyUID, err, err)
		}
		if !ipc.SecurityFailure(err) {
			t.Fatalf("a foreign event stream is not a security failure: %v", err)
		}
	}
	for _, b := range p.Received() {
		if len(b) > 0 {
			t.Fatalf("the foreign server received %q", b)
		}
	}
	// Trusted by uid: the request goes out (the fake answers no HTTP).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, err := sse.OpenUnix(ctx, p.Path, sse.Options{ConnectTimeout: 300 * time.Millisecond, Peer: ipc.PeerPolicy{TrustUIDs: []uint32{ipctest.NobodyUID}}})
	if err == nil {
		st.Close()
	}
	var fe *ipc.ForeignPeerError
	if errors.As(err, &fe) {
		t.Fatalf("a trusted uid was refused: %v", err)
	}
}
