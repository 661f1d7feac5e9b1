package btsp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

// Expected values computed once, independently, with Python 3 (hashlib/hmac,
// HKDF written out from RFC 5869, X25519 and ChaCha20-Poly1305 from the
// "cryptography" package), for:
//
//	seed          = "ecoPrimals-test-family-seed-01"
//	challenge     = 00 01 02 ... 1f
//	client secret = 40 41 ... 5f, server secret = 80 81 ... 9f
//	session id    = "00112233445566778899aabbccddeeff"
//	client nonce  = a5 × 32, server nonce = 5a × 32
//	message       = {"jsonrpc":"2.0","method":"health.liveness","id":1}
const (
	vecSeed         = "ecoPrimals-test-family-seed-01"
	vecSessionID    = "00112233445566778899aabbccddeeff"
	vecMsg          = `{"jsonrpc":"2.0","method":"health.liveness","id":1}`
	vecClientPub    = "79a631eede1bf9c98f12032cdeadd0e7a079398fc786b88cc846ec89af85a51a"
	vecServerPub    = "493e82fc74464a59268817623d2053c5eb8e2cc4a988b4fee179ec6b010d531d"
	vecShared       = "dcd77236231add34de0561c47859a65d304f2a8550e8df98df053cf5dfabea0b"
	vecHandshakeKey = "6f819860b22639f4600f7ad0d2b907ec73fc1b12e6280c5fcb9e2872e3194e21"
	vecResponse     = "9502004f15d92700c3344fc0264a33fd8b1ff4711be269db6e7d57175060f900"
	vecServerProof  = "2176a53fb435735c64534b4d261c9440271e3709e23434fc8b1dcf858a4f674f"
	vecS2C          = "4277ed7d105ffb3e645143be3c652fabc878d2562b085da553c369fe19f22423"
	vecC2S          = "f407903d0ff2e6deec7a96bba37fb16a060902f7ada77807a94c36000fa8c5c2"
	vecNegC2S       = "742f42ec0150830e48016f0d1b828b36c12b63c22fef284784993dd49a32364d"
	vecNegS2C       = "d5f949934e01cae6a213bb9c8b1202759db89c1354141e48d33238ccbc24bb3d"
	vecFrameC2S0    = "0000004f000000000000000000000000b27d93e57d7e2a214e9d147fe1dbe34963f6a7f094647b96c2de3ecfd492ccbca849178b2768edb3985683f9705256acb36b1b9e63214462721d1d2edbe57895fd3a4f"
	vecFrameC2S1    = "0000004f0000000000000000000000013c6a58cc58276f03013e0e02b8d194b299ab475fb9e61b68fc1621bb600e4fe1df4420ac9d8fe68deae3e7609af7c6f3b5ee9b62c3bd0b382b1c52592a8bf62a6f0f99"
	vecHMACFrameS2C = "000000537b226a736f6e727063223a22322e30222c226d6574686f64223a226865616c74682e6c6976656e657373222c226964223a317d5b315fa0f66381c85ca6a0e8fae2cb14b39659185a6087375e3151c6bf37798f"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func seq(from, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from + i)
	}
	return b
}

