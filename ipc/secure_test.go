package ipc_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const testFamilySeed = "family-seed-for-ipc-tests-0123456789"

// startAt serves cfg on a socket with the given file name in a fresh dir.
func startAt(t testing.TB, name string, cfg ipctest.Config) *ipctest.Server {
	t.Helper()
	s, err := ipctest.Listen(filepath.Join(tempDir(t), name), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// btspPrimal is a family-scoped primal behind BTSPGate.
func btspPrimal(seed []byte, cipher btsp.Cipher) ipctest.Config {
	cfg := beardog().Config()
	cfg.Accept = ipctest.BTSPGate(btsp.ServerConfig{Seed: seed, Cipher: cipher}, false)
	return cfg
}

// cleartextRecorder wraps an Accept hook: every cleartext connection has
// every line it sends recorded (until the client closes), after the
// "BTSP handshake required" answer to its first line.
type cleartextRecorder struct {
	mu    sync.Mutex
	lines []string
	seed  []byte
}

func (r *cleartextRecorder) accept(c net.Conn, br *bufio.Reader) (ipc.Framer, bool) {
	if btsp.IsHandshakeStart(peekStart(br)) {
		return ipctest.BTSPGate(btsp.ServerConfig{Seed: r.seed}, false)(c, br)
	}
	answered := false
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			r.mu.Lock()
			r.lines = append(r.lines, strings.TrimRight(line, "\n"))
			r.mu.Unlock()
		}
		if err != nil {
			return nil, false
		}
		if !answered {
			_, _ = c.Write([]byte(ipctest.BTSPRequiredLine + "\n"))
			answered = true
		}
	}
}

// peekStart returns the first line the client sent, or what is buffered
// of at least 5 bytes.
func peekStart(br *bufio.Reader) []byte {
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if err != nil {
			return b
		}
		if n >= 5 && (bytes.IndexByte(b, '\n') >= 0 || n >= 512 || br.Buffered() <= n) {
			return b
		}
	}
}

func (r *cleartextRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lines)
}

func dialErr(t testing.TB, ep ipc.Endpoint, opts ipc.Options) (*ipc.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ep, opts)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func mustDial(t testing.TB, ep ipc.Endpoint, opts ipc.Options) *ipc.Conn {
	t.Helper()
	c, err := dialErr(t, ep, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustLive(t testing.TB, c *ipc.Conn) {
	t.Helper()
	resp, err := c.Call(ctxT(t, 10*time.Second), "health.liveness", nil)
	if err != nil {
		t.Fatalf("health.liveness over %s: %v", c.Transport(), err)
	}
	if !strings.Contains(string(resp.Result), "alive") {
		t.Fatalf("unexpected answer %s", resp.Result)
	}
}

// TestBTSPEveryFramingAndCipher runs calls through ipc.Dial against the
// ipctest BTSP server in every framing × cipher combination, and a
// btsp.negotiate upgrade.
func TestBTSPEveryFramingAndCipher(t *testing.T) {
	checkNoLeak(t)
	seed := []byte(testFamilySeed)
	s := startAt(t, "beardog-fam.sock", btspPrimal(seed, ""))
	cases := []struct {
		framing   btsp.Framing
		cipher    string
		want      string
		encrypted bool
		weakness  string // what Conn.Session says the session lacks
	}{
		{btsp.JSONLine, "auto", "unix+btsp(chacha20-poly1305 negotiated)", true, ""},
		{btsp.LengthPrefixed, "auto", "unix+btsp(chacha20_poly1305, length-prefixed)", true, ""},
		{btsp.JSONLine, "null", "unix+btsp(null, server not authenticated)", false, "cleartext"},
		{btsp.JSONLine, "chacha20_poly1305", "unix+btsp(chacha20_poly1305, server not authenticated)", true, "unauthenticated"},
		{btsp.JSONLine, "hmac_plain", "unix+btsp(hmac_plain, server not authenticated)", false, "unauthenticated, not encrypted"},
		{btsp.JSONLine, "negotiate", "unix+btsp(chacha20-poly1305 negotiated)", true, ""},
		{btsp.LengthPrefixed, "null", "unix+btsp(null, length-prefixed)", false, "cleartext"},
		{btsp.LengthPrefixed, "chacha20_poly1305", "unix+btsp(chacha20_poly1305, length-prefixed)", true, ""},
		{btsp.LengthPrefixed, "hmac_plain", "unix+btsp(hmac_plain, length-prefixed)", false, "not encrypted"},
	}
	for _, tc := range cases {
		for _, prefix := range []ipc.PrefixMode{ipc.PrefixOff, ipc.PrefixOn} {
			t.Run(fmt.Sprintf("%s/%s/prefix-%s", tc.framing, tc.cipher, prefix), func(t *testing.T) {
				cipher, negotiate, err := ipc.ParseBTSPCipher(tc.cipher)
				if err != nil {
					t.Fatal(err)
				}
				mem := ipc.NewEndpointMemory()
				// The memory says which framing worked last time: that one goes first.
				mem.Update(s.Endpoint(), func(f *ipc.EndpointFacts) { f.Framing = tc.framing.String() })
				var trace traceLog
				c := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add, Security: ipc.Security{
					Seed: ipc.NewSeed(testFamilySeed), Cipher: cipher, Negotiate: negotiate,
					RequireBTSP: true, Prefix: prefix, Memory: mem}})
				mustLive(t, c)
				resp, err := c.Call(ctxT(t, 5*time.Second), "crypto.sign_ed25519", map[string]string{"message": "aGk="})
				if err != nil || !strings.Contains(string(resp.Result), "aGk=") {
					t.Fatalf("echo: %v %s", err, resp.Result)
				}
				if got := c.Transport(); got != tc.want {
					t.Fatalf("transport %q, want %q", got, tc.want)
				}
				ss, ok := c.Session()
				if !ok || !ss.BTSP || ss.Encrypted != tc.encrypted || ss.Weakness() != tc.weakness {
					t.Fatalf("session %+v (ok %v, weakness %q), want encrypted %v, weakness %q", ss, ok, ss.Weakness(), tc.encrypted, tc.weakness)
				}
				if strings.Contains(trace.String(), "cleartext") && !strings.Contains(trace.String(), "BTSP session") {
					t.Fatalf("unexpected trace:\n%s", trace.String())
				}
				// A session weaker than the default is said loudly.
				weak := strings.Contains(tc.want, "not authenticated") || tc.cipher == "null"
				if got := strings.Contains(trace.String(), "WARNING"); got != weak {
					t.Fatalf("warning in the trace: %v, want %v:\n%s", got, weak, trace.String())
				}
			})
		}
	}
}

