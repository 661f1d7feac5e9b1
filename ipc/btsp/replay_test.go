package btsp

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// negotiatedPair is a client session reading what a server session wrote,
// both upgraded as btsp.negotiate does (random-nonce frames).
func negotiatedPair(t *testing.T, in []byte) (client, server *Session, out *bytes.Buffer) {
	t.Helper()
	c2s, s2c := NegotiateKeys(bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32))
	out = &bytes.Buffer{}
	server = newSession(nil, bufio.NewReader(bytes.NewReader(nil)), JSONLine, true, vecSessionID, 0)
	server.w = out
	if err := server.upgradeNegotiated(c2s, s2c); err != nil {
		t.Fatal(err)
	}
	client = newSession(nil, bufio.NewReader(bytes.NewReader(in)), JSONLine, false, vecSessionID, 0)
	client.w = io.Discard
	if err := client.upgradeNegotiated(s2c, c2s); err != nil {
		t.Fatal(err)
	}
	return client, server, out
}

// TestNegotiatedReplayRefused: on the negotiate path (random nonces, no
// counter) a frame sent again byte for byte authenticates; the session
// refuses it by its nonce, as a replay, and stays refused.
func TestNegotiatedReplayRefused(t *testing.T) {
	_, srv, out := negotiatedPair(t, nil)
	for _, m := range []string{`{"n":1}`, `{"n":2}`} {
		if err := srv.WriteFrame([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	frames := out.Bytes()
	first := frames[:4+int(frames[3])]
	in := append(append([]byte(nil), frames...), first...)
	cli, _, _ := negotiatedPair(t, in)
	for _, want := range []string{`{"n":1}`, `{"n":2}`} {
		if p, err := cli.ReadFrame(); err != nil || string(p) != want {
			t.Fatalf("read %q, %v; want %s", p, err, want)
		}
	}
	_, err := cli.ReadFrame()
	var fe *FrameError
	if !errors.As(err, &fe) || fe.Fault != FaultReplay {
		t.Fatalf("replayed frame: err = %v, want a replay *FrameError", err)
	}
	if _, err2 := cli.ReadFrame(); err2 != err {
		t.Fatalf("after the replay: %v, want the same error", err2)
	}
}

// TestNonceSetBound: the set of nonces is bounded; past the bound the
// session ends with ErrSessionExhausted, which is no security failure.
func TestNonceSetBound(t *testing.T) {
	var ns nonceSet
	n := func(b byte) []byte { return bytes.Repeat([]byte{b}, nonceSize) }
	for b := range byte(3) {
		if err := ns.add(n(b), 3); err != nil {
			t.Fatalf("nonce %d: %v", b, err)
		}
	}
	var fe *FrameError
	if err := ns.add(n(1), 3); !errors.As(err, &fe) || fe.Fault != FaultReplay {
		t.Fatalf("a nonce seen before: %v", err)
	}
	if err := ns.add(n(9), 3); !errors.Is(err, ErrSessionExhausted) || errors.As(err, &fe) {
		t.Fatalf("past the bound: %v", err)
	}
}

// TestCleartextInsideEncryptedSession: a JSON line where an encrypted or
// authenticated frame belongs is named as cleartext (a downgrade or an
// impostor), not as a 2 GB frame over the limit.
func TestCleartextInsideEncryptedSession(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","result":{"status":"alive"},"id":1}` + "\n")
	for _, c := range []Cipher{CipherChaCha20Poly1305, CipherHMACPlain} {
		s, _ := memSession(t, false, c, line)
		_, err := s.ReadFrame()
		var fe *FrameError
		var big *FrameTooLargeError
		if !errors.As(err, &fe) || fe.Fault != FaultCleartext || errors.As(err, &big) {
			t.Errorf("%s: err = %v, want a cleartext *FrameError", c, err)
		}
	}
	cli, _, _ := negotiatedPair(t, []byte("[{\"jsonrpc\":\"2.0\"}]\n"))
	var fe *FrameError
	if _, err := cli.ReadFrame(); !errors.As(err, &fe) || fe.Fault != FaultCleartext {
		t.Errorf("negotiated: err = %v, want a cleartext *FrameError", err)
	}
	// A plaintext length-prefixed session (null cipher) is no encrypted
	// session: a frame there is read as a length, as before.
	s := plainSession([]byte(`{"a":1}`), modePlainLP)
	if _, err := s.ReadFrame(); errors.As(err, &fe) {
		t.Errorf("null cipher: %v", err)
	}
}
