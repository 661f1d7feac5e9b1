package ipc_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestSessionFrameFailuresAreSecurityFailures: a peer that holds the seed
// and completes the handshake, whose session's first frame authenticates,
// then breaks the frame that answers the call (a flipped byte, the wrong
// direction's key, a forged frame, cleartext JSON, a replay of the frame
// before), on the counter path (length-prefixed, chacha20_poly1305) and on
// the negotiate path (JSON-line, btsp.negotiate). Every one is a typed
// security failure naming what it is, never a closed connection, an
// over-long frame or a timeout.
func TestSessionFrameFailuresAreSecurityFailures(t *testing.T) {
	faults := []struct {
		name  string
		fault ipctest.SessionFault
		want  btsp.Fault
		words string
	}{
		{"flip", ipctest.FaultFlip, btsp.FaultAuth, "does not authenticate"},
		{"wrong-key", ipctest.FaultWrongKey, btsp.FaultAuth, "does not authenticate"},
		{"forged", ipctest.FaultForged, btsp.FaultAuth, "does not authenticate"},
		{"cleartext", ipctest.FaultCleartext, btsp.FaultCleartext, "cleartext JSON where an encrypted frame belongs"},
		{"replay", ipctest.FaultReplay, btsp.FaultReplay, "replay"},
	}
	for _, path := range []string{"negotiate", "counter"} {
		for _, f := range faults {
			t.Run(path+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				dir, err := ipctest.TempDir()
				if err != nil {
					t.Fatal(err)
				}
				h, err := ipctest.ListenHostileSession(filepath.Join(dir, "p.sock"), &ipctest.HostileSession{Seed: []byte(testFamilySeed), Fault: f.fault})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(h.Close)
				ep := ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}
				mem := ipc.NewEndpointMemory()
				if path == "counter" {
					mem.Update(ep, func(f *ipc.EndpointFacts) { f.Framing = btsp.LengthPrefixed.String() })
				}
				c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Memory: mem}})
				wantDesc := "unix+btsp(chacha20-poly1305 negotiated)"
				if path == "counter" {
					wantDesc = "unix+btsp(chacha20_poly1305, length-prefixed)"
				}
				if got := c.Transport(); got != wantDesc {
					t.Fatalf("transport %q, want %q", got, wantDesc)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_, err = c.Call(ctx, "health.liveness", nil)
				var fe *btsp.FrameError
				if !errors.As(err, &fe) || fe.Fault != f.want {
					t.Fatalf("err = %v (%T), want a *btsp.FrameError of fault %v", err, err, f.want)
				}
				if !ipc.SecurityFailure(err) {
					t.Fatalf("SecurityFailure(%v) = false", err)
				}
				if msg := err.Error(); !strings.Contains(msg, "security failure") || !strings.Contains(msg, f.words) {
					t.Fatalf("error %q does not say it is a security failure and %q", msg, f.words)
				}
				if h.Requests() != 1 {
					t.Fatalf("the peer decrypted %d requests, want 1", h.Requests())
				}
			})
		}
	}
}

// TestSessionFaultNoneWorks: the hostile session peer, not breaking
// anything, is a working BTSP server on both paths (so the failures above
// are the faults', not the peer's).
func TestSessionFaultNoneWorks(t *testing.T) {
	for _, path := range []string{"negotiate", "counter"} {
		t.Run(path, func(t *testing.T) {
			dir, err := ipctest.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			h, err := ipctest.ListenHostileSession(filepath.Join(dir, "p.sock"), &ipctest.HostileSession{Seed: []byte(testFamilySeed)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Close)
			ep := ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}
			mem := ipc.NewEndpointMemory()
			if path == "counter" {
				mem.Update(ep, func(f *ipc.EndpointFacts) { f.Framing = btsp.LengthPrefixed.String() })
			}
			c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Memory: mem}})
			for i := range 3 {
				if _, err := c.Call(ctxT(t, 10*time.Second), "health.liveness", map[string]int{"i": i}); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
		})
	}
}

