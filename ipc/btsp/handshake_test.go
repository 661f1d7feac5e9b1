package btsp

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/curve25519"
)

var testSeed = []byte("family-seed-for-tests-0123456789")

// unixPair returns both ends of a fresh Unix socket connection.
func unixPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	client, err = net.Dial("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { client.Close(); r.c.Close() })
	return client, r.c
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// handshake runs Server and Client on a Unix socket pair; when n > 0 the
// two then exchange n messages each way (the server's part runs right after
// Server returns, as a real server's read loop would, so a btsp.negotiate
// request from Client gets answered), and both sessions are closed.
func handshake(t testing.TB, ccfg ClientConfig, scfg ServerConfig, n int) (cs, ss *Session, cerr, serr error) {
	t.Helper()
	cc, sc := unixPair(t)
	ctx := testCtx(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ss, serr = Server(ctx, sc, scfg)
		if serr == nil && n > 0 {
			serr = serverHalf(ss, n)
		}
	}()
	cs, cerr = Client(ctx, cc, ccfg)
	if cerr != nil {
		cc.Close() // lets a server still waiting for a message give up
	} else if n > 0 {
		clientHalf(t, cs, n)
	}
	<-done
	if cs != nil {
		t.Cleanup(func() { cs.Close() })
	}
	if ss != nil {
		t.Cleanup(func() { ss.Close() })
	}
	return
}

func TestHandshakeMatrix(t *testing.T) {
	type tc struct {
		framing   Framing
		cipher    Cipher
		negotiate bool
	}
	var cases []tc
	for _, f := range []Framing{JSONLine, LengthPrefixed} {
		for _, c := range []Cipher{CipherNull, CipherChaCha20Poly1305, CipherHMACPlain} {
			cases = append(cases, tc{f, c, false})
		}
	}
	cases = append(cases, tc{JSONLine, CipherNull, true})
	for _, c := range cases {
		for _, prefix := range []bool{false, true} {
			name := fmt.Sprintf("%s/%s/negotiate=%v/prefix=%v", c.framing, c.cipher, c.negotiate, prefix)
			t.Run(name, func(t *testing.T) {
				var notes []string
				var mu sync.Mutex
				trace := func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }
				cs, ss, cerr, serr := handshake(t,
					ClientConfig{Seed: testSeed, Framing: c.framing, Cipher: c.cipher, Negotiate: c.negotiate, Prefix: prefix, Trace: trace},
					ServerConfig{Seed: testSeed, Trace: trace}, 5)
				if cerr != nil || serr != nil {
					t.Fatalf("client: %v; server: %v", cerr, serr)
				}
				if cs.SessionID() == "" || cs.SessionID() != ss.SessionID() {
					t.Errorf("session ids %q / %q", cs.SessionID(), ss.SessionID())
				}
				if cs.Framing() != c.framing || ss.Framing() != c.framing {
					t.Errorf("framing %v / %v, want %v", cs.Framing(), ss.Framing(), c.framing)
				}
				wantCipher := c.cipher
				if c.negotiate {
					wantCipher = CipherChaCha20Poly1305
				}
				if cs.Cipher() != wantCipher || cs.Negotiated() != c.negotiate {
					t.Errorf("client cipher %s negotiated %v", cs.Cipher(), cs.Negotiated())
				}
				if wantAuth := c.negotiate || c.framing == LengthPrefixed; cs.ServerAuthenticated() != wantAuth || ss.ServerAuthenticated() {
					t.Errorf("client says server authenticated %v, want %v (server side %v)", cs.ServerAuthenticated(), wantAuth, ss.ServerAuthenticated())
				}
				if c.negotiate && (ss.Cipher() != CipherChaCha20Poly1305 || !ss.Negotiated()) {
					t.Errorf("server cipher %s negotiated %v after the exchange", ss.Cipher(), ss.Negotiated())
				}
				mu.Lock()
				defer mu.Unlock()
				if len(notes) < 4 {
					t.Errorf("only %d trace notes", len(notes))
				}
				for _, n := range notes {
					for _, secret := range []string{string(testSeed), b64(HandshakeKey(testSeed))} {
						if strings.Contains(n, secret) {
							t.Errorf("trace note %q carries secret material", n)
						}
					}
				}
			})
		}
	}
}

