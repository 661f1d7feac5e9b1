package ipc

import (
	"bytes"
	"io"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the reads that reach the socket.
type countingConn struct {
	net.Conn
	reads atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(b)
}

// unixPair is a connected pair of Unix sockets (loopback only).
func unixPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "p.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		done <- c
	}()
	client, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case server = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no accept")
	}
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestReadPaceBatchesATrickle: a peer sending a line a millisecond is read
// in a few reads per pace, not one read a line, and every line arrives in
// order. (Without ReadPace it takes about one read a line.)
func TestReadPaceBatchesATrickle(t *testing.T) {
	for _, pace := range []time.Duration{0, 25 * time.Millisecond} {
		client, server := unixPair(t)
		cc := &countingConn{Conn: client}
		f := NetFramer(paced(cc, pace), 0)
		const n = 100
		go func() {
			for i := 0; i < n; i++ {
				server.Write([]byte(`{"jsonrpc":"2.0","method":"tick","params":{"seq":` + string(rune('0'+i%10)) + `}}` + "\n"))
				time.Sleep(time.Millisecond)
			}
		}()
		for i := 0; i < n; i++ {
			fr, err := f.ReadFrame()
			if err != nil {
				t.Fatalf("pace %v: line %d: %v", pace, i, err)
			}
			if want := `"seq":` + string(rune('0'+i%10)); !bytes.Contains(fr, []byte(want)) {
				t.Fatalf("pace %v: line %d is %s, want %s in it", pace, i, fr, want)
			}
		}
		reads := cc.reads.Load()
		t.Logf("pace %v: %d reads for %d lines", pace, reads, n)
		if pace > 0 && reads > 20 {
			t.Fatalf("pace %v: %d reads for %d lines sent over about 100 ms; want a few a pace (≤ 20)", pace, reads, n)
		}
		if pace == 0 && reads < 20 {
			// The trickle really is one that unpaced reads take line by line
			// (else the paced case proves nothing).
			t.Fatalf("unpaced: only %d reads for %d lines sent a millisecond apart", reads, n)
		}
	}
}

// TestReadPaceKeepsUpWithAFastPeer: a read that fills its buffer is
// followed at once, so a peer sending faster than a buffer a pace is read
// as fast as it sends.
func TestReadPaceKeepsUpWithAFastPeer(t *testing.T) {
	client, server := unixPair(t)
	p := paced(client, 200*time.Millisecond)
	const size = 4 << 20
	go func() {
		server.Write(bytes.Repeat([]byte("x"), size))
		server.Close()
	}()
	start := time.Now()
	buf := make([]byte, 4096)
	got := 0
	for {
		n, err := p.Read(buf)
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got != size {
		t.Fatalf("read %d bytes, want %d", got, size)
	}
	// Over a thousand reads of a full buffer: paced, they would take
	// minutes; a handful of short reads may each wait a pace.
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("4 MiB took %v to read with a 200 ms pace: full reads were paced", d)
	}
}

// TestReadPaceCloseEndsTheWait: closing the connection ends a read that
// waits for its pace at once, with the closed connection's error.
func TestReadPaceCloseEndsTheWait(t *testing.T) {
	client, server := unixPair(t)
	p := paced(client, time.Hour)
	server.Write([]byte("a\n"))
	buf := make([]byte, 64)
	if _, err := p.Read(buf); err != nil { // short: the next read waits an hour
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Read(buf)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	p.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("a read after Close succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the paced read's wait")
	}
}

// TestDecodeMessageJSONChecked: a frame DecodeMessage read as an object is
// marked checked (its members are valid JSON, which FromMessage then need
// not check again); one it could not read is not.
func TestDecodeMessageJSONChecked(t *testing.T) {
	for frame, want := range map[string]bool{
		`{"jsonrpc":"2.0","method":"tick","params":{"seq":1}}`: true,
		`{"type":"NewMail","data":[1,2]}`:                      true,
		`{"jsonrpc":"2.0","method":"tick","params":{"seq":}}`:  false,
		`[1,2]`:                             false,
		`{"id":1,"id":2,"result":null}`:     false,
		`{"method":"tick","params":{"a":1}`: false,
	} {
		m, _ := DecodeMessage([]byte(frame))
		if m.JSONChecked != want {
			t.Errorf("%s: JSONChecked %v, want %v", frame, m.JSONChecked, want)
		}
	}
}

