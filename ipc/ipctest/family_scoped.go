package ipctest

import (
	"bytes"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
)

// IsBTSPHello reports whether b, the first bytes a connection carried,
// start a BTSP client hello as ECOSYSTEM-FACTS.md describes it: the
// riboCipher BTSP prefix (EC 03 for the JSON-line handshake, EC 02 for the
// length-prefixed one), a JSON line with "protocol":"btsp", or a big-endian
// u32 length followed by a JSON object that is no JSON-RPC message.
func IsBTSPHello(b []byte) bool {
	if len(b) >= 2 && b[0] == 0xEC && (b[1] == 0x02 || b[1] == 0x03) {
		return true
	}
	if bytes.HasPrefix(b, []byte(`{"protocol":"btsp"`)) {
		return true
	}
	return len(b) >= 5 && binary.BigEndian.Uint32(b) < 1<<16 && b[4] == '{' && !bytes.HasPrefix(b[4:], []byte(`{"jsonrpc"`))
}

// CleartextJSONRPC reports whether b, what a connection carried, holds a
// JSON-RPC message readable on the wire.
func CleartextJSONRPC(b []byte) bool { return bytes.Contains(b, []byte(`{"jsonrpc"`)) }

// NeverReadSize is a message size that a peer that never reads cannot
// take in: four times the default socket send buffer, at least 1 MiB, so a
// write of it blocks. Not more: under -race on a loaded machine each pass
// over a multi-MiB message (checking, compacting, encoding it) costs
// hundreds of milliseconds, the machine's time, not the code's.
func NeverReadSize() int {
	n := 1 << 20
	if b, err := os.ReadFile("/proc/sys/net/core/wmem_default"); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && 4*v > n {
			n = min(4*v, 16<<20)
		}
	}
	return n
}