// exchange sends n messages each way (client request, server answer, server
// notification), checks them, and checks a clean end after the client's Close.
func exchange(t testing.TB, cs, ss *Session, n int) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- serverHalf(ss, n) }()
	clientHalf(t, cs, n)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func serverHalf(ss *Session, n int) error {
	for i := 0; i < n; i++ {
		p, err := ss.ReadFrame()
		if err != nil {
			return fmt.Errorf("server read %d: %w", i, err)
		}
		var req struct{ ID int }
		if err := json.Unmarshal(p, &req); err != nil || req.ID != i {
			return fmt.Errorf("server got %q", p)
		}
		if err := ss.WriteFrame(fmt.Appendf(nil, `{"jsonrpc":"2.0","result":{"echo":%q},"id":%d}`, p, i)); err != nil {
			return err
		}
		if err := ss.WriteFrame([]byte(`{"jsonrpc":"2.0","method":"event.tick","params":{}}`)); err != nil {
			return err
		}
	}
	if _, err := ss.ReadFrame(); err == nil {
		return errors.New("server read after client close: no error")
	}
	return nil
}

func clientHalf(t testing.TB, cs *Session, n int) {
	t.Helper()
	defer cs.Close()
	for i := 0; i < n; i++ {
		// Include a newline-formatted message: NDJSON compacts it, frames carry it.
		req := fmt.Sprintf("{\"jsonrpc\":\"2.0\",\n\"method\":\"health.liveness\",\"params\":{\"pad\":%q},\"id\":%d}", strings.Repeat("x", i*1000), i)
		if err := cs.WriteFrame([]byte(req)); err != nil {
			t.Errorf("client write %d: %v", i, err)
			return
		}
		p, err := cs.ReadFrame()
		if err != nil {
			t.Errorf("client read %d: %v", i, err)
			return
		}
		var resp struct {
			Result struct{ Echo string }
			ID     int
		}
		if err := json.Unmarshal(p, &resp); err != nil || resp.ID != i || !strings.Contains(resp.Result.Echo, "health.liveness") {
			t.Errorf("client got %q (%v)", p, err)
			return
		}
		p, err = cs.ReadFrame()
		if err != nil || !strings.Contains(string(p), "event.tick") {
			t.Errorf("client notification %d: %q %v", i, p, err)
			return
		}
	}
}

func TestWrongSeed(t *testing.T) {
	for _, f := range []Framing{JSONLine, LengthPrefixed} {
		t.Run(f.String(), func(t *testing.T) {
			_, _, cerr, serr := handshake(t,
				ClientConfig{Seed: []byte("not-the-family-seed-at-all"), Framing: f},
				ServerConfig{Seed: testSeed}, 0)
			var he *HandshakeError
			if !errors.As(cerr, &he) || !he.WrongSeed() || !he.FromPeer {
				t.Fatalf("client err = %v, want a family_verification from the peer", cerr)
			}
			if !errors.As(serr, &he) || he.Reason != ReasonFamilyVerification {
				t.Fatalf("server err = %v", serr)
			}
			for _, e := range []error{cerr, serr} {
				if strings.Contains(e.Error(), string(testSeed)) || strings.Contains(e.Error(), "not-the-family") {
					t.Errorf("error %q carries a seed", e)
				}
			}
		})
	}
}

