package ipctest

import (
	"bufio"
	"bytes"
	"net"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// LenientRefusal returns an Accept hook of a peer that refuses a cleartext
// connection's first line with refusal (an id-null error line such as
// BTSPRequiredLine or PrefixRequiredLine) but, unlike the primals of
// ECOSYSTEM-FACTS.md, does not close: the server goes on to read and
// process every later line of that connection. Before it refuses it waits
// (up to 2 s) until wait lines have arrived, so a test knows they all
// reached it. A connection that starts with a riboCipher prefix or a BTSP
// hello goes to next (nil: served as NDJSON after an
// EC 01 prefix is dropped).
func LenientRefusal(refusal string, wait int, next func(net.Conn, *bufio.Reader) (ipc.Framer, bool)) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := r.Peek(1)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			return nil, false
		}
		if b[0] == '{' {
			// A JSON-line BTSP hello is no request: peek its start.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			for n := 2; n <= 32; n++ {
				if b, err = r.Peek(n); err != nil || bytes.IndexByte(b, '\n') >= 0 {
					break
				}
			}
			_ = c.SetReadDeadline(time.Time{})
		}
		if b[0] != '{' || IsBTSPHello(b) {
			if next != nil {
				return next(c, r)
			}
			if p, err := r.Peek(2); err == nil && p[0] == 0xEC && p[1] == 0x01 {
				_, _ = r.Discard(2)
			}
			return nil, true
		}
		// Wait until wait lines are buffered (or 2 s pass), leaving them
		// in r: the first is consumed below, the others are served.
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		for n := 1; ; n++ {
			p, err := r.Peek(min(n, r.Size()))
			if err != nil || bytes.Count(p, []byte{'\n'}) >= wait || len(p) == r.Size() {
				break
			}
		}
		_ = c.SetReadDeadline(time.Time{})
		if _, err := r.ReadBytes('\n'); err != nil {
			return nil, false
		}
		if _, err := c.Write([]byte(refusal + "\n")); err != nil {
			return nil, false
		}
		return nil, true
	}
}
