package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// unixPair is both ends of a Unix socket connection (a kernel buffer
// between them, unlike net.Pipe), closed at the end of the test.
func unixPair(t *testing.T) (ours, theirs net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "pair.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	ours, err = net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	theirs = waitFor(t, acc, 5*time.Second, "accepted connection")
	if theirs == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { ours.Close(); theirs.Close() })
	_ = theirs.SetDeadline(time.Now().Add(20 * time.Second))
	return ours, theirs
}

const (
	floodBudget = 1 << 20
	floodSize   = 100 << 10
)

// A peer that floods large pushes while nobody reads Incoming: the Conn
// keeps no more than MaxHeldBytes of them and counts the rest as dropped.
func TestFloodedPushesStayWithinTheBudget(t *testing.T) {
	ours, theirs := unixPair(t)
	var notes int
	c := ipc.NewConn(ipc.NetFramer(ours, 256<<10), ipc.Options{MaxFrame: 256 << 10, MaxHeldBytes: floodBudget,
		Trace: func(e ipc.TraceEvent) {
			if e.Dir == ipc.Note && strings.Contains(e.Warning, "dropping") {
				notes++ // the reading goroutine's only: no lock needed until Done
			}
		}})
	defer c.Close()
	const n = 40 // 4 MB, far below the 1024 messages Incoming buffers
	if _, err := (ipctest.Flood{N: n, Size: floodSize}).WriteTo(theirs); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	waitFor(t, c.Done(), 10*time.Second, "end of the connection")

	held := c.HeldBytes()
	if held > floodBudget {
		t.Fatalf("held %d bytes of unread pushes, over the %d budget", held, floodBudget)
	}
	var got, gotBytes int
	last := 0
	for m := range c.Incoming() {
		got++
		gotBytes += len(m.Raw)
		var p struct{ N int }
		if err := json.Unmarshal(m.Params, &p); err != nil || p.N <= last {
			t.Fatalf("push %d after %d: the oldest are dropped, the order kept (%v)", p.N, last, err)
		}
		last = p.N
	}
	if gotBytes > floodBudget || int64(gotBytes) > held {
		t.Fatalf("Incoming held %d bytes (HeldBytes said %d, the budget is %d)", gotBytes, held, floodBudget)
	}
	if got == 0 || last != n {
		t.Fatalf("kept %d pushes, the last %d: the newest should be kept", got, last)
	}
	if d := c.Dropped(); int(d)+got != n {
		t.Fatalf("dropped %d + kept %d != %d sent", d, got, n)
	}
	if notes != 1 {
		t.Fatalf("the drops left %d notes in the trace; want one, not one per drop", notes)
	}
	if h := c.HeldBytes(); h != 0 {
		t.Fatalf("Incoming drained, yet %d bytes held", h)
	}
}

// A peer that floods large server requests and stops reading while the
// Handler works on them: the requests past MaxHeldBytes are refused at
// once (-32000), not held, and the reading goroutine goes on.
func TestFloodedServerRequestsAreRefusedPastTheBudget(t *testing.T) {
	ours, theirs := unixPair(t)
	started := make(chan string, 64)
	release := make(chan struct{})
	handler := func(ctx context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
		started <- string(m.ID)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return json.RawMessage(`{"ok":true}`), nil, true
	}
	c := ipc.NewConn(ipc.NetFramer(ours, 256<<10), ipc.Options{MaxFrame: 256 << 10, MaxHeldBytes: floodBudget, Handler: handler})
	defer c.Close()
	defer close(release)

	const n = 24 // 2.4 MB, under the 32 handlers allowed
	if _, err := (ipctest.Flood{N: n, Size: floodSize, Requests: true}).WriteTo(theirs); err != nil {
		t.Fatal(err)
	}
	// A small push after the flood: when it is on Incoming, every request
	// before it has been handed off or refused.
	if _, err := (ipctest.Flood{N: 1, Size: 1, Method: "flood.end"}).WriteTo(theirs); err != nil {
		t.Fatal(err)
	}
	if m := waitFor(t, c.Incoming(), 10*time.Second, "the push after the flood"); m.Method != "flood.end" {
		t.Fatalf("Incoming got %s", m.Raw)
	}

	if held := c.HeldBytes(); held > floodBudget {
		t.Fatalf("held %d bytes of server requests, over the %d budget", held, floodBudget)
	}
	running := len(started)
	if running == 0 || running*floodSize > floodBudget {
		t.Fatalf("%d handlers run on %d-byte requests with a %d budget", running, floodSize, floodBudget)
	}
	refused := int(c.Refused())
	if running+refused != n {
		t.Fatalf("%d running + %d refused != %d sent", running, refused, n)
	}
	// The peer reads again: each refusal is a -32000 with its request's id.
	r := bufio.NewReader(theirs)
	for i := 0; i < refused; i++ {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var ans struct {
			ID    string
			Error *ipc.RPCError
		}
		if err := json.Unmarshal(line, &ans); err != nil || ans.ID == "" || ans.Error == nil || ans.Error.Code != -32000 {
			t.Fatalf("refusal %d: %s (%v)", i, line, err)
		}
	}
}
