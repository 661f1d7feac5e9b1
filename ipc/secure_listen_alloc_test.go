package ipc

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// TestUnsettledFramerDecodesPushesWithNames: a connection that only
// listens never settles (no answer comes), so classify decodes each frame
// the peer pushes, for the Conn to take (takeDecoded); it decodes with a
// name cache as the Conn does, so a notification costs its Message and a
// share of its line, not two strings more (its method, "2.0"): a
// flood's listened connection allocated them 10,000 times a second.
func TestUnsettledFramerDecodesPushesWithNames(t *testing.T) {
	const n = 500
	var in []byte
	for i := range n {
		in = fmt.Appendf(in, `{"jsonrpc":"2.0","method":"telemetry.tick","params":{"seq":%d,"source":"aflood"}}`+"\n", i)
	}
	sf := &secureFramer{d: &secureDialer{}, tried: map[plan]bool{{}: true}}
	sf.setCur(NewLineFramer(bytes.NewReader(in), io.Discard, nil, 0))
	var last *Message
	read := func() {
		frame, err := sf.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		m, ok, derr := sf.takeDecoded(frame)
		if !ok || derr != nil || m.Method != "telemetry.tick" || m.Kind != KindNotification {
			t.Fatalf("decoded %+v (%v, %v)", m, ok, derr)
		}
		last = m
	}
	read()
	if sf.settled.Load() {
		t.Fatal("a pushed notification settled the connection")
	}
	if a := testing.AllocsPerRun(n-2, read); a > 1.1 {
		t.Errorf("%.2f allocations a notification read on an unsettled connection, want its Message and a share of its line", a)
	}
	_ = last
}
