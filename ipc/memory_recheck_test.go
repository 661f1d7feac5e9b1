package ipc

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEndpointMemoryRechecksAfterFlush: after a flush (the TUI flushes
// every second when anything changed), what a record said is kept until
// its file changes: a Get of an endpoint whose record (or whose absence of
// one) is the same file as before costs a lstat, not a read (the liveness
// round asked the state folder for 2,000 records each time). What
// another process writes is still seen, and a record swapped for a
// symbolic link is still refused.
func TestEndpointMemoryRechecksAfterFlush(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	a := Endpoint{Transport: Unix, Path: "/run/user/1000/biomeos/a.sock"}
	b := Endpoint{Transport: Unix, Path: "/run/user/1000/biomeos/b.sock"}
	other := Endpoint{Transport: Unix, Path: "/run/user/1000/biomeos/other.sock"}
	yes := true
	// Another process remembers a.
	w, _ := OpenEndpointMemory(dir)
	w.Update(a, func(f *EndpointFacts) { f.Prefix = &yes })
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	m, _ := OpenEndpointMemory(dir)
	flush := func(n int) {
		t.Helper()
		m.Update(other, func(f *EndpointFacts) { f.Framing = string(rune('a' + n)) })
		if err := m.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, wantA bool, wantBTSP bool) {
		t.Helper()
		f, ok := m.Get(a)
		if ok != wantA || ok && (f.Prefix == nil || !*f.Prefix || f.BTSPRequired != wantBTSP) {
			t.Errorf("%s: a: %+v %v, want %v (BTSP %v)", what, f, ok, wantA, wantBTSP)
		}
		if _, ok := m.Get(b); ok {
			t.Errorf("%s: b has facts", what)
		}
	}
	check("first read", true, false)
	opens := int64(0)
	for i := 0; i < 3; i++ {
		flush(i)
		before := m.stats.recordOpens.Load()
		check("after a flush", true, false)
		opens += m.stats.recordOpens.Load() - before
	}
	if got := opens; got != 0 {
		t.Errorf("3 flushes and 6 Gets of unchanged records opened %d record files, want 0", got)
	}
	if got := m.stats.rechecks.Load(); got != 6 {
		t.Errorf("%d rechecks, want 6", got)
	}

	// Another process learns that a demands BTSP: seen after the next flush.
	time.Sleep(10 * time.Millisecond) // a new change time, whatever the clock's tick
	w.Update(a, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	flush(4)
	check("after another process wrote a", true, true)

	// The record replaced by a symbolic link to a copy of itself, outside:
	// refused, as before (no facts), not taken for the file read.
	p := EndpointRecordPath(dir, a)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "copy.json")
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, p); err != nil {
		t.Fatal(err)
	}
	flush(5)
	check("the record a symbolic link", false, false)
}