func TestSeedCandidatesRetry(t *testing.T) {
	// The server's seed is the hex decoding of what FAMILY_SEED holds.
	familySeed := "00112233445566778899aabbccddeeff0011"
	cands := SeedCandidates(familySeed)
	if len(cands) != 2 {
		t.Fatalf("candidates: %d", len(cands))
	}
	var last error
	for i, seed := range cands {
		cs, _, cerr, serr := handshake(t, ClientConfig{Seed: seed}, ServerConfig{Seed: cands[1]}, 1)
		last = cerr
		var he *HandshakeError
		if cerr == nil {
			if i != 1 {
				t.Fatalf("candidate %d worked", i)
			}
			cs.Close()
			break
		}
		if !errors.As(cerr, &he) || !he.WrongSeed() {
			t.Fatalf("candidate %d: %v (server %v)", i, cerr, serr)
		}
	}
	if last != nil {
		t.Fatal(last)
	}
}

func TestServerForcesCipherAndFallbacks(t *testing.T) {
	for _, tc := range []struct {
		pref, force, want Cipher
	}{
		{"null", "hmac_plain", CipherHMACPlain},
		{"chacha20", "", CipherChaCha20Poly1305},
		{"aes-256-gcm", "", CipherChaCha20Poly1305}, // unknown → chacha, never null
		{"", "", CipherNull},
	} {
		for _, f := range []Framing{JSONLine, LengthPrefixed} {
			cs, ss, cerr, serr := handshake(t, ClientConfig{Seed: testSeed, Framing: f, Cipher: tc.pref},
				ServerConfig{Seed: testSeed, Cipher: tc.force}, 2)
			if cerr != nil || serr != nil {
				t.Fatalf("%v %v", cerr, serr)
			}
			if cs.Cipher() != tc.want || ss.Cipher() != tc.want {
				t.Errorf("pref %q force %q: ciphers %s/%s, want %s", tc.pref, tc.force, cs.Cipher(), ss.Cipher(), tc.want)
			}
		}
	}
}

// TestNegotiateRefusedFails: a server that keeps the null cipher (or refuses
// the upgrade for a short seed) fails a client that asked for btsp.negotiate:
// the session never silently stays plaintext.
func TestNegotiateRefusedFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed []byte
		scfg ServerConfig
	}{
		{"kept-null", testSeed, ServerConfig{Seed: testSeed, NoNegotiate: true}},
		{"short-seed", []byte("short-seed"), ServerConfig{Seed: []byte("short-seed")}},
		{"handshake-chacha", testSeed, ServerConfig{Seed: testSeed, Cipher: CipherChaCha20Poly1305}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, _, cerr, _ := handshake(t, ClientConfig{Seed: tc.seed, Negotiate: true}, tc.scfg, 1)
			wantReason(t, cerr, ReasonNegotiateRefused)
			if cs != nil {
				t.Fatal("a session was returned")
			}
		})
	}
}

// TestWeakerCipherFails: a server choosing a weaker cipher than asked fails
// the handshake; a stronger one is accepted.
func TestWeakerCipherFails(t *testing.T) {
	for _, tc := range []struct {
		pref, force Cipher
		ok          bool
	}{
		{CipherChaCha20Poly1305, CipherNull, false},
		{CipherChaCha20Poly1305, CipherHMACPlain, false},
		{CipherHMACPlain, CipherNull, false},
		{CipherHMACPlain, CipherChaCha20Poly1305, true},
		{CipherNull, CipherHMACPlain, true},
	} {
		for _, f := range []Framing{JSONLine, LengthPrefixed} {
			_, _, cerr, _ := handshake(t, ClientConfig{Seed: testSeed, Framing: f, Cipher: tc.pref},
				ServerConfig{Seed: testSeed, Cipher: tc.force}, 0)
			if tc.ok && cerr != nil {
				t.Errorf("%s: asked %s, got %s: %v", f, tc.pref, tc.force, cerr)
			}
			if !tc.ok {
				wantReason(t, cerr, ReasonWeakerCipher)
			}
		}
	}
}

