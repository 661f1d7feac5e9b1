package btsp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// memConn is a net.Conn that reads scripted bytes and discards writes.
type memConn struct {
	r io.Reader
}

func (c *memConn) Read(p []byte) (int, error)         { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error)        { return len(p), nil }
func (c *memConn) Close() error                       { return nil }
func (c *memConn) LocalAddr() net.Addr                { return &net.UnixAddr{Name: "mem", Net: "unix"} }
func (c *memConn) RemoteAddr() net.Addr               { return &net.UnixAddr{Name: "mem", Net: "unix"} }
func (c *memConn) SetDeadline(t time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }

const fuzzModes = 6

// fuzzSession builds a session of one kind over data: 0 plaintext frames,
// 1 counter chacha20-poly1305, 2 hmac_plain, 3 negotiated random-nonce
// chacha20-poly1305, 4 NDJSON, 5 a server NDJSON session that still answers
// btsp.negotiate.
func fuzzSession(t testing.TB, kind byte, data []byte) *Session {
	switch kind % fuzzModes {
	case 0:
		return plainSession(data, modePlainLP)
	case 1:
		s, _ := memSession(t, true, CipherChaCha20Poly1305, data)
		return s
	case 2:
		s, _ := memSession(t, true, CipherHMACPlain, data)
		return s
	case 3:
		s := plainSession(data, modePlainLP)
		if err := s.upgradeNegotiated(unhex(t, vecNegC2S), unhex(t, vecNegS2C)); err != nil {
			t.Fatal(err)
		}
		return s
	case 4:
		return plainSession(data, modeNDJSON)
	default:
		s := plainSession(data, modeNDJSON)
		s.negPending, s.negAllowed, s.negSeedOK = true, true, true
		s.negKey = unhex(t, vecHandshakeKey)
		return s
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(byte(0), []byte{0, 0, 0, 2, '{', '}'})
	f.Add(byte(1), unhex(f, vecFrameC2S0+vecFrameC2S1))
	f.Add(byte(2), []byte{0, 0, 0, 0x22, '{', '}', 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32})
	f.Add(byte(3), unhex(f, vecFrameC2S0))
	f.Add(byte(4), []byte("{\"a\":1}\n\n{\"b\":2}\r\n"))
	f.Add(byte(5), []byte(`{"jsonrpc":"2.0","method":"btsp.negotiate","params":{"session_id":"00112233445566778899aabbccddeeff","ciphers":["chacha20-poly1305"],"client_nonce":"paWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaU="},"id":1}`+"\n"))
	f.Fuzz(func(t *testing.T, kind byte, data []byte) {
		s := fuzzSession(t, kind, data)
		const limit = 1 << 12
		s.SetMaxFrame(limit)
		var sticky error
		for i := 0; i < 1000; i++ {
			p, err := s.ReadFrame()
			if err != nil {
				sticky = err
				break
			}
			if len(p) > limit {
				t.Fatalf("frame of %d bytes passed a %d-byte limit", len(p), limit)
			}
			if kind%fuzzModes == 4 && bytes.IndexByte(p, '\n') >= 0 {
				t.Fatalf("NDJSON frame contains a newline: %q", p)
			}
		}
		if sticky != nil {
			if _, err := s.ReadFrame(); err != sticky {
				t.Fatalf("error did not stick: %v then %v", sticky, err)
			}
		}
		// Whatever was read, writing still frames correctly.
		s.w = io.Discard
		_ = s.WriteFrame([]byte(`{"x":1}`))
	})
}

func FuzzServerHello(f *testing.F) {
	f.Add(false, []byte(`{"version":1,"server_ephemeral_pub":"ST6C/HRGSlkmiBdiPSBTxeuOLMSpiLT+4XnsawENUx0=","challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=","session_id":"00112233445566778899aabbccddeeff"}`+"\n"+`{"status":"ok","session_id":"00112233445566778899aabbccddeeff","cipher":"chacha20_poly1305"}`+"\n"))
	f.Add(false, []byte(`{"error":"handshake_failed","reason":"family_verification"}`+"\n"))
	f.Add(true, []byte("\x00\x00\x00\x8a"+`{"version":1,"server_ephemeral_pub":"ST6C/HRGSlkmiBdiPSBTxeuOLMSpiLT+4XnsawENUx0=","challenge":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}`))
	f.Fuzz(func(t *testing.T, lp bool, data []byte) {
		if sh, err := ParseServerHello(data); err == nil {
			if len(sh.Pub) != KeySize || len(sh.Challenge) == 0 || len(sh.Challenge) > maxChallenge || len(sh.SessionID) > maxSessionID {
				t.Fatalf("accepted a bad hello: %+v", sh)
			}
		} else if !isHandshakeError(err) {
			t.Fatalf("untyped error %v", err)
		}
		if c, err := ParseCompletion(data); err == nil {
			if c.Cipher != CipherNull && c.Cipher != CipherChaCha20Poly1305 && c.Cipher != CipherHMACPlain {
				t.Fatalf("cipher %q", c.Cipher)
			}
		} else if !isHandshakeError(err) {
			t.Fatalf("untyped error %v", err)
		}
		// The whole client handshake against a server that says data.
		fr := JSONLine
		if lp {
			fr = LengthPrefixed
		}
		s, err := Client(context.Background(), &memConn{r: bytes.NewReader(data)},
			ClientConfig{Seed: testSeed, Framing: fr, Cipher: CipherChaCha20Poly1305, Negotiate: true})
		if err == nil {
			if lp {
				t.Fatal("length-prefixed handshake passed without a valid server proof")
			}
			s.SetMaxFrame(1 << 12)
			for i := 0; i < 100; i++ {
				if _, err := s.ReadFrame(); err != nil {
					break
				}
			}
		} else if !isHandshakeError(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func FuzzClientHello(f *testing.F) {
	f.Add([]byte(`{"protocol":"btsp","version":1,"client_ephemeral_pub":"eaYx7t4b+cmPEgMs3q3Q56B5OY/HhriMyEbsia+FpRo="}` + "\n" + `{"response":"lQIATxXZJwDDNE/AJkoz/Ysf9HEb4mnbbn1XF1Bg+QA=","preferred_cipher":"null"}` + "\n"))
	f.Add([]byte("\xec\x02\x00\x00\x00\x52" + `{"version":1,"client_ephemeral_pub":"eaYx7t4b+cmPEgMs3q3Q56B5OY/HhriMyEbsia+FpRo="}`))
	f.Add([]byte("\xec\x03" + `{"protocol":"btsp","version":2,"client_ephemeral_pub":"AAAA"}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"health.liveness","id":1}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = IsHandshakeStart(data)
		for _, fr := range []Framing{JSONLine, LengthPrefixed} {
			if ch, err := ParseClientHello(data, fr); err == nil {
				if len(ch.Pub) != KeySize {
					t.Fatalf("accepted a %d-byte key", len(ch.Pub))
				}
			} else if !isHandshakeError(err) {
				t.Fatalf("untyped error %v", err)
			}
		}
		if _, _, err := parseResponse(data); err != nil && !isHandshakeError(err) {
			t.Fatalf("untyped error %v", err)
		}
		// The whole server handshake against a client that says data. The
		// response cannot verify (the server's challenge is random).
		s, err := Server(context.Background(), &memConn{r: bytes.NewReader(data)}, ServerConfig{Seed: testSeed})
		if err == nil {
			t.Fatalf("handshake passed without a valid response (session %v)", s.Describe())
		}
		if !isHandshakeError(err) {
			t.Fatalf("untyped error %v", err)
		}
	})
}

func isHandshakeError(err error) bool {
	var he *HandshakeError
	return errors.As(err, &he)
}

var _ = bufio.NewReader
