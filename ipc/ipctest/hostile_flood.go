package ipctest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// Flood is a peer that stopped reading and floods: it writes N JSON-RPC
// lines whose params carry Size bytes each, without reading a byte of what
// it is sent back (as a peer whose reader is stuck, or a hostile one).
type Flood struct {
	// N is how many messages it writes.
	N int
	// Size is the length of the string each message's params carry.
	Size int
	// Requests sends server-initiated requests (ids "f1", "f2"...) instead
	// of notifications.
	Requests bool
	// Method names the messages ("flood.push" when empty).
	Method string
}

// WriteTo writes the flood to w, one line per message, and returns how
// many bytes it wrote and the first write error.
func (f Flood) WriteTo(w io.Writer) (int64, error) {
	method := f.Method
	if method == "" {
		method = "flood.push"
	}
	pad := strings.Repeat("x", f.Size)
	var total int64
	var b bytes.Buffer
	for i := 1; i <= f.N; i++ {
		b.Reset()
		if f.Requests {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":"f%d","method":%q,"params":{"pad":%q}}`+"\n", i, method, pad)
		} else {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":%q,"params":{"n":%d,"pad":%q}}`+"\n", method, i, pad)
		}
		n, err := w.Write(b.Bytes())
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