func TestServerAnswersNegotiateOnOtherPathsWithNull(t *testing.T) {
	cs, ss, cerr, serr := handshake(t, ClientConfig{Seed: testSeed, Framing: LengthPrefixed, Cipher: CipherChaCha20Poly1305},
		ServerConfig{Seed: testSeed}, 0)
	if cerr != nil || serr != nil {
		t.Fatalf("%v %v", cerr, serr)
	}
	go func() {
		ss.ReadFrame() // answers the negotiate request; returns at Close
	}()
	if err := cs.WriteFrame([]byte(`{"jsonrpc":"2.0","method":"btsp.negotiate","params":{"ciphers":["chacha20-poly1305"],"client_nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},"id":7}`)); err != nil {
		t.Fatal(err)
	}
	p, err := cs.ReadFrame()
	if err != nil || !strings.Contains(string(p), `"cipher":"null"`) || !strings.Contains(string(p), `"id":7`) {
		t.Fatalf("answer %q %v", p, err)
	}
	cs.Close()
	ss.Close()
}

func TestContextDeadline(t *testing.T) {
	cc, sc := unixPair(t)
	defer sc.Close() // a server that never answers
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := Client(ctx, cc, ClientConfig{Seed: testSeed})
	var he *HandshakeError
	if !errors.As(err, &he) || he.Reason != ReasonTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}

	// Cancellation without a deadline unblocks too.
	cc, sc = unixPair(t)
	defer sc.Close()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = Server(ctx, sc, ServerConfig{Seed: testSeed})
	if !errors.As(err, &he) || he.Reason != ReasonTimeout || !errors.Is(err, context.Canceled) {
		t.Fatalf("server err = %v", err)
	}
	_ = cc
}

func TestDeadlineClearedAfterHandshake(t *testing.T) {
	cc, sc := unixPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var ss *Session
	var serr error
	done := make(chan struct{})
	go func() { defer close(done); ss, serr = Server(ctx, sc, ServerConfig{Seed: testSeed}) }()
	cs, err := Client(ctx, cc, ClientConfig{Seed: testSeed, Cipher: CipherChaCha20Poly1305})
	<-done
	if err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	defer cs.Close()
	defer ss.Close()
	cancel() // cancelling the handshake's ctx must not break the session
	exchange(t, cs, ss, 2)
}

// fakePeer speaks raw handshake messages in one framing, for peers that
// misbehave in ways Server and Client never do.
type fakePeer struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
	f Framing
}

func (p *fakePeer) send(v any) {
	b, _ := json.Marshal(v)
	if p.f == LengthPrefixed {
		b = append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
	} else {
		b = append(b, '\n')
	}
	p.c.Write(b)
}