// TestBTSPFramingFallback: a server that only speaks the length-prefixed
// handshake closes on a JSON-line hello; the client falls back and
// remembers the framing.
func TestBTSPFramingFallback(t *testing.T) {
	seed := []byte(testFamilySeed)
	cfg := beardog().Config()
	gate := ipctest.BTSPGate(btsp.ServerConfig{Seed: seed}, false)
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		b, _ := r.Peek(2)
		if len(b) > 0 && (b[0] == '{' || b[0] == 0xEC && len(b) > 1 && b[1] == 0x03) {
			return nil, false // not our framing: close without a word
		}
		return gate(c, r)
	}
	s := startAt(t, "p.sock", cfg)
	mem := ipc.NewEndpointMemory()
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Memory: mem}})
	mustLive(t, c)
	if got := c.Transport(); got != "unix+btsp(chacha20_poly1305, length-prefixed)" {
		t.Fatalf("transport %q", got)
	}
	if f, _ := mem.Get(s.Endpoint()); f.Framing != "length-prefixed" || !f.BTSPRequired {
		t.Fatalf("memory %+v", f)
	}
}

// TestBTSPAfterRefusalTransparent: a cleartext call refused with "BTSP
// handshake required" is resent over a BTSP session when a seed is set.
func TestBTSPAfterRefusalTransparent(t *testing.T) {
	checkNoLeak(t)
	s := startAt(t, "p.sock", btspPrimal([]byte(testFamilySeed), ""))
	mem := ipc.NewEndpointMemory()
	var trace traceLog
	c := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add, Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Memory: mem}})
	if got := c.Transport(); got != "unix" {
		t.Fatalf("before: transport %q", got)
	}
	if ss, ok := c.Session(); ok {
		t.Fatalf("before: session %+v", ss)
	}
	mustLive(t, c)
	if got := c.Transport(); got != "unix+btsp(chacha20-poly1305 negotiated)" {
		t.Fatalf("after: transport %q", got)
	}
	if ss, ok := c.Session(); !ok || !ss.Authenticated || !ss.Encrypted || ss.Weakness() != "" {
		t.Fatalf("after: session %+v (ok %v)", ss, ok)
	}
	if f, _ := mem.Get(s.Endpoint()); !f.BTSPRequired || f.Framing != "json-line" {
		t.Fatalf("memory %+v", f)
	}
	if !strings.Contains(trace.String(), "reconnecting with a BTSP handshake and resending 1 message") {
		t.Fatalf("trace does not tell the reconnect:\n%s", trace.String())
	}
	// Many calls at once over the session.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := c.Call(ctxT(t, 5*time.Second), "crypto.verify_ed25519", map[string]int{"i": i}); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestRefusalBeforeAnyCall: a peer that demands BTSP as soon as a client
