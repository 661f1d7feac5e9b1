package ipc_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// secureBenchConns dials a plain NDJSON primal and a BTSP primal with the
// given cipher, both through ipc.Dial, both answering health.liveness.
func secureBenchConns(b *testing.B, sec ipc.Security) (plain, secured *ipc.Conn) {
	b.Helper()
	seed := []byte(testFamilySeed)
	ps := startAt(b, "plain.sock", beardog().Config())
	ss := startAt(b, "beardog-fam.sock", btspPrimal(seed, ""))
	plain = mustDial(b, ps.Endpoint(), ipc.Options{})
	sec.Seed, sec.RequireBTSP = ipc.NewSeed(testFamilySeed), true
	secured = mustDial(b, ss.Endpoint(), ipc.Options{Security: sec})
	return plain, secured
}

func benchCall(b *testing.B, c *ipc.Conn) {
	if _, err := c.Call(context.Background(), "health.liveness", nil); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkBTSPRoundTrip measures one call round trip through ipc.Conn over
// a BTSP chacha20_poly1305 session and over plain NDJSON, interleaved in the
// same run, and reports both and their ratio (btsp-ns/op ÷ plain-ns/op).
func BenchmarkBTSPRoundTrip(b *testing.B) {
	for _, tc := range []struct {
		name string
		sec  ipc.Security
	}{
		{"chacha20_poly1305", ipc.Security{Cipher: btsp.CipherChaCha20Poly1305}},
		{"negotiated", ipc.Security{Negotiate: true}},
		{"null", ipc.Security{Cipher: btsp.CipherNull}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			plain, secured := secureBenchConns(b, tc.sec)
			for i := 0; i < 100; i++ { // warm both paths
				benchCall(b, plain)
				benchCall(b, secured)
			}
			var tPlain, tSecure time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				benchCall(b, plain)
				t1 := time.Now()
				benchCall(b, secured)
				t2 := time.Now()
				tPlain += t1.Sub(t0)
				tSecure += t2.Sub(t1)
			}
			b.StopTimer()
			b.ReportMetric(float64(tPlain.Nanoseconds())/float64(b.N), "plain-ns/op")
			b.ReportMetric(float64(tSecure.Nanoseconds())/float64(b.N), "btsp-ns/op")
			b.ReportMetric(float64(tSecure)/float64(tPlain), "ratio")
		})
	}
}

// BenchmarkBTSPDial measures connecting with a BTSP handshake (X25519,
// HKDF, HMAC) through ipc.Dial against a plain connect, then one call.
func BenchmarkBTSPDial(b *testing.B) {
	seed := []byte(testFamilySeed)
	ps := startAt(b, "plain.sock", beardog().Config())
	ss := startAt(b, "beardog-fam.sock", btspPrimal(seed, ""))
	run := func(b *testing.B, ep ipc.Endpoint, opts ipc.Options) {
		for i := 0; i < b.N; i++ {
			c, err := ipc.Dial(context.Background(), ep, opts)
			if err != nil {
				b.Fatal(err)
			}
			benchCall(b, c)
			c.Close()
		}
	}
	b.Run("plain", func(b *testing.B) { run(b, ps.Endpoint(), ipc.Options{}) })
	b.Run("btsp", func(b *testing.B) {
		run(b, ss.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true}})
	})
}

// BenchmarkOneShotAuto measures a one-shot call (dial, health.liveness,
// close) against a plain raw-NDJSON peer: with no Security at all (raw),
// with the default --prefix auto and nothing known (raw JSON first: one
// connection), and with a memory that says the prefix is wanted, which is
// what the earlier auto mode did on first contact (EC 01, the peer's parse
// error, a second connection and the resend).
func BenchmarkOneShotAuto(b *testing.B) {
	s := startAt(b, "plain.sock", beardog().Config())
	ep := s.Endpoint()
	yes := true
	for _, tc := range []struct {
		name string
		sec  func() ipc.Security
	}{
		{"raw", func() ipc.Security { return ipc.Security{} }},
		{"auto", func() ipc.Security { return ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()} }},
		{"prefix-first-then-raw", func() ipc.Security {
			m := ipc.NewEndpointMemory()
			m.Update(ep, func(f *ipc.EndpointFacts) { f.Prefix = &yes })
			return ipc.Security{Prefix: ipc.PrefixAuto, Memory: m}
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				sec := tc.sec()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				c, err := ipc.Dial(ctx, ep, ipc.Options{Security: sec})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Call(ctx, "health.liveness", nil); err != nil {
					b.Fatal(err)
				}
				c.Close()
				cancel()
			}
		})
	}
}
