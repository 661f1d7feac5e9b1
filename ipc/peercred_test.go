package ipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// foreignPeer starts a primal served by another local user (nobody) in a
// shared sticky directory, or skips when the tests cannot be root.
func foreignPeer(t *testing.T) *ipctest.ForeignPeer {
	t.Helper()
	p, _ := ipctest.ServeForeign(t, "beardog.sock")
	return p
}

// secretParams are what a call to an impostor must never carry off.
var secretParams = json.RawMessage(`{"password":"hunter2","api_key":"sk-live-123"}`)

func sentAnything(p *ipctest.ForeignPeer) bool {
	for _, b := range p.Received() {
		if len(b) > 0 {
			return true
		}
	}
	return false
}

// A socket another user serves is refused before a byte is sent, on the
// plain wire and on the secure path (prefix auto, endpoint memory) alike.
func TestForeignPeerRefusedBeforeSending(t *testing.T) {
	p := foreignPeer(t)
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: p.Path}
	for _, tc := range []struct {
		name string
		sec  ipc.Security
	}{
		{"plain", ipc.Security{}},
		{"prefix auto", ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			c, err := ipc.Dial(ctx, ep, ipc.Options{Security: tc.sec})
			if err == nil {
				_, _ = c.Send(ctx, ipc.Request{Method: "secrets.store", Params: secretParams})
				c.Close()
				t.Fatal("a socket served by nobody was called")
			}
			var fe *ipc.ForeignPeerError
			if !errors.As(err, &fe) {
				t.Fatalf("want *ipc.ForeignPeerError, got %T %v", err, err)
			}
			if fe.Peer.UID != ipctest.NobodyUID || !fe.Peer.Foreign {
				t.Fatalf("peer = %+v", fe.Peer)
			}
			for _, want := range []string{"nobody", "--trust-uid"} {
				if !bytes.Contains([]byte(err.Error()), []byte(want)) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
	if sentAnything(p) {
		t.Fatalf("the foreign peer received %q", p.Received())
	}
}

// A probe (Observe) reaches the foreign socket and learns who serves it; a
// trusted uid is called as the user's own.
func TestForeignPeerObservedOrTrusted(t *testing.T) {
	p := foreignPeer(t)
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: p.Path}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()

	var mu sync.Mutex
	var seen []ipc.PeerIdentity
	c, err := ipc.Dial(ctx, ep, ipc.Options{Peer: ipc.PeerPolicy{Observe: true, Seen: func(id ipc.PeerIdentity) {
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
	}}})
	if err != nil {
		t.Fatalf("observe: %v", err)
	}
	if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
		t.Fatalf("health: %v", err)
	}
	c.Close()
	mu.Lock()
	if len(seen) != 1 || !seen[0].Foreign || seen[0].UID != ipctest.NobodyUID || !seen[0].HasFile || seen[0].FileUID != ipctest.NobodyUID {
		t.Fatalf("seen = %+v", seen)
	}
	mu.Unlock()

	c, err = ipc.Dial(ctx, ep, ipc.Options{Peer: ipc.PeerPolicy{TrustUIDs: []uint32{ipctest.NobodyUID}}})
	if err != nil {
		t.Fatalf("trusted: %v", err)
	}
	defer c.Close()
	resp, err := c.Send(ctx, ipc.Request{Method: "echo", Params: json.RawMessage(`{"x":1}`)})
	if err != nil || !bytes.Contains(resp.Result, []byte(`"x":1`)) {
		t.Fatalf("trusted call: %s %v", resp.Result, err)
	}
}

// A socket the user's own process serves but whose file belongs to another
// user is refused too, unless that user is trusted.
func TestSocketFileOwnerMismatchRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a socket file to another user needs root")
	}
	dir := t.TempDir()
	srv, err := ipctest.Listen(filepath.Join(dir, "songbird.sock"), ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"echo": func(_ context.Context, p json.RawMessage) (any, error) { return p, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := os.Chown(srv.Path, ipctest.NobodyUID, ipctest.NobodyUID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = ipc.Dial(ctx, srv.Endpoint(), ipc.Options{})
	var fe *ipc.ForeignPeerError
	if !errors.As(err, &fe) || fe.Peer.UID != uint32(os.Getuid()) || fe.Peer.FileUID != ipctest.NobodyUID {
		t.Fatalf("want a refusal naming the file's owner, got %v", err)
	}
	if srv.Calls() != 0 {
		t.Fatalf("the server was called %d times", srv.Calls())
	}
	c, err := ipc.Dial(ctx, srv.Endpoint(), ipc.Options{Peer: ipc.PeerPolicy{TrustUIDs: []uint32{ipctest.NobodyUID}}})
	if err != nil {
		t.Fatalf("trusted owner: %v", err)
	}
	c.Close()
}

func TestParseTrustedUser(t *testing.T) {
	for in, want := range map[string]uint32{"65534": 65534, "0": 0, " 1000 ": 1000} {
		if got, err := ipc.ParseTrustedUser(in); err != nil || got != want {
			t.Errorf("ParseTrustedUser(%q) = %d, %v", in, got, err)
		}
	}
	if _, err := ipc.ParseTrustedUser("no-such-user-here"); err == nil {
		t.Error("an unknown user name was accepted")
	}
	if os.Geteuid() == 0 {
		if got, err := ipc.ParseTrustedUser("root"); err != nil || got != 0 {
			t.Errorf("root = %d, %v", got, err)
		}
	}
}

// An abstract socket has no file to own, but its server is asked all the
// same.
func TestForeignAbstractSocketRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("serving a socket as another user needs root")
	}
	name := "@primalscope-foreign-" + strconv.Itoa(os.Getpid())
	p, err := ipctest.ListenForeign(name, ipctest.NobodyUID)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ep, err := ipc.ParseEndpoint(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = ipc.Dial(ctx, ep, ipc.Options{})
	var fe *ipc.ForeignPeerError
	if !errors.As(err, &fe) || fe.Peer.UID != ipctest.NobodyUID || fe.Peer.HasFile {
		t.Fatalf("abstract socket served by nobody: %v", err)
	}
	if sentAnything(p) {
		t.Fatalf("sent %q", p.Received())
	}
}