func (p *fakePeer) recv() map[string]any {
	var b []byte
	var err error
	if p.f == LengthPrefixed {
		b, err = readLP(p.r, 1<<16, 0)
	} else {
		b, err = readLine(p.r, 1<<16)
	}
	if err != nil {
		return nil
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func mustB64(t testing.TB, v any) []byte {
	s, _ := v.(string)
	b, ok := decodeB64(s)
	if !ok {
		t.Errorf("not base64: %v", v)
	}
	return b
}

// fakeServer runs script as the server side against Client and returns the
// client's error.
func fakeServer(t *testing.T, f Framing, script func(p *fakePeer)) (*Session, error) {
	t.Helper()
	cc, sc := unixPair(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer sc.Close()
		script(&fakePeer{t: t, c: sc, r: bufio.NewReader(sc), f: f})
	}()
	s, err := Client(testCtx(t), cc, ClientConfig{Seed: testSeed, Framing: f})
	if s != nil {
		s.Close()
	}
	<-done
	return s, err
}

var serverSecret = seq(0x80, 32)

func serverPubKey() []byte {
	p, _ := curve25519.X25519(serverSecret, curve25519.Basepoint)
	return p
}

func wantReason(t *testing.T, err error, reason string) {
	t.Helper()
	var he *HandshakeError
	if !errors.As(err, &he) || he.Reason != reason {
		t.Fatalf("err = %v, want reason %s", err, reason)
	}
}

func TestClientRejectsBadServers(t *testing.T) {
	challenge := seq(0, 32)
	spub := serverPubKey()
	t.Run("server_proof_mismatch", func(t *testing.T) {
		for _, proof := range []any{b64(fill(7, 32)), nil} {
			_, err := fakeServer(t, LengthPrefixed, func(p *fakePeer) {
				p.recv()
				p.send(map[string]any{"version": 1, "server_ephemeral_pub": b64(spub), "challenge": b64(challenge)})
				p.recv()
				m := map[string]any{"cipher": "null", "session_id": vecSessionID}
				if proof != nil {
					m["server_proof"] = proof
				}
				p.send(m)
			})
			wantReason(t, err, ReasonServerProofMismatch)
		}
	})
	t.Run("good_proof_and_session_token", func(t *testing.T) {
		s, err := fakeServer(t, LengthPrefixed, func(p *fakePeer) {
			hello := p.recv()
			cpub := mustB64(t, hello["client_ephemeral_pub"])
			if _, has := hello["protocol"]; has {
				t.Error("length-prefixed hello has a protocol field")
			}
			p.send(map[string]any{"version": 1, "server_ephemeral_pub": b64(spub), "challenge": b64(challenge)})
			resp := p.recv()
			hk := HandshakeKey(testSeed)
			if string(mustB64(t, resp["response"])) != string(ChallengeResponse(hk, challenge, cpub, spub)) {
				t.Error("client response does not verify")
			}
			p.send(map[string]any{"cipher": "null", "session_token": "tok-1", "server_proof": b64(ServerProof(hk, challenge, spub, cpub))})
		})
		if err != nil || s.SessionID() != "tok-1" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("json_line_status_variants", func(t *testing.T) {
		for _, status := range []any{"ok", "complete", nil} {
			s, err := fakeServer(t, JSONLine, func(p *fakePeer) {
				p.recv()
				p.send(map[string]any{"version": 1, "server_ephemeral_pub": b64(spub), "challenge": b64(challenge), "session_token": "abc"})
				p.recv()
				m := map[string]any{"cipher": "null"}
				if status != nil {
					m["status"] = status
				}
				p.send(m)
			})
			if err != nil || s.SessionID() != "abc" {
				t.Fatalf("status %v: %v", status, err)
			}
		}
	})
	t.Run("unsupported_version", func(t *testing.T) {
		_, err := fakeServer(t, JSONLine, func(p *fakePeer) {
			p.recv()
			p.send(map[string]any{"version": 2, "server_ephemeral_pub": b64(spub), "challenge": b64(challenge), "session_id": "x"})
		})
		wantReason(t, err, ReasonUnsupportedVersion)
	})
	t.Run("invalid_key_length", func(t *testing.T) {
		_, err := fakeServer(t, JSONLine, func(p *fakePeer) {
			p.recv()
			p.send(map[string]any{"version": 1, "server_ephemeral_pub": b64(spub[:31]), "challenge": b64(challenge), "session_id": "x"})
		})
		wantReason(t, err, ReasonInvalidKeyLength)
	})
	t.Run("closed_without_word", func(t *testing.T) {
		_, err := fakeServer(t, JSONLine, func(p *fakePeer) { p.recv() })
		wantReason(t, err, ReasonClosedWithoutWord)
	})
	t.Run("peer_error_word", func(t *testing.T) {
		_, err := fakeServer(t, JSONLine, func(p *fakePeer) {
			p.recv()
			p.send(map[string]any{"error": "handshake_failed", "reason": "family_verification\x1b[31m"})
		})
		var he *HandshakeError
		if !errors.As(err, &he) || !he.FromPeer || strings.ContainsRune(err.Error(), 0x1b) {
			t.Fatalf("err = %q", err)
		}
	})
}

// fakeClient sends raw messages to Server and returns what came back and the
// server's error.
func fakeClient(t *testing.T, f Framing, raw []byte, script func(p *fakePeer)) error {
	t.Helper()
	cc, sc := unixPair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := Server(testCtx(t), sc, ServerConfig{Seed: testSeed})
		errc <- err
	}()
	if raw != nil {
		cc.Write(raw)
	}
	script(&fakePeer{t: t, c: cc, r: bufio.NewReader(cc), f: f})
	cc.Close()
	return <-errc
}

func TestServerRefusals(t *testing.T) {
	pub := serverPubKey()
	for _, tc := range []struct {
		name   string
		f      Framing
		hello  map[string]any
		reason string
	}{
		{"unsupported_version", JSONLine, map[string]any{"protocol": "btsp", "version": 2, "client_ephemeral_pub": b64(pub)}, ReasonUnsupportedVersion},
		{"unsupported_version_lp", LengthPrefixed, map[string]any{"version": 0, "client_ephemeral_pub": b64(pub)}, ReasonUnsupportedVersion},
		{"invalid_key_length", JSONLine, map[string]any{"protocol": "btsp", "version": 1, "client_ephemeral_pub": b64(pub[:31])}, ReasonInvalidKeyLength},
		{"invalid_key_length_lp", LengthPrefixed, map[string]any{"version": 1, "client_ephemeral_pub": b64(append(pub, 0))}, ReasonInvalidKeyLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var answer map[string]any
			var after map[string]any
			err := fakeClient(t, tc.f, nil, func(p *fakePeer) {
				p.send(tc.hello)
				answer = p.recv()
				after = p.recv()
			})
			wantReason(t, err, tc.reason)
			if answer["error"] != "handshake_failed" || answer["reason"] != tc.reason {
				t.Errorf("answer %v", answer)
			}
			if after != nil {
				t.Errorf("server kept talking: %v", after)
			}
		})
	}
	t.Run("malformed_closes_without_word", func(t *testing.T) {
		var answer map[string]any
		err := fakeClient(t, JSONLine, []byte("{\"protocol\":\"btsp\",\"version\":1,\"client_ephemeral_pub\":\"!!\"}\n"), func(p *fakePeer) {
			answer = p.recv()
		})
		wantReason(t, err, ReasonMalformed)
		if answer != nil {
			t.Errorf("answer %v", answer)
		}
	})
	t.Run("cleartext_jsonrpc_is_not_a_hello", func(t *testing.T) {
		err := fakeClient(t, JSONLine, []byte("{\"jsonrpc\":\"2.0\",\"method\":\"health.liveness\",\"id\":1}\n"), func(p *fakePeer) { p.recv() })
		wantReason(t, err, ReasonMalformed)
	})
	t.Run("other_ribocipher_byte", func(t *testing.T) {
		err := fakeClient(t, JSONLine, []byte{0xEC, 0x01, '{', '}', '\n'}, func(p *fakePeer) { p.recv() })
		wantReason(t, err, ReasonMalformed)
	})
	t.Run("oversize_hello", func(t *testing.T) {
		err := fakeClient(t, LengthPrefixed, []byte{0x7f, 0xff, 0xff, 0xff}, func(p *fakePeer) { p.recv() })
		wantReason(t, err, ReasonMalformed)
	})
	t.Run("hmac_of_seed_only_is_refused", func(t *testing.T) {
		// The divergent biomeOS client computes HMAC(seed, challenge).
		err := fakeClient(t, JSONLine, nil, func(p *fakePeer) {
			p.send(map[string]any{"protocol": "btsp", "version": 1, "client_ephemeral_pub": b64(pub)})
			sh := p.recv()
			ch := mustB64(t, sh["challenge"])
			p.send(map[string]any{"response": b64(mac3(testSeed, ch, nil, nil)), "preferred_cipher": "null"})
			if a := p.recv(); a["reason"] != ReasonFamilyVerification {
				t.Errorf("answer %v", a)
			}
		})
		wantReason(t, err, ReasonFamilyVerification)
	})
}

func TestIsHandshakeStart(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"\xec\x03{", true},
		{"\xec\x02", true},
		{"\xec\x01{\"jsonrpc\"", false},
		{"\xec\x00", false},
		{`{"protocol":"btsp","version":1,"client_ephemeral_pub":"AAAA"}` + "\n", true},
		{`  {"protocol":"btsp","vers`, true},
		{`{"jsonrpc":"2.0","method":"health.liveness","id":1}` + "\n", false},
		{`{"jsonrpc":"2.0","protocol":"btsp"}`, false},
		{"\x00\x00\x00\x40{\"version\":1", true},
		{"\x00\x00\x00\x00{", false},
		{"\x7f\xff\xff\xff{", false},
		{"", false},
		{"GET / HTTP/1.1\r\n", false},
	} {
		if got := IsHandshakeStart([]byte(tc.in)); got != tc.want {
			t.Errorf("IsHandshakeStart(%q) = %v", tc.in, got)
		}
	}
}