// connects (before any call) is reached over BTSP all the same.
func TestRefusalBeforeAnyCall(t *testing.T) {
	cfg := beardog().Config()
	gate := ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(testFamilySeed)}, false)
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := r.Peek(1)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil { // the client is waiting: refuse at once
			_, _ = c.Write([]byte(ipctest.BTSPRequiredLine + "\n"))
			return nil, false
		}
		return gate(c, r)
	}
	s := startAt(t, "p.sock", cfg)
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed)}})
	select {
	case <-time.After(200 * time.Millisecond): // let the refusal arrive and the reconnect happen
	case <-c.Done():
		t.Fatalf("connection ended: %v", c.Err())
	}
	mustLive(t, c)
}

// TestNoCleartextToBTSPOnlyEndpoint proves, with a server that records every
// cleartext line it receives, that once an endpoint is known to require BTSP
// no method call reaches it in cleartext again.
func TestNoCleartextToBTSPOnlyEndpoint(t *testing.T) {
	checkNoLeak(t)
	rec := &cleartextRecorder{seed: []byte(testFamilySeed)}
	cfg := beardog().Config()
	cfg.Accept = rec.accept
	s := startAt(t, "beardog-fam-1.sock", cfg)
	ep := s.Endpoint()
	mem := ipc.NewEndpointMemory()

	// 1. Nothing known, no seed: the first call is the only cleartext line.
	c, err := dialErr(t, ep, ipc.Options{Security: ipc.Security{Memory: mem}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Call(ctxT(t, 5*time.Second), "crypto.sign_ed25519", nil)
	var be *ipc.BTSPRequiredError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "FAMILY_SEED") {
		t.Fatalf("want *BTSPRequiredError naming FAMILY_SEED, got %v", err)
	}
	for i := 0; i < 3; i++ { // refused locally, never sent
		if _, err := c.Call(ctxT(t, time.Second), "crypto.sign_ed25519", nil); !errors.As(err, &be) {
			t.Fatalf("call %d after the demand: %v", i, err)
		}
	}
	c.Close()
	if f, _ := mem.Get(ep); !f.BTSPRequired {
		t.Fatalf("memory does not know BTSP is required: %+v", f)
	}

	// 2. Known now; without a seed Dial refuses before connecting.
	for _, prefix := range []ipc.PrefixMode{ipc.PrefixOff, ipc.PrefixAuto, ipc.PrefixOn} {
		if _, err := dialErr(t, ep, ipc.Options{Security: ipc.Security{Memory: mem, Prefix: prefix}}); !errors.As(err, &be) {
			t.Fatalf("dial without a seed: %v", err)
		}
	}
	// 3. Announced (transport_security) or family-scoped, with a fresh memory.
	if _, err := dialErr(t, ep, ipc.Options{Security: ipc.Security{RequireBTSP: true, Prefix: ipc.PrefixAuto}}); !errors.As(err, &be) {
		t.Fatalf("announced, no seed: %v", err)
	}
	for _, sec := range []ipc.Security{
		{Seed: ipc.NewSeed(testFamilySeed), Memory: mem, Prefix: ipc.PrefixAuto},
		{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true},
		{Seed: ipc.NewSeed(testFamilySeed), Family: "fam-1", Prefix: ipc.PrefixAuto},
	} {
		c := mustDial(t, ep, ipc.Options{Security: sec})
		mustLive(t, c)
		if !strings.Contains(c.Transport(), "+btsp(") {
			t.Fatalf("transport %q", c.Transport())
		}
		c.Close()
	}
	s.Close() // waits for the server's goroutines: every line is recorded
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.lines) != 1 || !strings.Contains(rec.lines[0], "crypto.sign_ed25519") {
		t.Fatalf("cleartext lines received: %q (want only the first call)", rec.lines)
	}
}