// TestDecodeSharesNames: messages decoded on one connection share the
// strings they repeat (method, jsonrpc) instead of allocating them each
// time, and still decode every name right, escaped or not.
func TestDecodeSharesNames(t *testing.T) {
	var names nameCache
	frame := []byte(`{"jsonrpc":"2.0","method":"telemetry.tick","params":{"seq":1}}`)
	if _, err := decodeMessage(frame, &names); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := decodeMessage(frame, &names); err != nil {
			t.Fatal(err)
		}
	})
	plain := testing.AllocsPerRun(100, func() {
		if _, err := DecodeMessage(frame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > plain-2 {
		t.Fatalf("%v allocations a message with the names shared, %v without: want two fewer", allocs, plain)
	}
	for frame, method := range map[string]string{
		`{"method":"a.b","params":{}}`:      "a.b",
		`{"method":"a\u002eb","params":{}}`: "a.b",
		`{"method":"é","params":{}}`:        "é",
		`{"method":"a.c","params":{}}`:      "a.c",
	} {
		for range 2 {
			m, err := decodeMessage([]byte(frame), &names)
			if err != nil || m.Method != method {
				t.Fatalf("%s: method %q (%v), want %q", frame, m.Method, err, method)
			}
		}
	}
}

// linesReader gives short lines without end, each read filling as much of
// the room it is given as the cap allows (a peer flooding the socket).
type linesReader struct{ cap int }

func (r linesReader) Read(p []byte) (int, error) {
	n := min(len(p), r.cap)
	for i := range n {
		p[i] = "{\"a\":1}\n"[i%8]
	}
	return n, nil
}

// TestLineFramerGrowsForAFlood: a peer that fills the read buffer at
// every read has it grow to floodBufSize (a flood read in fewer, bigger
// reads); one whose reads come back short keeps the small buffer.
func TestLineFramerGrowsForAFlood(t *testing.T) {
	for _, c := range []struct {
		cap  int
		want int
	}{{1 << 30, floodBufSize}, {512, lineBufSize}} {
		f := NewLineFramer(linesReader{c.cap}, io.Discard, nil, 0)
		for i := 0; i < 100000; i++ {
			fr, err := f.ReadFrame()
			if err != nil || string(fr) != `{"a":1}` {
				t.Fatalf("frame %d: %q %v", i, fr, err)
			}
		}
		if len(f.buf) != c.want {
			t.Fatalf("reads of up to %d bytes: buffer %d, want %d", c.cap, len(f.buf), c.want)
		}
	}
}

// TestReadPaceShrinksForABusyPeer: after a read that found much more than
// paceBudget, the next wait is cut in proportion, so what waits in the
// socket stays small and a flooding peer's writes are not blocked on a
// full socket for a whole pace.
func TestReadPaceShrinksForABusyPeer(t *testing.T) {
	client, server := unixPair(t)
	p := paced(client, 2*time.Second)
	// All of it waits in the socket before the first read, which takes it
	// in one go (short of the buffer).
	if _, err := server.Write(bytes.Repeat([]byte("x"), 10*paceBudget)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64*paceBudget)
	got, err := p.Read(buf)
	if err != nil || got < 5*paceBudget {
		t.Fatalf("first read: %d bytes, %v; want all %d waiting", got, err, 10*paceBudget)
	}
	server.Write([]byte("y"))
	start := time.Now()
	for {
		n, err := p.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 && buf[n-1] == 'y' {
			break
		}
	}
	// At most 2 s × budget / what the last read found (≤ 2 s / 5 = 400 ms).
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Fatalf("the next read waited %v after a read of %d bytes; the 2 s pace should have shrunk to 400 ms or less", d, got)
	}
}