// A fake primal peeks, decides, and hands its buffered reader to Server.
func TestServerWithPeekedReader(t *testing.T) {
	cc, sc := unixPair(t)
	ctx := testCtx(t)
	errc := make(chan error, 1)
	var ss *Session
	go func() {
		r := bufio.NewReader(sc)
		first, _ := r.Peek(2)
		if !IsHandshakeStart(first) {
			errc <- errors.New("not a handshake")
			return
		}
		var err error
		ss, err = Server(ctx, sc, ServerConfig{Seed: testSeed, Reader: r})
		errc <- err
	}()
	cs, err := Client(ctx, cc, ClientConfig{Seed: testSeed, Prefix: true, Cipher: CipherHMACPlain})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, cs, ss, 2)
	ss.Close()
}

var _ = io.EOF

func TestClientSeesJSONRPCRefusal(t *testing.T) {
	_, err := fakeServer(t, JSONLine, func(p *fakePeer) {
		p.recv()
		p.send(map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32600, "message": "BTSP handshake required"}, "id": nil})
	})
	var he *HandshakeError
	if !errors.As(err, &he) || he.Reason != ReasonMalformed || !strings.Contains(he.Detail, "BTSP handshake required") {
		t.Fatalf("err = %v", err)
	}
}

func TestCloseUnblocksReadAndWriteDeadline(t *testing.T) {
	for _, c := range []Cipher{CipherNull, CipherChaCha20Poly1305} {
		cs, ss, cerr, serr := handshake(t, ClientConfig{Seed: testSeed, Cipher: c}, ServerConfig{Seed: testSeed}, 0)
		if cerr != nil || serr != nil {
			t.Fatal(cerr, serr)
		}
		readDone := make(chan error, 1)
		go func() {
			_, err := cs.ReadFrame()
			readDone <- err
		}()
		// The server never reads: a write deadline must end a blocked write.
		if err := ss.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		big := []byte(`{"pad":"` + strings.Repeat("y", 1<<20) + `"}`)
		var werr error
		for i := 0; i < 64 && werr == nil; i++ {
			werr = cs.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			if werr == nil {
				werr = cs.WriteFrame(big)
			}
		}
		if !errors.Is(werr, os.ErrDeadlineExceeded) {
			t.Errorf("%s: write to a peer that never reads: %v", c, werr)
		}
		cs.Close()
		if err := <-readDone; err == nil {
			t.Errorf("%s: ReadFrame after Close returned no error", c)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func TestClientConfigErrors(t *testing.T) {
	cc, _ := unixPair(t)
	if _, err := Client(testCtx(t), cc, ClientConfig{}); err == nil || isHandshakeError(err) {
		t.Errorf("no seed: %v", err)
	}
	cc, _ = unixPair(t)
	if _, err := Client(testCtx(t), cc, ClientConfig{Seed: testSeed, Framing: 7}); err == nil || isHandshakeError(err) {
		t.Errorf("bad framing: %v", err)
	}
	_, sc := unixPair(t)
	if _, err := Server(testCtx(t), sc, ServerConfig{}); err == nil || isHandshakeError(err) {
		t.Errorf("server without seed: %v", err)
	}
}