func TestWrongSeedFailsCleanly(t *testing.T) {
	s := startAt(t, "p.sock", btspPrimal([]byte("the-real-family-seed-0123456789"), ""))
	ep := s.Endpoint()
	mem := ipc.NewEndpointMemory()
	// Discovered on the first call.
	c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Memory: mem}})
	_, err := c.Call(ctxT(t, 10*time.Second), "health.liveness", nil)
	var he *btsp.HandshakeError
	if !errors.As(err, &he) || !he.WrongSeed() {
		t.Fatalf("want a family_verification *btsp.HandshakeError, got %v", err)
	}
	// Known: Dial itself fails.
	_, err = dialErr(t, ep, ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Memory: mem}})
	if !errors.As(err, &he) || !he.WrongSeed() {
		t.Fatalf("want a family_verification *btsp.HandshakeError from Dial, got %v", err)
	}
}

// TestSeedCandidates: a hex-looking FAMILY_SEED whose decoding is the
// server's seed works on the second candidate, on a new connection.
func TestSeedCandidates(t *testing.T) {
	raw := []byte("sixteen-byte-key-plus-more")
	s := startAt(t, "p.sock", btspPrimal(raw, ""))
	var trace traceLog
	c := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add, Security: ipc.Security{Seed: ipc.NewSeed(hex.EncodeToString(raw)), RequireBTSP: true}})
	mustLive(t, c)
	if !strings.Contains(trace.String(), "trying the next reading of the seed") {
		t.Fatalf("trace:\n%s", trace.String())
	}
}

