package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// The request every wire test sends: a call with side effects and a
// sentinel in its params, so the bytes a peer received can be searched.
const (
	sentinelMethod = "transfer.funds"
	sentinelParam  = "SENTINEL-param-9c1e"
	sentinelParams = `{"to":"` + sentinelParam + `","amount":100}`
)

func wireDir(t *testing.T) string {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// timed runs a command line and returns how long it took.
func timed(t *testing.T, env map[string]string, args ...string) (result, time.Duration) {
	t.Helper()
	start := time.Now()
	r := runCLI(t, env, "", args...)
	return r, time.Since(start)
}

// isHandshakeStart reports whether a connection's first bytes are a BTSP
// client hello as ECOSYSTEM-FACTS describes it: EC 03 / EC 02, a JSON line
// with "protocol":"btsp", or a u32 length and a JSON object.
func isHandshakeStart(b []byte) bool {
	if len(b) >= 2 && b[0] == 0xEC && (b[1] == 0x02 || b[1] == 0x03) {
		return true
	}
	if bytes.HasPrefix(b, []byte(`{"protocol":"btsp"`)) {
		return true
	}
	return len(b) >= 5 && binary.BigEndian.Uint32(b) < 1<<16 && b[4] == '{' && !bytes.HasPrefix(b[4:], []byte(`{"jsonrpc"`))
}

// noCleartextCall fails when any connection carried the call readable, or
// did not start with a BTSP hello.
func noCleartextCall(t *testing.T, conns [][]byte) {
	t.Helper()
	for i, b := range conns {
		if bytes.Contains(b, []byte(sentinelParam)) || bytes.Contains(b, []byte(sentinelMethod)) {
			t.Fatalf("connection %d carried the call in cleartext: %q", i+1, cut(b))
		}
		if len(b) > 0 && !isHandshakeStart(b) {
			t.Fatalf("connection %d did not start with a BTSP hello: %q", i+1, cut(b))
		}
	}
}

func cut(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// TestBTSPHostileServers: against servers that do not know the seed,
// downgrade, or send a cut, garbage or huge hello, the default call on a
// family-scoped name (first contact, no FAMILY_ID) exits 5 well within
// --timeout and the call never reaches the peer readable.
func TestBTSPHostileServers(t *testing.T) {
	const seed = "family-seed-for-wire-tests-0123456789"
	cases := []struct {
		name   string
		srv    *ipctest.HostileBTSP
		flags  []string
		stderr string
		code   int
	}{
		// A peer that answered the JSON-line hello and then failed is not
		// tried in the other framing: its first failure is the one said.
		{"impostor-keeps-null", &ipctest.HostileBTSP{Negotiate: ipctest.NegotiateKeepNull}, nil, "negotiate_refused", exitSecurity},
		{"impostor-lp-only", &ipctest.HostileBTSP{LengthPrefixedOnly: true}, nil, "server_proof_mismatch", exitSecurity},
		{"impostor-claims-negotiate", &ipctest.HostileBTSP{Negotiate: ipctest.NegotiateClaim}, nil, "key_confirmation", exitSecurity},
		{"impostor-answers-chacha", &ipctest.HostileBTSP{Cipher: "chacha20_poly1305"}, nil, "negotiate_refused", exitSecurity},
		{"forced-null", &ipctest.HostileBTSP{Seed: []byte(seed), Cipher: "null", LengthPrefixedOnly: true}, nil, "weaker_cipher", exitSecurity},
		{"forced-null-negotiate", &ipctest.HostileBTSP{Seed: []byte(seed), Cipher: "null"}, []string{"--btsp-cipher", "negotiate"}, "negotiate_refused", exitSecurity},
		{"forced-null-chacha", &ipctest.HostileBTSP{Seed: []byte(seed), Cipher: "null"}, []string{"--btsp-cipher", "chacha20_poly1305"}, "weaker_cipher", exitSecurity},
		{"wrong-proof", &ipctest.HostileBTSP{Seed: []byte(seed), WrongProof: true, LengthPrefixedOnly: true}, nil, "server_proof_mismatch", exitSecurity},
		{"cut-hello", &ipctest.HostileBTSP{Hello: ipctest.HelloCut}, nil, "closed", exitSecurity},
		{"garbage-hello", &ipctest.HostileBTSP{Hello: ipctest.HelloGarbage}, nil, "malformed", exitSecurity},
		{"huge-hello", &ipctest.HostileBTSP{Hello: ipctest.HelloHuge}, nil, "64 KiB", exitSecurity},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate-tower-155f.sock"), tc.srv)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_ID": "westgate-tower-155f", "FAMILY_SEED": seed}
			args := append([]string{"call", "--no-history", "--timeout", "4s", "--socket-dir", dir}, tc.flags...)
			args = append(args, "beardog-westgate-tower-155f", sentinelMethod, sentinelParams)
			r, took := timed(t, env, args...)
			h.Close()
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want %d with %q: %+v", r.code, tc.code, tc.stderr, r)
			}
			if took > 5*time.Second {
				t.Fatalf("took %v with --timeout 4s", took)
			}
			if strings.Contains(r.stdout, "impostor") || strings.Contains(r.stderr, seed) {
				t.Fatalf("output: %+v", r)
			}
			conns := h.Received()
			if len(conns) == 0 {
				t.Fatal("no handshake was tried")
			}
			noCleartextCall(t, conns)
		})
	}
}

