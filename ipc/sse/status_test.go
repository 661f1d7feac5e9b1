package sse_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/textproto"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// TestStatusErrorEscapesPeerText: a server that answers an error with
// terminal escapes, bidi controls and invisible characters in its body and
// Content-Type gets them back as visible escapes, bounded in size.
func TestStatusErrorEscapesPeerText(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = removeAll(dir) })
	path := filepath.Join(dir, "hostile.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := "  oops\x1b]52;c;AAAA\x07 \u202eevil\u200b\r\nmore " + strings.Repeat("x", 300)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		r := textproto.NewReader(bufio.NewReader(c))
		if _, err := r.ReadLine(); err != nil { // the request line
			return
		}
		if _, err := r.ReadMIMEHeader(); err != nil {
			return
		}
		_, _ = c.Write([]byte("HTTP/1.1 500 Broken\r\nContent-Type: text/plain\u202e\u2066x\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = sse.OpenUnix(ctx, path, sse.Options{NoPrefix: true})
	<-done
	var se *sse.StatusError
	if !errors.As(err, &se) || se.Status != 500 {
		t.Fatalf("want a StatusError 500, got %v", err)
	}
	for _, want := range []string{`oops\x1b]52;c;AAAA\x07 \u202eevil\u200b\r\nmore xx`, "…"} {
		if !strings.Contains(se.Body, want) {
			t.Errorf("body %q lacks %q", se.Body, want)
		}
	}
	if want := `text/plain\u202e\u2066x`; se.ContentType != want {
		t.Errorf("content type %q, want %q", se.ContentType, want)
	}
	if len(se.Body) > 200 || !textsafe.IsSafe(err.Error(), false) {
		t.Errorf("body of %d bytes, error %q", len(se.Body), err)
	}
}
