package sse_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

func readAll(t *testing.T, r io.Reader, maxLine, maxEvent int) ([]sse.Event, error) {
	t.Helper()
	p := sse.NewReader(r, maxLine, maxEvent)
	var evs []sse.Event
	for {
		ev, err := p.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestParse(t *testing.T) {
	in := "\xef\xbb\xbf: hello\r\n" +
		"retry: 2500\n" +
		"event: graph_started\n" +
		"id: 7\n" +
		"data: {\"a\":\n" +
		"data:1}\n" +
		"\n" +
		"data\n" + // an empty data line
		"\n" +
		"event: only-fields\n\n" + // no data: not dispatched
		"data: cr\rdata: more\r\r" +
		"id: 8\x00\ndata: x\n\n" + // an id with NUL is ignored
		"retry: 1x\nunknown: y\ndata: z\n\n" +
		"data: cut off at the end"
	for _, r := range []io.Reader{strings.NewReader(in), iotest.OneByteReader(strings.NewReader(in))} {
		evs, err := readAll(t, r, 0, 0)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("err %v", err)
		}
		want := []sse.Event{
			{Type: "graph_started", Data: []byte("{\"a\":\n1}"), ID: "7", Retry: 2500 * time.Millisecond, Comments: []string{"hello"}},
			{Type: "message", Data: []byte(""), ID: "7", Retry: 2500 * time.Millisecond},
			{Type: "message", Data: []byte("cr\nmore"), ID: "7", Retry: 2500 * time.Millisecond},
			{Type: "message", Data: []byte("x"), ID: "7", Retry: 2500 * time.Millisecond},
			{Type: "message", Data: []byte("z"), ID: "7", Retry: 2500 * time.Millisecond},
		}
		if len(evs) != len(want) {
			t.Fatalf("got %d events: %+v", len(evs), evs)
		}
		for i := range want {
			g, w := evs[i], want[i]
			if g.Type != w.Type || string(g.Data) != string(w.Data) || g.ID != w.ID || g.Retry != w.Retry || strings.Join(g.Comments, "|") != strings.Join(w.Comments, "|") {
				t.Errorf("event %d: got %+v (%q), want %+v", i, g, g.Data, w)
			}
		}
	}
}

func TestLimits(t *testing.T) {
	_, err := readAll(t, strings.NewReader("data: "+strings.Repeat("x", 100)+"\n\n"), 50, 0)
	var le *sse.LineTooLongError
	if !errors.As(err, &le) || le.Limit != 50 {
		t.Fatalf("want LineTooLongError, got %v", err)
	}
	_, err = readAll(t, strings.NewReader(strings.Repeat("data: 0123456789\n", 20)+"\n"), 0, 100)
	var ee *sse.EventTooLargeError
	if !errors.As(err, &ee) {
		t.Fatalf("want EventTooLargeError, got %v", err)
	}
	// A line with no end at all is bounded too.
	_, err = readAll(t, io.LimitReader(neverEnding{}, 1<<20), 1000, 0)
	if !errors.As(err, &le) {
		t.Fatalf("want LineTooLongError, got %v", err)
	}
}

type neverEnding struct{}

func (neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

func TestBiomeOSStream(t *testing.T) {
	dir := t.TempDir()
	if len(dir) > 80 {
		d, err := ipctest.TempDir()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = removeAll(d) })
		dir = d
	}
	path := filepath.Join(dir, "biomeos-api-fam.sock")
	b, err := ipctest.ListenBiomeOS(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Without the prefix the socket drops the connection silently.
	_, err = sse.OpenUnix(ctx, path, sse.Options{NoPrefix: true})
	if !errors.Is(err, sse.ErrNoAnswer) || !strings.Contains(err.Error(), "EC 04") {
		t.Fatalf("without prefix: %v", err)
	}
	if b.Dropped() != 1 {
		t.Errorf("dropped %d", b.Dropped())
	}

	s, err := sse.OpenUnix(ctx, path, sse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for b.Subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	if err := b.Heartbeat(5, 4, []string{"fam"}); err != nil {
		t.Fatal(err)
	}
	_ = b.Publish("node_completed", map[string]any{"graph": "g1", "node": "n1"})
	ev, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != "heartbeat" || !strings.Contains(string(ev.Data), `"primals_count":5`) || ev.ID != "1" {
		t.Errorf("got %+v %s", ev, ev.Data)
	}
	if s.KeepAlives() != 1 || ev.Retry != time.Second {
		t.Errorf("keep-alives %d retry %v", s.KeepAlives(), ev.Retry)
	}
	ev, err = s.Next()
	if err != nil || ev.Type != "node_completed" {
		t.Fatalf("got %+v %v", ev, err)
	}

	// A wrong path is an HTTP error, not a stream.
	_, err = sse.OpenUnix(ctx, path, sse.Options{Path: "/api/v1/nope"})
	var se *sse.StatusError
	if !errors.As(err, &se) || se.Status != 404 {
		t.Fatalf("wrong path: %v", err)
	}
	// Cancelling the context ends the stream.
	cctx, ccancel := context.WithCancel(ctx)
	s2, err := sse.OpenUnix(cctx, path, sse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ccancel()
	if _, err := s2.Next(); err == nil {
		t.Fatal("stream outlived its context")
	}
	s2.Close()
}