// TestBTSPUnauthenticatedByName: --btsp-cipher chacha20_poly1305 allows a
// JSON-line session whose server proved nothing, and says so loudly.
func TestBTSPUnauthenticatedByName(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_ID": "westgate", "FAMILY_SEED": "family-seed-for-wire-tests-0123456789"}
	r, took := timed(t, env, "call", "--no-history", "--timeout", "4s", "--btsp-cipher", "chacha20_poly1305",
		filepath.Join(dir, "beardog-westgate.sock"), sentinelMethod, sentinelParams)
	h.Close()
	if r.code == exitOK || !strings.Contains(r.stderr, "WARNING") || !strings.Contains(r.stderr, "NOT authenticated") {
		t.Fatalf("%+v", r)
	}
	if took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	noCleartextCall(t, h.Received())
}

// TestBTSPNoSeedSendsNothing: without a seed, a family-scoped name gets no
// connection at all (exit 5, the message says what to set), from call and
// from ls, which reports it locked; --btsp-cipher null sends cleartext on
// purpose, loudly.
func TestBTSPNoSeedSendsNothing(t *testing.T) {
	t.Parallel()
	dir := wireDir(t)
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "beardog-westgate.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	env := map[string]string{"HOME": dir, "XDG_STATE_HOME": dir}
	r, _ := timed(t, env, "call", "--no-history", "--socket-dir", dir, "beardog-westgate", sentinelMethod, sentinelParams)
	if r.code != exitSecurity || !strings.Contains(r.stderr, "FAMILY_SEED") || !strings.Contains(r.stderr, "--btsp-cipher null") {
		t.Fatalf("%+v", r)
	}
	r, _ = timed(t, env, "ls", "--socket-dir", dir, "--no-proc", "--json", "--stale", "2s")
	if r.code != exitOK {
		t.Fatalf("ls: %+v", r)
	}
	var doc lsDocT
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Targets) != 1 || doc.Targets[0].State != "btsp" {
		t.Fatalf("ls: %v %s", err, r.stdout)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) reached the family-scoped socket without a seed", n)
	}
	// Cleartext on purpose: it reaches the peer (which demands BTSP), loudly.
	r, _ = timed(t, env, "call", "--no-history", "--btsp-cipher", "null", "--socket-dir", dir, "beardog-westgate", "health.liveness")
	if r.code != exitSecurity || !strings.Contains(r.stderr, "WARNING") || !strings.Contains(r.stderr, "CLEARTEXT") {
		t.Fatalf("--btsp-cipher null: %+v", r)
	}
	if conns := h.Received(); len(conns) != 1 || !bytes.Contains(conns[0], []byte("health.liveness")) {
		t.Fatalf("cleartext on purpose: %q", conns)
	}
	if !strings.Contains(r.stderr, "no seed is known for family westgate") {
		t.Errorf("the warning should name the family no seed is known for:\n%s", r.stderr)
	}
	// A seed given with no family is withheld from westgate: the warning
	// says so, not that no seed is set.
	env["FAMILY_SEED"] = "an-unbound-seed-0123456789abcdef"
	r, _ = timed(t, env, "call", "--no-history", "--btsp-cipher", "null", "--socket-dir", dir, "beardog-westgate", "health.liveness")
	if !strings.Contains(r.stderr, "CLEARTEXT") || !strings.Contains(r.stderr, "given with no family and is not offered to family westgate") {
		t.Errorf("--btsp-cipher null with an unbound seed: the warning should say the seed was withheld:\n%s", r.stderr)
	}
}