// TestSecretsNeverShown: a sentinel seed never appears in errors, traces or
// any rendering of the options, whether the handshake succeeds or fails.
func TestSecretsNeverShown(t *testing.T) {
	const sentinel = "SENTINEL-seed-7f3a9c-never-print-me"
	forms := []string{sentinel, hex.EncodeToString([]byte(sentinel)), base64.StdEncoding.EncodeToString([]byte(sentinel)), "7f3a9c"}
	check := func(where, s string) {
		t.Helper()
		for _, f := range forms {
			if strings.Contains(s, f) {
				t.Fatalf("%s shows the seed (%q):\n%s", where, f, s)
			}
		}
	}
	for _, serverSeed := range []string{sentinel, "another-family-seed-entirely"} {
		s := startAt(t, "p.sock", btspPrimal([]byte(serverSeed), ""))
		var trace traceLog
		opts := ipc.Options{Trace: trace.add, Security: ipc.Security{Seed: ipc.NewSeed(sentinel), Memory: ipc.NewEndpointMemory()}}
		c, err := dialErr(t, s.Endpoint(), opts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Call(ctxT(t, 10*time.Second), "health.liveness", nil)
		if err != nil {
			check("the error", err.Error())
			check("the error (%+v)", fmt.Sprintf("%+v %#v", err, err))
		}
		c.Close()
		_, err = dialErr(t, s.Endpoint(), opts)
		if err != nil {
			check("the dial error", err.Error())
		}
		check("the trace", trace.String())
		check("the options", fmt.Sprintf("%v %+v %#v %s %q %x", opts, opts, opts, opts.Security.Seed, opts.Security.Seed, opts.Security.Seed))
		j, _ := json.Marshal(opts.Security)
		check("the options as JSON", string(j))
		f, _ := opts.Security.Memory.Get(s.Endpoint())
		check("the memory", fmt.Sprintf("%+v", f))
	}
}

// TestFamilyNameNeverFallsBackToCleartext: a socket named like a
// family-scoped one whose peer does not speak BTSP gets handshake attempts
// only, never the call in cleartext, and the dial fails with a
// *btsp.HandshakeError (exit 5); the memory learns nothing that would
// lower the guard later.
func TestFamilyNameNeverFallsBackToCleartext(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	cfg := beardog().Config()
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		line, err := r.ReadString('\n')
		mu.Lock()
		lines = append(lines, line)
		mu.Unlock()
		if err != nil {
			return nil, false
		}
		if btsp.IsHandshakeStart([]byte(line)) {
			_, _ = c.Write([]byte(`{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}` + "\n"))
			return nil, false
		}
		_, _ = c.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"status":"alive"}}` + "\n"))
		return nil, true
	}
	s := startAt(t, "songbird-fam.sock", cfg)
	mem := ipc.NewEndpointMemory()
	for _, sec := range []ipc.Security{
		{Seed: ipc.NewSeed(testFamilySeed), Family: "fam", Memory: mem, Prefix: ipc.PrefixAuto},
		{Seed: ipc.NewSeed(testFamilySeed), FamilyScoped: true, Memory: mem, Prefix: ipc.PrefixAuto},
	} {
		_, err := dialErr(t, s.Endpoint(), ipc.Options{Security: sec})
		var he *btsp.HandshakeError
		if !errors.As(err, &he) {
			t.Fatalf("want a *btsp.HandshakeError, got %v", err)
		}
		if !strings.Contains(err.Error(), "nothing was sent in cleartext") {
			t.Fatalf("error does not say so: %v", err)
		}
	}
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lines {
		if strings.Contains(l, `"jsonrpc"`) {
			t.Fatalf("cleartext JSON-RPC reached the family-scoped socket: %q", l)
		}
	}
	if len(lines) == 0 {
		t.Fatal("no handshake was tried")
	}
}

func prefixPrimal(policy ipctest.PrefixPolicy) ipctest.Config {
	cfg := beardog().Config()
	cfg.Accept = ipctest.RiboCipher(policy, "beardog", nil)
	return cfg
}

func TestRiboCipherPrefix(t *testing.T) {
	checkNoLeak(t)
	yes, no := true, false
	cases := []struct {
		name    string
		policy  ipctest.PrefixPolicy
		mode    ipc.PrefixMode
		known   *bool // what the memory says before
		want    *bool // what it says after (nil: unchanged/unknown)
		wantErr string
		desc    string
	}{
		{"required/auto", ipctest.PrefixRequired, ipc.PrefixAuto, nil, &yes, "", "unix+ribocipher"},
		{"required/auto-stale", ipctest.PrefixRequired, ipc.PrefixAuto, &no, &yes, "", "unix+ribocipher"},
		{"required/on", ipctest.PrefixRequired, ipc.PrefixOn, nil, nil, "", "unix+ribocipher"},
		{"required/off", ipctest.PrefixRequired, ipc.PrefixOff, nil, nil, "-32002", "unix"},
		{"rejected/auto", ipctest.PrefixRejected, ipc.PrefixAuto, nil, &no, "", "unix"},
		{"rejected/auto-known", ipctest.PrefixRejected, ipc.PrefixAuto, &no, &no, "", "unix"},
		// --prefix on to a peer that cannot parse the prefixed line: the
		// call gets the parse error, and the memory learns the prefix is
		// not wanted (it recorded "the prefix works").
		{"rejected/on", ipctest.PrefixRejected, ipc.PrefixOn, nil, &no, "-32700", "unix+ribocipher"},
		{"rejected/off", ipctest.PrefixRejected, ipc.PrefixOff, nil, nil, "", "unix"},
		// A silent drop proves nothing: no resend, the memory is unchanged,
		// the error hints at --prefix on.
		{"drop/auto", ipctest.PrefixDropWithout, ipc.PrefixAuto, nil, nil, "--prefix on", "unix"},
		{"drop/auto-stale", ipctest.PrefixDropWithout, ipc.PrefixAuto, &no, &no, "--prefix on", "unix"},
		{"drop/on", ipctest.PrefixDropWithout, ipc.PrefixOn, nil, &yes, "", "unix+ribocipher"},
		{"drop/off", ipctest.PrefixDropWithout, ipc.PrefixOff, nil, nil, "closed", "unix"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startAt(t, "p.sock", prefixPrimal(tc.policy))
			mem := ipc.NewEndpointMemory()
			if tc.known != nil {
				k := *tc.known
				mem.Update(s.Endpoint(), func(f *ipc.EndpointFacts) { f.Prefix = &k })
			}
			c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Prefix: tc.mode, Memory: mem}})
			resp, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want an error with %q, got %v %v", tc.wantErr, resp, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := c.Transport(); got != tc.desc {
				t.Fatalf("transport %q, want %q", got, tc.desc)
			}
			f, _ := mem.Get(s.Endpoint())
			if tc.want != nil && (f.Prefix == nil || *f.Prefix != *tc.want) {
				t.Fatalf("memory %+v, want prefix %v", f, *tc.want)
			}
			if tc.want == nil && tc.known == nil && f.Prefix != nil && tc.mode != ipc.PrefixOn {
				t.Fatalf("memory %+v, want no prefix fact", f)
			}
			// A second connection goes straight to what worked.
			if tc.wantErr == "" {
				c.Close()
				var trace traceLog
				c2 := mustDial(t, s.Endpoint(), ipc.Options{Trace: trace.add, Security: ipc.Security{Prefix: tc.mode, Memory: mem}})
				mustLive(t, c2)
				if strings.Contains(trace.String(), "reconnecting") {
					t.Fatalf("second connection reconnected:\n%s", trace.String())
				}
			}
		})
	}
}

// TestPrefixAndBTSP: a primal that requires the prefix and BTSP is reached
// in auto mode with the handshake's own prefix (EC 03).
func TestPrefixAndBTSP(t *testing.T) {
	seed := []byte(testFamilySeed)
	cfg := beardog().Config()
	cfg.Accept = ipctest.RiboCipher(ipctest.PrefixRequired, "beardog", ipctest.BTSPGate(btsp.ServerConfig{Seed: seed}, false))
	s := startAt(t, "p.sock", cfg)
	mem := ipc.NewEndpointMemory()
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixAuto, Memory: mem}})
	mustLive(t, c)
	if got := c.Transport(); got != "unix+btsp(chacha20-poly1305 negotiated)" {
		t.Fatalf("transport %q", got)
	}
	f, _ := mem.Get(s.Endpoint())
	if !f.BTSPRequired || f.BTSPPrefix == nil || !*f.BTSPPrefix || f.Prefix == nil || !*f.Prefix {
		t.Fatalf("memory %+v", f)
	}
}

func TestEndpointMemoryFile(t *testing.T) {
	dir := tempDir(t)
	state := filepath.Join(dir, "state")
	m, err := ipc.OpenEndpointMemory(state)
	if err != nil {
		t.Fatal(err)
	}
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/x/beardog-fam.sock"}
	yes := true
	m.Update(ep, func(f *ipc.EndpointFacts) { f.BTSPRequired, f.Prefix, f.Framing = true, &yes, "json-line" })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	path := ipc.EndpointRecordPath(state, ep)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", st, err)
	}
	m2, err := ipc.OpenEndpointMemory(state)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := m2.Get(ep)
	if !ok || !f.BTSPRequired || f.Prefix == nil || !*f.Prefix || f.Framing != "json-line" || f.Updated.IsZero() {
		t.Fatalf("reloaded %+v %v", f, ok)
	}
	// A broken record is no facts, not fatal.
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	m3, _ := ipc.OpenEndpointMemory(state)
	if _, ok := m3.Get(ep); ok {
		t.Fatal("a broken record yielded facts")
	}
}

func TestFamilyScoped(t *testing.T) {
	cases := []struct {
		path, family string
		want         bool
	}{
		{"/run/biomeos/beardog-westgate-tower-155f.sock", "westgate-tower-155f", true},
		{"/run/biomeos/neural-api-westgate-tower-155f.sock", "westgate-tower-155f", true},
		{"/run/biomeos/beardog.sock", "westgate-tower-155f", false},
		{"/run/biomeos/-fam.sock", "fam", false},
		{"/run/biomeos/beardog-fam.sock", "", false},
		{"/run/biomeos/beardog-default.sock", "default", false},
		{"/run/biomeos/beardog-fam.sock.bak", "fam", false},
	}
	for _, tc := range cases {
		if got := ipc.FamilyScoped(ipc.Endpoint{Transport: ipc.Unix, Path: tc.path}, tc.family); got != tc.want {
			t.Errorf("FamilyScoped(%s, %s) = %v", tc.path, tc.family, got)
		}
	}
}

func TestParseModes(t *testing.T) {
	for in, want := range map[string]ipc.PrefixMode{"auto": ipc.PrefixAuto, "on": ipc.PrefixOn, "off": ipc.PrefixOff, "": ipc.PrefixAuto} {
		if got, err := ipc.ParsePrefixMode(in); err != nil || got != want {
			t.Errorf("ParsePrefixMode(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ipc.ParsePrefixMode("sometimes"); err == nil {
		t.Error("want an error")
	}
	for in, want := range map[string]btsp.Cipher{"chacha20_poly1305": btsp.CipherChaCha20Poly1305, "": "", "auto": "", "null": btsp.CipherNull, "hmac_plain": btsp.CipherHMACPlain} {
		if got, neg, err := ipc.ParseBTSPCipher(in); err != nil || got != want || neg {
			t.Errorf("ParseBTSPCipher(%q) = %v %v %v", in, got, neg, err)
		}
	}
	if _, neg, err := ipc.ParseBTSPCipher("negotiate"); err != nil || !neg {
		t.Error("negotiate")
	}
	if _, _, err := ipc.ParseBTSPCipher("rot13"); err == nil {
		t.Error("an unknown cipher must be refused")
	}
}

// traceLog collects trace events as text.
type traceLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *traceLog) add(ev ipc.TraceEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, "%s %s %s\n", ev.Dir, ev.Data, ev.Warning)
}

func (l *traceLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPushBeforeRefusal: a peer that pushes a notification before it
// answers the prefix with a parse error is still reached without the
// prefix, and the notification is delivered.
func TestPushBeforeRefusal(t *testing.T) {
	cfg := beardog().Config()
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		b, err := r.Peek(1)
		if err == nil && b[0] == 0xEC {
			_, _ = c.Write([]byte(`{"jsonrpc":"2.0","method":"health.heartbeat","params":{"n":1}}` + "\n"))
			_, _ = r.ReadString('\n')
			_, _ = c.Write([]byte(ipctest.ParseErrorLine + "\n"))
			return nil, false
		}
		return nil, true
	}
	s := startAt(t, "p.sock", cfg)
	mem := ipc.NewEndpointMemory()
	yes := true // the memory says the prefix is wanted: it goes first
	mem.Update(s.Endpoint(), func(f *ipc.EndpointFacts) { f.Prefix = &yes })
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: mem}})
	mustLive(t, c)
	if f, _ := mem.Get(s.Endpoint()); f.Prefix == nil || *f.Prefix {
		t.Fatalf("memory %+v", f)
	}
	select {
	case m := <-c.Incoming():
		if m.Method != "health.heartbeat" {
			t.Fatalf("pushed: %s", m.Raw)
		}
	default:
		t.Fatal("the pushed notification was not delivered")
	}
}

// TestCancelUnblocksWriteBeforeSettling: a peer that never reads cannot hang
// a call whose context is cancelled while the connection is unsettled.
func TestCancelUnblocksWriteBeforeSettling(t *testing.T) {
	checkNoLeak(t)
	s := startAt(t, "p.sock", ipctest.Config{Behavior: ipctest.Behavior{NeverRead: true}})
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Send(ctx, ipc.Request{Method: "x", Params: json.RawMessage(`"` + strings.Repeat("a", 3<<20) + `"`)})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the write block
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("the call succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cancelling did not unblock the write")
	}
	c.Close()
}

// TestFactsForgottenWhenTheSocketChanges: what was learned about a socket
// does not stick to a new server at the same path.
func TestFactsForgottenWhenTheSocketChanges(t *testing.T) {
	path := filepath.Join(tempDir(t), "beardog-fam.sock")
	s, err := ipctest.Listen(path, btspPrimal([]byte(testFamilySeed), ""))
	if err != nil {
		t.Fatal(err)
	}
	mem := ipc.NewEndpointMemory()
	ep := s.Endpoint()
	c := mustDial(t, ep, ipc.Options{Security: ipc.Security{Memory: mem}})
	var be *ipc.BTSPRequiredError
	if _, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil); !errors.As(err, &be) {
		t.Fatalf("want BTSP required, got %v", err)
	}
	c.Close()
	if _, err := dialErr(t, ep, ipc.Options{Security: ipc.Security{Memory: mem}}); !errors.As(err, &be) {
		t.Fatalf("known: %v", err)
	}
	s.Close()
	s2, err := ipctest.Listen(path, beardog().Config()) // a plain primal now
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	mustLive(t, mustDial(t, ep, ipc.Options{Security: ipc.Security{Memory: mem}}))
}

// TestPrefixAutoWithAPeerThatSpeaksFirst: a plain primal (it answers the
// prefixed line with an id-less parse error and stays open) that pushes a
// notification the moment a client connects is still reached in auto mode.
func TestPrefixAutoWithAPeerThatSpeaksFirst(t *testing.T) {
	cfg := beardog().Config()
	cfg.Behavior.OnConnect = []byte(`{"jsonrpc":"2.0","method":"health.heartbeat","params":{"seq":1}}`)
	for i := 0; i < 5; i++ {
		s := startAt(t, "p.sock", cfg)
		c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto, Memory: ipc.NewEndpointMemory()}})
		resp, err := c.Call(ctxT(t, 5*time.Second), "health.liveness", nil)
		if err != nil || string(resp.Result) != `{"status":"alive"}` {
			t.Fatalf("run %d: %v %v (transport %s)", i, resp, err, c.Transport())
		}
		c.Close()
		s.Close()
	}
}

// TestWriteDuringReconnectHonoursItsDeadline: while the first call's
// refusal makes the connection reconnect with BTSP (slowly), a second call
// with a short deadline fails on time, and the first call still succeeds.
func TestWriteDuringReconnectHonoursItsDeadline(t *testing.T) {
	cfg := beardog().Config()
	gate := ipctest.BTSPGate(btsp.ServerConfig{Seed: []byte(testFamilySeed)}, false)
	var conns atomic.Int32
	cfg.Accept = func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		if conns.Add(1) == 1 {
			_, _ = r.ReadString('\n') // the cleartext call
			_, _ = c.Write([]byte(ipctest.BTSPRequiredLine + "\n"))
			return nil, false
		}
		time.Sleep(2 * time.Second) // a slow peer: the reconnect takes a while
		return gate(c, r)
	}
	s := startAt(t, "p.sock", cfg)
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), Prefix: ipc.PrefixOff}})
	first := make(chan error, 1)
	go func() {
		_, err := c.Call(ctxT(t, 10*time.Second), "health.liveness", nil)
		first <- err
	}()
	for conns.Load() < 2 { // the reconnect has begun
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	_, err := c.Call(ctxT(t, 300*time.Millisecond), "health.liveness", nil)
	var te *ipc.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("the second call waited %v for the reconnect, past its deadline", took)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first call failed after the reconnect: %v", err)
	}
}

// TestSessionOfCleartext: cleartext sent to a BTSP endpoint on purpose
// (--btsp-cipher null without a seed) is reported as such by Conn.Session;
// a connection that involves no BTSP reports nothing.
func TestSessionOfCleartext(t *testing.T) {
	s := startAt(t, "beardog-fam-2.sock", beardog().Config())
	c := mustDial(t, s.Endpoint(), ipc.Options{Security: ipc.Security{RequireBTSP: true, Cipher: btsp.CipherNull}})
	mustLive(t, c)
	if ss, ok := c.Session(); !ok || ss.BTSP || ss.Authenticated || ss.Weakness() != "cleartext" {
		t.Fatalf("forced cleartext: session %+v (ok %v, weakness %q)", ss, ok, ss.Weakness())
	}
	for _, sec := range []ipc.Security{{}, {Prefix: ipc.PrefixAuto}} {
		c := mustDial(t, s.Endpoint(), ipc.Options{Security: sec})
		mustLive(t, c)
		if ss, ok := c.Session(); ok {
			t.Fatalf("plain connection (%+v): session %+v", sec, ss)
		}
	}
}

// lagCtx is a context whose deadline has passed a while before it says so
// (Err and Done lag Deadline), as a socket deadline set from a context may
// fire a hair before the context reports it.
type lagCtx struct {
	context.Context
	deadline time.Time
}

func (c lagCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// TestBTSPDeadlineBetweenAttemptsIsATimeout: when the command's deadline
// ends while one BTSP attempt waits on a peer that ignores the hello, the
// next attempt's connect fails at once; that is the deadline (exit 4), not
// a failure to connect (exit 3).
func TestBTSPDeadlineBetweenAttemptsIsATimeout(t *testing.T) {
	dir := t.TempDir()
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "silent.sock"), &ipctest.HostileBTSP{Hello: ipctest.HelloSilent})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ep, err := ipc.ParseEndpoint(h.Path())
	if err != nil {
		t.Fatal(err)
	}
	parent, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The deadline the sockets see passes at 300 ms; the context itself
	// reports it only at 5 s (the test's bound).
	ctx := lagCtx{Context: parent, deadline: time.Now().Add(300 * time.Millisecond)}
	_, err = ipc.Dial(ctx, ep, ipc.Options{ConnectTimeout: 10 * time.Second,
		Security: ipc.Security{Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Prefix: ipc.PrefixOff}})
	var he *btsp.HandshakeError
	if !errors.As(err, &he) || he.Reason != btsp.ReasonTimeout {
		t.Fatalf("want a timeout *btsp.HandshakeError (exit 4), got %T: %v", err, err)
	}
	if parent.Err() != nil {
		t.Fatalf("the dial waited for the test's own bound: %v", err)
	}
}

// TestPrefixRefusalMustNameNoCall: a -32002 that answers our request's id
// is the call's own error (the peer processed it), never a "prefix
// required" refusal: the call is not sent again.
func TestPrefixRefusalMustNameNoCall(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.sock")
	var calls atomic.Int64
	srv, err := peer.Listen(path, peer.Config{Methods: map[string]peer.HandlerFunc{
		"res.get": func(context.Context, json.RawMessage) (any, error) {
			calls.Add(1)
			return nil, &ipc.RPCError{Code: -32002, Message: "resource not found"}
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Security: ipc.Security{Prefix: ipc.PrefixAuto}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Call(ctx, "res.get", nil)
	var re *ipc.RPCError
	if !errors.As(err, &re) || re.Code != -32002 {
		t.Fatalf("want the peer's own -32002 as the answer, got %v", err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the call reached the peer %d times; never twice", n)
	}
}