// TestBTSPStopsOnceThePeerSpokeItsFraming: a peer that speaks only the
// JSON-line handshake answers the server hello (so it has shown its
// framing) and then fails it: an impostor without the seed that keeps the
// null cipher or refuses btsp.negotiate, a server hello cut and closed.
// The client stops with that first failure, a security failure, on the one
// connection: no length-prefixed hello (which such a peer would leave
// waiting out the whole handshake timeout), no second prefix.
func TestBTSPStopsOnceThePeerSpokeItsFraming(t *testing.T) {
	cases := []struct {
		name   string
		srv    *ipctest.HostileBTSP
		reason string
	}{
		{"impostor-keeps-null", &ipctest.HostileBTSP{LinesOnly: true, Negotiate: ipctest.NegotiateKeepNull}, btsp.ReasonNegotiateRefused},
		{"impostor-refuses-negotiate", &ipctest.HostileBTSP{LinesOnly: true, Negotiate: ipctest.NegotiateRefuse}, btsp.ReasonNegotiateRefused},
		{"hello-cut", &ipctest.HostileBTSP{LinesOnly: true, Hello: ipctest.HelloCut}, btsp.ReasonClosedWithoutWord},
		{"forced-null", &ipctest.HostileBTSP{LinesOnly: true, Seed: []byte(testFamilySeed), Cipher: "null"}, btsp.ReasonNegotiateRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := ipctest.TempDir()
			if err != nil {
				t.Fatal(err)
			}
			h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "p.sock"), tc.srv)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(h.Close)
			ep := ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}
			_, err = dialErr(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Prefix: ipc.PrefixAuto}})
			var he *btsp.HandshakeError
			if !errors.As(err, &he) || he.Reason != tc.reason || !he.Spoke {
				t.Fatalf("err = %v, want a %s *btsp.HandshakeError from a peer that spoke", err, tc.reason)
			}
			if !ipc.SecurityFailure(err) {
				t.Fatalf("SecurityFailure(%v) = false", err)
			}
			if n := len(h.Received()); n != 1 {
				t.Fatalf("%d connections, want 1 (no other framing or prefix after the peer answered): %v", n, err)
			}
		})
	}
}

// TestBTSPFallsBackWhenThePeerSaidNothing: a peer that speaks only the
// length-prefixed handshake closes on a JSON-line hello without a word:
// it showed no framing, so the length-prefixed handshake is tried, and its
// failure (a wrong server_proof) is the one reported.
func TestBTSPFallsBackWhenThePeerSaidNothing(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "p.sock"), &ipctest.HostileBTSP{LengthPrefixedOnly: true, Seed: []byte(testFamilySeed), WrongProof: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	_, err = dialErr(t, ipc.Endpoint{Transport: ipc.Unix, Path: h.Path()}, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true}})
	var he *btsp.HandshakeError
	if !errors.As(err, &he) || he.Reason != btsp.ReasonServerProofMismatch {
		t.Fatalf("err = %v, want server_proof_mismatch", err)
	}
	if n := len(h.Received()); n < 2 {
		t.Fatalf("%d connection(s): the length-prefixed handshake was not tried", n)
	}
}

// TestShortSeedTakesTheLengthPrefixedHandshake: BearDog refuses
// btsp.negotiate with a seed shorter than 16 bytes; that refusal (from a
// peer that answered the JSON-line hello) still leads to the
// length-prefixed handshake, which BearDog offers, rather than a failure.
func TestShortSeedTakesTheLengthPrefixedHandshake(t *testing.T) {
	const short = "short-seed-13"
	s := startAt(t, "p.sock", btspPrimal([]byte(short), ""))
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(short), RequireBTSP: true}})
	mustLive(t, c)
	if got := c.Transport(); got != "unix+btsp(chacha20_poly1305, length-prefixed)" {
		t.Fatalf("transport %q", got)
	}
}