// TestBTSPReadmeExampleFirstContact: the README's example, first contact
// (FAMILY_ID unset, the family named by --family) on the demo's
// family-scoped BearDog with the default flags, answers over an
// authenticated session. A recording peer at a family-scoped name whose
// family shows only through another known primal's socket is taken as
// that family's: a seed given with no family is not offered to it
// (exit 5 naming the family, no connection), and with the family named
// the first bytes on the wire are a BTSP hello.
func TestBTSPReadmeExampleFirstContact(t *testing.T) {
	eco := ecosystem(t)
	env := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir(), "FAMILY_SEED": eco.Seed()}
	r := runCLI(t, env, "", "call", "--socket-dir", eco.Dir, "--no-history", "--family", eco.Family, "beardog-"+eco.Family, "health.liveness")
	if r.code != exitOK || !strings.Contains(r.stdout, "alive") {
		t.Fatalf("%+v", r)
	}
	if strings.Contains(r.stderr, "WARNING") {
		t.Fatalf("a warning on the default path: %s", r.stderr)
	}
	// A peer at a family-scoped name in a directory where the family id
	// shows only through another known primal's socket.
	dir := wireDir(t)
	other, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "songbird-tower-9.sock"), &ipctest.HostileBTSP{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	h, err := ipctest.ListenHostileBTSP(filepath.Join(dir, "myprimal-tower-9.sock"), &ipctest.HostileBTSP{Hello: ipctest.HelloCut})
	if err != nil {
		t.Fatal(err)
	}
	env = map[string]string{"HOME": dir, "XDG_STATE_HOME": dir, "FAMILY_SEED": eco.Seed()}
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "4s", filepath.Join(dir, "myprimal-tower-9.sock"), sentinelMethod, sentinelParams)
	if r.code != exitSecurity || !strings.Contains(r.stderr, `family "tower-9"`) || !strings.Contains(r.stderr, "--family tower-9") {
		t.Fatalf("a seed given with no family, a socket of family tower-9: %+v", r)
	}
	if n := len(h.Received()); n != 0 {
		t.Fatalf("%d connection(s) with a seed given for no family", n)
	}
	r = runCLI(t, env, "", "call", "--no-history", "--timeout", "4s", "--family", "tower-9", filepath.Join(dir, "myprimal-tower-9.sock"), sentinelMethod, sentinelParams)
	h.Close()
	if r.code != exitSecurity {
		t.Fatalf("%+v", r)
	}
	conns := h.Received()
	if len(conns) == 0 || !isHandshakeStart(conns[0]) {
		t.Fatalf("first bytes: %q", conns)
	}
	noCleartextCall(t, conns)
}

