package btsp

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// benchMsg is a typical JSON-RPC request of about 256 bytes.
var benchMsg = []byte(`{"jsonrpc":"2.0","method":"capabilities.list","params":{"filter":"` + strings.Repeat("x", 180) + `"},"id":12345}`)

// BenchmarkRoundTrip measures one request/echo round trip between a client
// Session and a server Session over a Unix socket, after the handshake, for
// each wire. "json-line/null" is plain NDJSON on the wire: the baseline for
// ratios.
func BenchmarkRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  ClientConfig
	}{
		{"json-line/null", ClientConfig{Framing: JSONLine, Cipher: CipherNull}},
		{"length-prefixed/null", ClientConfig{Framing: LengthPrefixed, Cipher: CipherNull}},
		{"chacha20_poly1305", ClientConfig{Framing: LengthPrefixed, Cipher: CipherChaCha20Poly1305}},
		{"hmac_plain", ClientConfig{Framing: LengthPrefixed, Cipher: CipherHMACPlain}},
		{"negotiated-chacha20-poly1305", ClientConfig{Framing: JSONLine, Cipher: CipherNull, Negotiate: true}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := tc.cfg
			cfg.Seed = testSeed
			cc, sc := unixPair(b)
			ctx := context.Background()
			echoDone := make(chan error, 1)
			go func() {
				ss, err := Server(ctx, sc, ServerConfig{Seed: testSeed})
				if err != nil {
					echoDone <- err
					return
				}
				defer ss.Close()
				for {
					p, err := ss.ReadFrame()
					if err != nil {
						echoDone <- nil
						return
					}
					if err := ss.WriteFrame(p); err != nil {
						echoDone <- err
						return
					}
				}
			}()
			cs, err := Client(ctx, cc, cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(benchMsg)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := cs.WriteFrame(benchMsg); err != nil {
					b.Fatal(err)
				}
				if _, err := cs.ReadFrame(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cs.Close()
			if err := <-echoDone; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkHandshake measures a whole handshake over a fresh Unix socket pair.
func BenchmarkHandshake(b *testing.B) {
	for _, f := range []Framing{JSONLine, LengthPrefixed} {
		b.Run(f.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				cs, ss, cerr, serr := handshake(b, ClientConfig{Seed: testSeed, Framing: f, Cipher: CipherChaCha20Poly1305},
					ServerConfig{Seed: testSeed}, 0)
				if cerr != nil || serr != nil {
					b.Fatal(cerr, serr)
				}
				cs.Close()
				ss.Close()
			}
		})
	}
}

var _ = fmt.Sprint
