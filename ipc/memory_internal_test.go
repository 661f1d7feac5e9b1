package ipc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeClock returns times one millisecond apart, from a fixed start.
func fakeClock(start time.Time) func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return start.Add(time.Duration(n) * time.Millisecond)
	}
}

// TestEndpointMemoryCap: 20,000 updates over 20,000 endpoints keep the
// memory within its cap (plus the slack between trims), and one flush
// (bounded by a generous deadline, a hang guard) writes the most recent
// maxMemoryEntries, within the size the reader accepts.
func TestEndpointMemoryCap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.json")
	m, err := OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	m.clock = fakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	const n = 20000
	yes := true
	for i := 0; i < n; i++ {
		ep := Endpoint{Transport: Unix, Path: fmt.Sprintf("/run/user/1000/biomeos/crowd/live%05d-family-westgate.sock", i)}
		m.Update(ep, func(f *EndpointFacts) { f.Prefix, f.Socket = &yes, "ino:123456789:1764000000" })
		m.mu.Lock()
		size := len(m.m)
		m.mu.Unlock()
		if size > maxMemoryEntries+memorySlack {
			t.Fatalf("after %d updates the memory holds %d", i+1, size)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	size := len(m.m)
	m.mu.Unlock()
	if size != maxMemoryEntries {
		t.Fatalf("after the flush the memory holds %d, want %d", size, maxMemoryEntries)
	}
	st, err := os.Stat(path)
	if err != nil || st.Size() > maxMemoryFile {
		t.Fatalf("file: %v %v (limit %d)", st.Size(), err, maxMemoryFile)
	}
	r, err := OpenEndpointMemory(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.m) != maxMemoryEntries {
		t.Fatalf("file holds %d entries", len(r.m))
	}
	newest := Endpoint{Transport: Unix, Path: fmt.Sprintf("/run/user/1000/biomeos/crowd/live%05d-family-westgate.sock", n-1)}
	oldestEp := Endpoint{Transport: Unix, Path: fmt.Sprintf("/run/user/1000/biomeos/crowd/live%05d-family-westgate.sock", 0)}
	if _, ok := r.Get(newest); !ok {
		t.Fatal("the newest endpoint was trimmed")
	}
	if _, ok := r.Get(oldestEp); ok {
		t.Fatal("the oldest endpoint was kept")
	}
}

// TestEndpointMemoryNewestWins: two processes changing the same endpoint:
// the newer facts win whichever flushes last, and a forget older than the
// other's re-learning does not erase it.
func TestEndpointMemoryNewestWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "endpoints.json")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older, _ := OpenEndpointMemory(path)
	newer, _ := OpenEndpointMemory(path)
	older.clock = func() time.Time { return t0 }
	newer.clock = func() time.Time { return t0.Add(time.Second) }
	ep := Endpoint{Transport: Unix, Path: "/run/a.sock"}
	gone := Endpoint{Transport: Unix, Path: "/run/b.sock"}
	older.Update(gone, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := older.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	newer.Update(ep, func(f *EndpointFacts) { f.Framing = "length-prefixed" })
	newer.Update(gone, func(f *EndpointFacts) { f.Framing = "length-prefixed" })
	older.Update(ep, func(f *EndpointFacts) { f.Framing = "json-line" })
	older.Forget(gone)
	if err := newer.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := older.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, _ := OpenEndpointMemory(path)
	if f, _ := r.Get(ep); f.Framing != "length-prefixed" {
		t.Fatalf("the older facts won: %+v", f)
	}
	if f, ok := r.Get(gone); !ok || f.Framing != "length-prefixed" {
		t.Fatalf("an older forget erased newer facts: %+v %v", f, ok)
	}
	if f, _ := older.Get(ep); f.Framing != "length-prefixed" {
		t.Fatalf("the older memory kept its stale facts after the flush: %+v", f)
	}
}