// prefixPeer serves p at dir/name.sock.
func prefixPeer(t *testing.T, dir, name string, p *ipctest.PrefixPeer) *ipctest.PrefixPeer {
	t.Helper()
	s, err := ipctest.ListenPrefixPeer(filepath.Join(dir, name+".sock"), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// prefixFact reads what the endpoint memory says about the prefix of path.
func prefixFact(t *testing.T, state, path string) *bool {
	t.Helper()
	b, ok := readMemoryFile(t, state)["unix://"+path]
	if !ok {
		return nil
	}
	var f struct {
		Prefix *bool `json:"prefix"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Prefix
}

// atMostOnce fails when a request reached the peer more than n times.
func deliveries(t *testing.T, p *ipctest.PrefixPeer, want int) {
	t.Helper()
	n := 0
	for _, r := range p.Requests() {
		if strings.HasPrefix(r, sentinelMethod+" ") {
			n++
		}
	}
	if n != want {
		t.Fatalf("the call reached the peer %d time(s), want %d: %q", n, want, p.Requests())
	}
}

// TestPrefixAutoNeverTwice: with the default --prefix auto, a peer that
// reads the request and closes, or closes mid-line, gets it once (exit 3,
// a hint at --prefix on, the memory unchanged); a peer that crashes after
// the prefix was learned keeps its memory and gets each call once; a peer
// that silently skips what it cannot parse answers at once; a peer that
// wants the prefix answers -32002, gets one resend with it, and the next
// call sends the prefix first.
func TestPrefixAutoNeverTwice(t *testing.T) {
	call := func(t *testing.T, state, path string) (result, time.Duration) {
		t.Helper()
		env := map[string]string{"HOME": state, "XDG_STATE_HOME": state}
		return timed(t, env, "call", "--no-history", "--timeout", "4s", path, sentinelMethod, sentinelParams)
	}
	checkTime := func(t *testing.T, took time.Duration) {
		t.Helper()
		if took > 5*time.Second {
			t.Fatalf("took %v with --timeout 4s", took)
		}
	}
	for _, crash := range []ipctest.Crash{ipctest.CrashAfterRead, ipctest.CrashMidLine} {
		name := map[ipctest.Crash]string{ipctest.CrashAfterRead: "read-then-close", ipctest.CrashMidLine: "close-mid-line"}[crash]
		t.Run(name+"/raw", func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			p := prefixPeer(t, dir, "sweetgrass", &ipctest.PrefixPeer{Crash: func(int) ipctest.Crash { return crash }})
			r, took := call(t, dir, p.Path())
			checkTime(t, took)
			if r.code != exitConnect || !strings.Contains(r.stderr, "--prefix on") || !strings.Contains(r.stderr, "NOT resent") {
				t.Fatalf("%+v", r)
			}
			if p.Connections() != 1 {
				t.Fatalf("%d connections: the call was retried", p.Connections())
			}
			want := 1
			if crash == ipctest.CrashMidLine {
				want = 0
			}
			deliveries(t, p, want)
			if f := prefixFact(t, dir, p.Path()); f != nil {
				t.Fatalf("a close changed the memory: prefix %v", *f)
			}
		})
		t.Run(name+"/prefixed", func(t *testing.T) {
			t.Parallel()
			dir := wireDir(t)
			// Connection 1 refuses raw JSON (-32002), 2 answers the
			// prefixed resend: the prefix is learned. Then it crashes.
			p := prefixPeer(t, dir, "sweetgrass", &ipctest.PrefixPeer{WantPrefix: true, Crash: func(n int) ipctest.Crash {
				if n <= 2 {
					return ipctest.NoCrash
				}
				return crash
			}})
			r, took := call(t, dir, p.Path())
			checkTime(t, took)
			if r.code != exitOK {
				t.Fatalf("learning call: %+v", r)
			}
			if f := prefixFact(t, dir, p.Path()); f == nil || !*f {
				t.Fatal("the -32002 answer was not remembered")
			}
			// Crash after learning, twice: each call reaches the peer at
			// most once and the memory does not flip.
			for i := 0; i < 2; i++ {
				r, took = call(t, dir, p.Path())
				checkTime(t, took)
				if r.code != exitConnect || !strings.Contains(r.stderr, "NOT resent") || strings.Contains(r.stderr, "--prefix on") {
					t.Fatalf("crash %d: %+v", i+1, r)
				}
				if f := prefixFact(t, dir, p.Path()); f == nil || !*f {
					t.Fatalf("crash %d flipped the memory", i+1)
				}
			}
			if p.Connections() != 4 {
				t.Fatalf("%d connections, want 4 (2 to learn, one per crashed call)", p.Connections())
			}
			conns := p.Received()
			for i, b := range conns[1:] {
				if !bytes.HasPrefix(b, []byte{0xEC, 0x01}) {
					t.Fatalf("connection %d did not start with EC 01: %q", i+2, cut(b))
				}
			}
			want := 3
			if crash == ipctest.CrashMidLine {
				want = 1
			}
			deliveries(t, p, want)
		})
	}
	t.Run("silent-line-skipper", func(t *testing.T) {
		t.Parallel()
		dir := wireDir(t)
		p := prefixPeer(t, dir, "petaltongue", &ipctest.PrefixPeer{SkipUnparseable: true})
		r, took := call(t, dir, p.Path())
		if r.code != exitOK || !strings.Contains(r.stdout, "alive") {
			t.Fatalf("%+v", r)
		}
		if took > 2*time.Second { // a bound for a loaded machine; it answers in milliseconds
			t.Fatalf("took %v", took)
		}
		deliveries(t, p, 1)
		if conns := p.Received(); len(conns) != 1 || !bytes.HasPrefix(conns[0], []byte(`{"jsonrpc"`)) {
			t.Fatalf("wire: %q", conns)
		}
	})
	t.Run("prefix-required", func(t *testing.T) {
		t.Parallel()
		dir := wireDir(t)
		p := prefixPeer(t, dir, "rhizocrypt", &ipctest.PrefixPeer{WantPrefix: true})
		r, took := call(t, dir, p.Path())
		checkTime(t, took)
		if r.code != exitOK || !strings.Contains(r.stdout, "alive") {
			t.Fatalf("%+v", r)
		}
		if p.Connections() != 2 {
			t.Fatalf("%d connections, want 2", p.Connections())
		}
		deliveries(t, p, 1)
		if f := prefixFact(t, dir, p.Path()); f == nil || !*f {
			t.Fatal("the prefix was not remembered")
		}
		r, _ = call(t, dir, p.Path())
		if r.code != exitOK || p.Connections() != 3 {
			t.Fatalf("second call: %+v, %d connections", r, p.Connections())
		}
		if conns := p.Received(); !bytes.HasPrefix(conns[2], []byte{0xEC, 0x01}) {
			t.Fatalf("the second call did not send the prefix first: %q", cut(conns[2]))
		}
		deliveries(t, p, 2)
	})
}

// TestCapsShowsTheSession: caps over the demo's family-scoped BearDog names
// the session, and says when the server is not authenticated.
func TestCapsShowsTheSession(t *testing.T) {
	eco := ecosystem(t)
	env := map[string]string{"HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir(), "FAMILY_ID": eco.Family, "FAMILY_SEED": eco.Seed()}
	target := "beardog-" + eco.Family
	r := runCLI(t, env, "", "caps", "--socket-dir", eco.Dir, target)
	if r.code != exitOK || !strings.Contains(r.stdout, "session   unix+btsp(chacha20-poly1305 negotiated)") {
		t.Fatalf("auto: %+v", r)
	}
	r = runCLI(t, env, "", "caps", "--socket-dir", eco.Dir, "--btsp-cipher", "chacha20_poly1305", target)
	if r.code != exitOK || !strings.Contains(r.stdout, "server not authenticated") || !strings.Contains(r.stderr, "NOT authenticated") {
		t.Fatalf("chacha20_poly1305: %+v", r)
	}
}

// TestFamilyScopedByNameOrDirectory: the decision that keeps cleartext off
// family-scoped sockets on first contact, without FAMILY_ID.
func TestFamilyScopedByNameOrDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"beardog-westgate-tower-155f.sock", "myprimal-westgate-tower-155f.sock", "other-thing.sock", "beardog.sock", "beardog.tarpc.sock"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("beardog-westgate-tower-155f.sock", filepath.Join(dir, "crypto.sock")); err != nil {
		t.Fatal(err)
	}
	a := &app{getenv: func(string) string { return "" }, maxFrame: ipc.DefaultMaxFrame, io: &stdio{err: io.Discard}}
	d, err := a.dialer()
	if err != nil {
		t.Fatal(err)
	}
	scoped := func(ep ipc.Endpoint) bool { return d.Security(dial.Target{Endpoint: ep}).FamilyScoped }
	for name, want := range map[string]bool{
		"beardog-westgate-tower-155f.sock":  true,  // a known primal's name and a family
		"myprimal-westgate-tower-155f.sock": true,  // the family id seen on a known primal's socket here
		"crypto.sock":                       true,  // a symlink to a family-scoped socket
		"other-thing.sock":                  false, // no known primal, no family seen
		"beardog.sock":                      false,
		"beardog.tarpc.sock":                false,
	} {
		ep := ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(dir, name)}
		if got := scoped(ep); got != want {
			t.Errorf("%s: family-scoped %v, want %v", name, got, want)
		}
	}
	if scoped(ipc.Endpoint{Transport: ipc.TCP, Address: "127.0.0.1:9200"}) {
		t.Error("a TCP endpoint is never family-scoped by name")
	}
}
