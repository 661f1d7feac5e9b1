package holon_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// A masked frame from the server (RFC 6455 §5.1) and invalid UTF-8 in a
// text frame (§8.1) fail the connection at once with 1002 and 1007: the
// call ends with the connection, long before its deadline, and the close
// frame reaches the peer.
func TestProtocolViolationsCloseAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ipctest.HostileWSConfig
		code int
		want string
	}{
		{"masked", ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, Masked: true, NeverClose: true}, holon.CloseProtocolError, "masked"},
		{"invalid-utf8", ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, InvalidUTF8: true, NeverClose: true}, 1007, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := hostile(t, tc.cfg)
			c := dialHostile(t, s)
			defer c.Close()
			const deadline = 5 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			resp, err := c.Call(ctx, "x", nil)
			var ce *ipc.ClosedError
			if !errors.As(err, &ce) {
				t.Fatalf("want the connection closed at once, got %+v, %v", resp, err)
			}
			var wsc *holon.CloseError
			if !errors.As(err, &wsc) || wsc.Code != tc.code || wsc.ByPeer || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want primalscope to close with %d naming %q, got %v", tc.code, tc.want, err)
			}
			eventually(t, "the close frame to reach the peer", func() bool { return s.CloseFrames() == 1 })
		})
	}
}

// Over wss:// the frames are watched after TLS: a masked one fails the
// connection there too.
func TestMaskedFrameOverTLSClosesAtOnce(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	s := hostile(t, ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, Masked: true, NeverClose: true, TLS: ts.TLS})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ep, err := ipc.ParseEndpoint(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipc.Dial(ctx, ep, ipc.Options{Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(ctx, "x", nil)
	var wsc *holon.CloseError
	if !errors.As(err, &wsc) || wsc.Code != holon.CloseProtocolError || !strings.Contains(err.Error(), "masked") {
		t.Fatalf("want primalscope to close with 1002 naming the masked frame, got %v", err)
	}
}

// An upgrade answer naming an extension or a subprotocol primalscope did
// not offer is refused at once, not after the WebSocket library's 3 s wait
// for a body the server never sends.
func TestRefusedUpgradeEndsAtOnce(t *testing.T) {
	for _, tc := range []struct{ header, want string }{
		{"Sec-WebSocket-Extensions: x-evil", `extension "x-evil"`},
		{"Sec-WebSocket-Protocol: evil-rpc", `subprotocol "evil-rpc"`},
	} {
		t.Run(tc.header, func(t *testing.T) {
			t.Parallel()
			s := hostile(t, ipctest.HostileWSConfig{UpgradeHeader: tc.header})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			f, err := holon.Dial(ctx, s.URL, holon.Options{})
			took := time.Since(start)
			if err == nil {
				f.Close()
				t.Fatal("dial accepted an upgrade with something not offered")
			}
			t.Logf("refused after %s: %v", took.Round(time.Millisecond), err)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not offered") {
				t.Errorf("error %q does not name %s as not offered", err, tc.want)
			}
			// The library's wait is 3 s; a refusal that still waits for it
			// is what this test is about.
			if took > 2*time.Second {
				t.Errorf("the refusal took %s", took)
			}
		})
	}
}
