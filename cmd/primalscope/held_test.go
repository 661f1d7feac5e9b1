package main

import (
	"bytes"
	"testing"
	"time"
)

// Nothing reaches the stream before the gate opens; then what was held
// comes first, in order, and later writes pass straight through.
func TestHeldWriterHoldsUntilGate(t *testing.T) {
	var out bytes.Buffer
	gate := make(chan struct{})
	w := newHeldWriter(&out, gate, nil)
	w.Write([]byte("hello "))
	w.Write([]byte("world"))
	if out.Len() != 0 {
		t.Fatalf("printed before the gate opened: %q", out.String())
	}
	if stream(w) != &out {
		t.Error("stream does not see through the writer")
	}
	close(gate)
	w.Write([]byte("!"))
	if out.String() != "hello world!" {
		t.Fatalf("got %q", out.String())
	}
	w.Write([]byte("\n"))
	if err := w.Close(); err != nil || out.String() != "hello world!\n" {
		t.Fatalf("got %q, %v", out.String(), err)
	}
}

// A writer past holdBuffer waits for the gate instead of holding more; Close
// waits for the gate too.
func TestHeldWriterWaitsPastItsBuffer(t *testing.T) {
	var out bytes.Buffer
	gate := make(chan struct{})
	w := newHeldWriter(&out, gate, nil)
	w.Write(make([]byte, holdBuffer-1))
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Write([]byte("xx")) // over the bound: waits
		w.Close()
	}()
	select {
	case <-done:
		t.Fatal("a write past the buffer did not wait for the gate")
	case <-time.After(50 * time.Millisecond):
	}
	close(gate)
	<-done
	if out.Len() != holdBuffer+1 || !bytes.HasSuffix(out.Bytes(), []byte("xx")) {
		t.Fatalf("got %d bytes", out.Len())
	}
}

// The gate also opens at its bound: a record that is never written (a
// stuck file system) holds the answer back only until then, for a write
// past the buffer and for Close alike.
func TestHeldWriterOpensAtItsBound(t *testing.T) {
	var out bytes.Buffer
	never := make(chan struct{})
	bound := make(chan struct{})
	w := newHeldWriter(&out, never, bound)
	w.Write([]byte("held "))
	done := make(chan error, 1)
	go func() {
		w.Write(make([]byte, holdBuffer)) // over the bound: waits
		done <- w.Close()
	}()
	select {
	case <-done:
		t.Fatal("the writer did not wait for its gate")
	case <-time.After(50 * time.Millisecond):
	}
	if out.Len() != 0 {
		t.Fatalf("printed before the gate opened: %d bytes", out.Len())
	}
	close(bound)
	select {
	case err := <-done:
		if err != nil || out.Len() != len("held ")+holdBuffer || !bytes.HasPrefix(out.Bytes(), []byte("held ")) {
			t.Fatalf("got %d bytes, %v", out.Len(), err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bound did not open the gate")
	}
}
