package ipc_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// TestBTSPOverAPacedUnixConnection: a listening connection (ReadPace)
// to a BTSP server does the handshake, whose I/O is bounded by
// SetDeadline on the paced socket (held outside the runtime's netpoller),
// and then calls, in both framings and with the riboCipher prefix.
func TestBTSPOverAPacedUnixConnection(t *testing.T) {
	s := startAt(t, "beardog-fam.sock", btspPrimal([]byte(testFamilySeed), ""))
	for _, framing := range []btsp.Framing{btsp.JSONLine, btsp.LengthPrefixed} {
		for _, prefix := range []ipc.PrefixMode{ipc.PrefixOff, ipc.PrefixOn} {
			mem := ipc.NewEndpointMemory()
			mem.Update(s.Endpoint(), func(f *ipc.EndpointFacts) { f.Framing = framing.String() })
			c := mustDial(t, s.Endpoint(), ipc.Options{ReadPace: 10 * time.Millisecond, Security: ipc.Security{
				Seed: ipc.NewSeed(testFamilySeed), RequireBTSP: true, Prefix: prefix, Memory: mem}})
			for range 3 {
				mustLive(t, c)
			}
			if got := c.Transport(); !strings.Contains(got, "btsp") {
				t.Fatalf("%s/%s: transport %q, want a BTSP session", framing, prefix, got)
			}
			c.Close()
		}
	}
}
