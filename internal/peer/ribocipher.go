package peer

import (
	"bufio"
	"net"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// PrefixPolicy is how a simulated primal treats the riboCipher first-byte signal.
type PrefixPolicy int

const (
	// PrefixRequired: a connection must start with EC 01 (or EC 02/EC 03,
	// handed on to the next hook for a BTSP handshake); one without it gets
	// error -32002 and is closed (sweetGrass, bearDog, rhizoCrypt, loamSpine).
	PrefixRequired PrefixPolicy = iota
	// PrefixRejected: a peer that does not know the signal answers a parse
	// error with id null to a connection that starts with 0xEC, and closes it.
	PrefixRejected
	// PrefixDropWithout: a connection without the prefix is dropped without
	// a word (the biomeOS API socket).
	PrefixDropWithout
	// PrefixOptional: EC 01 is taken off when it comes and a connection
	// without it is served as it is (a peer that accepts both).
	PrefixOptional
)

// PrefixRequiredLine is what a primal that requires the riboCipher prefix
// answers to a connection without it.
const PrefixRequiredLine = `{"jsonrpc":"2.0","error":{"code":-32002,"message":"riboCipher prefix required"},"id":null}`

// ParseErrorLine is a JSON-RPC parse error with id null.
const ParseErrorLine = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`

// RiboCipher returns an Accept hook for a primal with the given prefix
// policy. next, when set, runs after the prefix was accepted (BTSPGate, for
// example); EC 02/EC 03 are left in place for it. An EC 00 probe is answered
// {"primal":name,"signal":"riboCipher-v1","status":"ok"} and closed.
func RiboCipher(policy PrefixPolicy, name string, next func(net.Conn, *bufio.Reader) (ipc.Framer, bool)) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return func(c net.Conn, r *bufio.Reader) (ipc.Framer, bool) {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := r.Peek(2)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil && len(b) == 0 {
			return nil, false
		}
		prefixed := len(b) >= 1 && b[0] == 0xEC
		switch policy {
		case PrefixRejected:
			if prefixed {
				_, _ = c.Write([]byte(ParseErrorLine + "\n"))
				return nil, false
			}
		case PrefixOptional:
			if prefixed && len(b) >= 2 && b[1] == 0x01 {
				_, _ = r.Discard(2)
			} else if prefixed && len(b) >= 2 && b[1] == 0x00 {
				_, _ = c.Write([]byte(`{"primal":` + string(ipc.AppendJSONString(nil, name)) + `,"signal":"riboCipher-v1","status":"ok"}` + "\n"))
				return nil, false
			}
		case PrefixRequired, PrefixDropWithout:
			if !prefixed || len(b) < 2 {
				if policy == PrefixRequired {
					_, _ = c.Write([]byte(PrefixRequiredLine + "\n"))
				}
				return nil, false
			}
			switch b[1] {
			case 0x01:
				_, _ = r.Discard(2)
			case 0x00:
				_, _ = c.Write([]byte(`{"primal":` + string(ipc.AppendJSONString(nil, name)) + `,"signal":"riboCipher-v1","status":"ok"}` + "\n"))
				return nil, false
			case 0x02, 0x03:
				// a BTSP handshake: the next hook reads the prefix itself
			default:
				_, _ = c.Write([]byte(ParseErrorLine + "\n"))
				return nil, false
			}
		}
		if next != nil {
			return next(c, r)
		}
		return nil, true
	}
}