func fill(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

func checkHex(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if hex.EncodeToString(got) != want {
		t.Errorf("%s = %x, want %s", what, got, want)
	}
}

func TestKeyVectors(t *testing.T) {
	challenge := seq(0, 32)
	cpub, err := X25519(seq(0x40, 32), unhex(t, "0900000000000000000000000000000000000000000000000000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	checkHex(t, "client pub", cpub, vecClientPub)
	spub := unhex(t, vecServerPub)
	shared, err := X25519(seq(0x40, 32), spub)
	if err != nil {
		t.Fatal(err)
	}
	checkHex(t, "shared (client side)", shared, vecShared)
	shared2, _ := X25519(seq(0x80, 32), cpub)
	checkHex(t, "shared (server side)", shared2, vecShared)

	hk := HandshakeKey([]byte(vecSeed))
	checkHex(t, "handshake key", hk, vecHandshakeKey)
	checkHex(t, "response", ChallengeResponse(hk, challenge, cpub, spub), vecResponse)
	checkHex(t, "server proof", ServerProof(hk, challenge, spub, cpub), vecServerProof)

	s2c, c2s := SessionKeys(shared, vecSessionID)
	checkHex(t, "s2c", s2c, vecS2C)
	checkHex(t, "c2s", c2s, vecC2S)

	nc2s, ns2c := NegotiateKeys(hk, fill(0xa5, 32), fill(0x5a, 32))
	checkHex(t, "negotiate c2s", nc2s, vecNegC2S)
	checkHex(t, "negotiate s2c", ns2c, vecNegS2C)
}

// memSession builds a session over in-memory bytes with the vector keys.
func memSession(t testing.TB, isServer bool, c Cipher, in []byte) (*Session, *bytes.Buffer) {
	t.Helper()
	s := newSession(nil, bufio.NewReader(bytes.NewReader(in)), LengthPrefixed, isServer, vecSessionID, 0)
	out := &bytes.Buffer{}
	s.w = out
	if err := s.setCipher(c, unhex(t, vecShared)); err != nil {
		t.Fatal(err)
	}
	return s, out
}

func TestFrameVectors(t *testing.T) {
	// The client encrypts exactly the frames Python computed...
	cli, out := memSession(t, false, CipherChaCha20Poly1305, nil)
	for i := 0; i < 2; i++ {
		if err := cli.WriteFrame([]byte(vecMsg)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := hex.EncodeToString(out.Bytes()), vecFrameC2S0+vecFrameC2S1; got != want {
		t.Errorf("client frames\n got %s\nwant %s", got, want)
	}
	// ...and the server decrypts them.
	srv, _ := memSession(t, true, CipherChaCha20Poly1305, unhex(t, vecFrameC2S0+vecFrameC2S1))
	for i := 0; i < 2; i++ {
		p, err := srv.ReadFrame()
		if err != nil || string(p) != vecMsg {
			t.Fatalf("frame %d: %q, %v", i, p, err)
		}
	}

	hsrv, hout := memSession(t, true, CipherHMACPlain, nil)
	if err := hsrv.WriteFrame([]byte(vecMsg)); err != nil {
		t.Fatal(err)
	}
	checkHex(t, "hmac_plain frame", hout.Bytes(), vecHMACFrameS2C)
	hcli, _ := memSession(t, false, CipherHMACPlain, unhex(t, vecHMACFrameS2C))
	if p, err := hcli.ReadFrame(); err != nil || string(p) != vecMsg {
		t.Fatalf("hmac_plain read: %q, %v", p, err)
	}
}

func TestSkippedCounterRejected(t *testing.T) {
	srv, _ := memSession(t, true, CipherChaCha20Poly1305, unhex(t, vecFrameC2S1))
	_, err := srv.ReadFrame()
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("skipped counter: err = %v, want *FrameError", err)
	}
	// A replayed frame is rejected too.
	srv, _ = memSession(t, true, CipherChaCha20Poly1305, unhex(t, vecFrameC2S0+vecFrameC2S0))
	if _, err := srv.ReadFrame(); err != nil {
		t.Fatal(err)
	}
	_, err = srv.ReadFrame()
	if !errors.As(err, &fe) {
		t.Fatalf("replayed frame: err = %v, want *FrameError", err)
	}
	// The error sticks.
	if _, err2 := srv.ReadFrame(); err2 != err {
		t.Fatalf("second read: %v, want the same error", err2)
	}
}

func TestTamperedFramesRejected(t *testing.T) {
	for _, tc := range []struct {
		c     Cipher
		frame string
		flip  int
	}{
		{CipherChaCha20Poly1305, vecFrameC2S0, 20},
		{CipherChaCha20Poly1305, vecFrameC2S0, len(vecFrameC2S0)/2 - 1},
		{CipherHMACPlain, vecHMACFrameS2C, 10},
		{CipherHMACPlain, vecHMACFrameS2C, len(vecHMACFrameS2C)/2 - 1},
	} {
		b := unhex(t, tc.frame)
		b[tc.flip] ^= 1
		// chacha frames were written by the client, the hmac frame by the server.
		s, _ := memSession(t, tc.c == CipherChaCha20Poly1305, tc.c, b)
		var fe *FrameError
		if _, err := s.ReadFrame(); !errors.As(err, &fe) {
			t.Errorf("%s flip %d: err = %v, want *FrameError", tc.c, tc.flip, err)
		}
	}
	// Keys are per direction: the client cannot read its own frames back.
	s, _ := memSession(t, false, CipherChaCha20Poly1305, unhex(t, vecFrameC2S0))
	if _, err := s.ReadFrame(); err == nil {
		t.Error("client accepted a client→server frame")
	}
}
