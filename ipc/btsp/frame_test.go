package btsp

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plainSession is a session over in-memory input in the given wire mode.
func plainSession(in []byte, m wireMode) *Session {
	f := LengthPrefixed
	if m == modeNDJSON {
		f = JSONLine
	}
	s := newSession(nil, bufio.NewReader(bytes.NewReader(in)), f, true, vecSessionID, 0)
	s.w = io.Discard
	s.rmode, s.wmode = m, m
	return s
}

func TestOversizeLengthPrefixNoBigAllocation(t *testing.T) {
	for _, c := range []Cipher{CipherNull, CipherChaCha20Poly1305, CipherHMACPlain} {
		in := []byte{0xff, 0xff, 0xff, 0xf0, '{'}
		var s *Session
		if c == CipherNull {
			s = plainSession(in, modePlainLP)
		} else {
			s, _ = memSession(t, true, c, in)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := s.ReadFrame()
		runtime.ReadMemStats(&after)
		var big *FrameTooLargeError
		if !errors.As(err, &big) || big.Limit != DefaultMaxFrame {
			t.Fatalf("%s: err = %v, want a FrameTooLargeError with the 16 MiB limit", c, err)
		}
		if !strings.Contains(err.Error(), "16777216") {
			t.Errorf("error %q does not name the limit", err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("%s: allocated %d bytes for a refused frame", c, d)
		}
	}
}

func TestSetMaxFrame(t *testing.T) {
	frame := func(n int) []byte {
		b := []byte{0, 0, byte(n >> 8), byte(n)}
		return append(b, bytes.Repeat([]byte("a"), n)...)
	}
	s := plainSession(append(frame(100), frame(101)...), modePlainLP)
	s.SetMaxFrame(100)
	if p, err := s.ReadFrame(); err != nil || len(p) != 100 {
		t.Fatalf("100-byte frame: %d %v", len(p), err)
	}
	var big *FrameTooLargeError
	if _, err := s.ReadFrame(); !errors.As(err, &big) || big.Limit != 100 || big.Size != 101 {
		t.Fatalf("101-byte frame: %v", err)
	}

	// NDJSON: the default is 64 MiB; a line over the set limit fails, one at it passes.
	s = plainSession([]byte(strings.Repeat("b", 50)+"\r\n"+strings.Repeat("c", 51)+"\n"), modeNDJSON)
	s.SetMaxFrame(50)
	if p, err := s.ReadFrame(); err != nil || len(p) != 50 {
		t.Fatalf("50-byte line: %d %v", len(p), err)
	}
	if _, err := s.ReadFrame(); !errors.As(err, &big) || big.Limit != 50 {
		t.Fatalf("51-byte line: %v", err)
	}
	s = plainSession(nil, modeNDJSON)
	if s.limit(modeNDJSON) != DefaultMaxNDJSONFrame || s.limit(modePlainLP) != DefaultMaxFrame {
		t.Fatal("default limits")
	}

	// A long line never buffers much more than the limit.
	s = plainSession(bytes.Repeat([]byte("x"), 8<<20), modeNDJSON)
	s.SetMaxFrame(1 << 20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := s.ReadFrame()
	runtime.ReadMemStats(&after)
	if !errors.As(err, &big) {
		t.Fatalf("8 MiB line: %v", err)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 4<<20 {
		t.Errorf("allocated %d bytes for a refused 1 MiB+ line", d)
	}
}

func TestNDJSONFraming(t *testing.T) {
	s := plainSession([]byte("\n  \n{\"a\":1}\r\n{\"b\":2}"), modeNDJSON)
	for _, want := range []string{`{"a":1}`, `{"b":2}`} {
		p, err := s.ReadFrame()
		if err != nil || string(p) != want {
			t.Fatalf("got %q %v, want %s", p, err, want)
		}
	}
	if _, err := s.ReadFrame(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	var out bytes.Buffer
	s.w = &out
	if err := s.WriteFrame([]byte("{\n \"a\": 1\n}")); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFrame([]byte("not json\n")); err == nil {
		t.Error("wrote a non-JSON message with a newline on NDJSON")
	}
	if out.String() != "{\"a\":1}\n" {
		t.Errorf("wire %q", out.String())
	}
}

func TestShortAndTruncatedFrames(t *testing.T) {
	var fe *FrameError
	s, _ := memSession(t, true, CipherChaCha20Poly1305, []byte{0, 0, 0, 5, 1, 2, 3, 4, 5})
	if _, err := s.ReadFrame(); !errors.As(err, &fe) {
		t.Errorf("short chacha frame: %v", err)
	}
	s, _ = memSession(t, false, CipherHMACPlain, []byte{0, 0, 0, 3, 1, 2, 3})
	if _, err := s.ReadFrame(); !errors.As(err, &fe) {
		t.Errorf("short hmac frame: %v", err)
	}
	frame, _ := hex.DecodeString(vecFrameC2S0)
	s, _ = memSession(t, true, CipherChaCha20Poly1305, frame[:len(frame)-3])
	if _, err := s.ReadFrame(); err != io.ErrUnexpectedEOF {
		t.Errorf("truncated frame: %v", err)
	}
	// Empty plaintext frames are skipped.
	s = plainSession([]byte{0, 0, 0, 0, 0, 0, 0, 2, '{', '}'}, modePlainLP)
	if p, err := s.ReadFrame(); err != nil || string(p) != "{}" {
		t.Errorf("after empty frame: %q %v", p, err)
	}
}

func TestParseCipher(t *testing.T) {
	for in, want := range map[string]Cipher{
		"": CipherNull, "null": CipherNull, "NULL": CipherNull,
		"chacha20_poly1305": CipherChaCha20Poly1305, "chacha20": CipherChaCha20Poly1305,
		"chacha20-poly1305": CipherChaCha20Poly1305, "aes-gcm": CipherChaCha20Poly1305,
		"hmac_plain": CipherHMACPlain,
	} {
		if got := ParseCipher(in); got != want {
			t.Errorf("ParseCipher(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestSeedCandidates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"plain family seed", []string{"plain family seed"}},
		{"deadbeefdeadbeef", []string{"deadbeefdeadbeef", "\xde\xad\xbe\xef\xde\xad\xbe\xef"}},
		{"deadbeef", []string{"deadbeef"}}, // too short to be taken for hex
		{"aGVsbG8gd29ybGQhIQ==", []string{"aGVsbG8gd29ybGQhIQ==", "hello world!!"}},
		{"aGVsbG8gd29ybGQhIQ", []string{"aGVsbG8gd29ybGQhIQ", "hello world!!"}},
		{"abc", []string{"abc"}},
		{"family-seed-2026-westgate", []string{"family-seed-2026-westgate"}},
	} {
		got := SeedCandidates(tc.in)
		if len(got) != len(tc.want) {
			t.Errorf("SeedCandidates(%q) = %q, want %q", tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if string(got[i]) != tc.want[i] {
				t.Errorf("SeedCandidates(%q)[%d] = %q, want %q", tc.in, i, got[i], tc.want[i])
			}
		}
	}
}

func TestReadSeedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "seed")
	if err := os.WriteFile(p, []byte("  my-family-seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSeedFile(p)
	if err != nil || s != "my-family-seed" {
		t.Fatalf("%q %v", s, err)
	}
	os.Chmod(p, 0o644)
	s, err = ReadSeedFile(p)
	var ins *InsecureSeedFileError
	if !errors.As(err, &ins) || s != "" || strings.Contains(err.Error(), "my-family-seed") {
		t.Fatalf("group-readable: %q %v", s, err)
	}
	os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600)
	if _, err := ReadSeedFile(filepath.Join(dir, "empty")); err == nil {
		t.Error("empty seed file accepted")
	}
	if _, err := ReadSeedFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing seed file accepted")
	}
	// A named pipe in place of the seed file is refused at once, not
	// waited on.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadSeedFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("named pipe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a named pipe as the seed file hung")
	}
}

func TestHandshakeErrorText(t *testing.T) {
	e := &HandshakeError{Reason: ReasonFamilyVerification, Step: "challenge response", FromPeer: true}
	if !e.WrongSeed() || !strings.Contains(e.Error(), "family_verification") || !strings.Contains(e.Error(), "peer refused") {
		t.Errorf("%q", e)
	}
	for in, want := range map[string]string{
		"a\x1b[2Jb\u00e9":                     `a\x1b[2Jbé`,
		"cipher\u202e\u2066x\u200b":           `cipher\u202e\u2066x\u200b`,
		"\xff\x9b" + strings.Repeat("z", 100): `\xff\x9b` + strings.Repeat("z", 53) + "…",
	} {
		if got := sanitize(in); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}
