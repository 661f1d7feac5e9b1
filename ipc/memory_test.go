package ipc_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: mode %v", path, st.Mode().Perm())
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// TestEndpointMemoryFlushOnly: Update and Forget do not touch the disk;
// Flush writes once (the atomic rename gives the file a new inode), and
// not again while nothing changed.
func TestEndpointMemoryFlushOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "endpoints.json")
	m, err := ipc.OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	a := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"}
	b := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}
	no := false
	for i := 0; i < 100; i++ {
		m.Update(a, func(f *ipc.EndpointFacts) { f.BTSPRequired = i%2 == 0 })
	}
	m.Update(b, func(f *ipc.EndpointFacts) { f.Prefix = &no })
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Update wrote the file: %v", err)
	}
	if f, ok := m.Get(a); !ok || f.BTSPRequired {
		t.Fatalf("in memory: %+v %v", f, ok)
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	first := inode(t, path)
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Update(b, func(f *ipc.EndpointFacts) { f.Prefix = &no }) // no change
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, path); got != first {
		t.Fatal("a flush with nothing changed rewrote the file")
	}
	m.Forget(b)
	if got := inode(t, path); got != first {
		t.Fatal("Forget wrote the file")
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := inode(t, path); got == first {
		t.Fatal("a flush after Forget did not write")
	}
	m2, err := ipc.OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m2.Get(b); ok {
		t.Fatal("a forgotten endpoint was kept in the file")
	}
	if f, ok := m2.Get(a); !ok || f.BTSPRequired || f.Updated.IsZero() {
		t.Fatalf("reloaded %+v %v", f, ok)
	}
}

// TestEndpointMemoryTwoWriters: two memories (two processes) on one file,
// flushing in turn, keep each other's facts, and each sees the other's
// after its own flush.
func TestEndpointMemoryTwoWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.json")
	m1, _ := ipc.OpenEndpointMemory(path)
	m2, _ := ipc.OpenEndpointMemory(path)
	a := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"}
	b := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}
	c := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/c.sock"}
	m1.Update(a, func(f *ipc.EndpointFacts) { f.Framing = "json-line" })
	m1.Update(c, func(f *ipc.EndpointFacts) { f.Framing = "json-line" })
	m2.Update(b, func(f *ipc.EndpointFacts) { f.Framing = "length-prefixed" })
	if err := m1.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f, ok := m2.Get(a); !ok || f.Framing != "json-line" {
		t.Fatalf("m2 did not adopt m1's flushed facts: %+v %v", f, ok)
	}
	m1.Forget(c)
	if err := m1.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f, ok := m1.Get(b); !ok || f.Framing != "length-prefixed" {
		t.Fatalf("m1 did not adopt m2's flushed facts: %+v %v", f, ok)
	}
	r, err := ipc.OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	fa, oka := r.Get(a)
	fb, okb := r.Get(b)
	_, okc := r.Get(c)
	if !oka || fa.Framing != "json-line" || !okb || fb.Framing != "length-prefixed" || okc {
		t.Fatalf("file after both flushed: a=%+v %v b=%+v %v c kept=%v", fa, oka, fb, okb, okc)
	}
}

// TestEndpointMemoryFlushEnded: a flush whose context has ended writes
// nothing and keeps the changes for the next one; a failed write is kept
// in Err and cleared by the next good one.
func TestEndpointMemoryFlushEnded(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "endpoints.json")
	m, _ := ipc.OpenEndpointMemory(path)
	a := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"}
	m.Update(a, func(f *ipc.EndpointFacts) { f.BTSPRequired = true })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush with an ended context: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a flush with an ended context wrote: %v", err)
	}
	// The directory is a file for a while: the write fails, and is retried.
	blocked := filepath.Join(dir, "blocked")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mb, _ := ipc.OpenEndpointMemory(filepath.Join(blocked, "endpoints.json"))
	mb.Update(a, func(f *ipc.EndpointFacts) { f.BTSPRequired = true })
	if err := mb.Flush(context.Background()); err == nil || mb.Err() == nil {
		t.Fatalf("a write under a file succeeded: %v", err)
	}
	if err := m.Flush(context.Background()); err != nil || m.Err() != nil {
		t.Fatal(err, m.Err())
	}
	r, _ := ipc.OpenEndpointMemory(path)
	if f, ok := r.Get(a); !ok || !f.BTSPRequired {
		t.Fatalf("the pending change was lost: %+v %v", f, ok)
	}
}

// TestEndpointMemoryAutoFlush: a memory flushed in the background reaches
// the file without an explicit Flush; stop ends the flusher.
func TestEndpointMemoryAutoFlush(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.json")
	m, _ := ipc.OpenEndpointMemory(path)
	stop := m.AutoFlush(10 * time.Millisecond)
	defer stop()
	m.Update(ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"}, func(f *ipc.EndpointFacts) { f.BTSPRequired = true })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("AutoFlush never wrote the file")
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	stop() // idempotent
	first := inode(t, path)
	m.Update(ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}, func(f *ipc.EndpointFacts) { f.BTSPRequired = true })
	time.Sleep(50 * time.Millisecond)
	if inode(t, path) != first {
		t.Fatal("the flusher wrote after stop")
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}
