package ipc_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
	dir := filepath.Join(t.TempDir(), "state")
	m, err := ipc.OpenEndpointMemory(dir)
	if err != nil {
		t.Fatal(err)
	}
	a := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"}
	b := ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}
	path, pathB := ipc.EndpointRecordPath(dir, a), ipc.EndpointRecordPath(dir, b)
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
	firstB := inode(t, pathB)
	m.Forget(b)
	if got := inode(t, pathB); got != firstB {
		t.Fatal("Forget wrote the record")
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pathB); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a flush after Forget kept the record: %v", err)
	}
	if got := inode(t, path); got != first {
		t.Fatal("forgetting b rewrote a's record")
	}
	m2, err := ipc.OpenEndpointMemory(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m2.Get(b); ok {
		t.Fatal("a forgotten endpoint was kept")
	}
	if f, ok := m2.Get(a); !ok || f.BTSPRequired || f.Updated.IsZero() {
		t.Fatalf("reloaded %+v %v", f, ok)
	}
}

// TestEndpointMemoryTwoWriters: two memories (two processes) on one folder,
// flushing in turn, keep each other's facts, and each sees the other's
// after its own flush.
func TestEndpointMemoryTwoWriters(t *testing.T) {
	path := t.TempDir()
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
	m1.Get(b) // read before m2 flushed: read again after m1's next flush
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
	path := filepath.Join(dir, "state")
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
	mb, _ := ipc.OpenEndpointMemory(filepath.Join(blocked, "state"))
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
	dir := t.TempDir()
	m, _ := ipc.OpenEndpointMemory(dir)
	path := ipc.EndpointRecordPath(dir, ipc.Endpoint{Transport: ipc.Unix, Path: "/run/a.sock"})
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
	pathB := ipc.EndpointRecordPath(dir, ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"})
	m.Update(ipc.Endpoint{Transport: ipc.Unix, Path: "/run/b.sock"}, func(f *ipc.EndpointFacts) { f.BTSPRequired = true })
	time.Sleep(50 * time.Millisecond)
	if _, err := os.Stat(pathB); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the flusher wrote after stop")
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// memoryChild learns COUNT endpoints named PREFIX<i> in the memory kept in
// DIR, flushing after each as a one-shot call does; spec is "DIR PREFIX
// COUNT". It waits for DIR/go to exist first, so that two children start
// together.
func memoryChild(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return 2
	}
	n, _ := strconv.Atoi(f[2])
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f[0], "go")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 3
		}
	}
	for i := 0; i < n; i++ {
		m, _ := ipc.OpenEndpointMemory(f[0])
		ep := ipc.Endpoint{Transport: ipc.Unix, Path: fmt.Sprintf("/run/%s%03d.sock", f[1], i)}
		m.Get(ep)
		m.Update(ep, func(f *ipc.EndpointFacts) { f.Framing = "json-line" })
		if err := m.Flush(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// TestEndpointMemoryTwoProcesses: two processes learning different
// endpoints at the same time, each flushing after every one as one-shot
// calls do, lose none of each other's.
func TestEndpointMemoryTwoProcesses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const n = 150
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var cmds []*exec.Cmd
	for _, prefix := range []string{"a", "b"} {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "IPC_TEST_PEER=memory", fmt.Sprintf("IPC_TEST_MEMORY=%s %s %d", dir, prefix, n))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	m, _ := ipc.OpenEndpointMemory(dir)
	var lost []string
	for _, prefix := range []string{"a", "b"} {
		for i := 0; i < n; i++ {
			p := fmt.Sprintf("/run/%s%03d.sock", prefix, i)
			if _, ok := m.Get(ipc.Endpoint{Transport: ipc.Unix, Path: p}); !ok {
				lost = append(lost, p)
			}
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d endpoints lost, e.g. %v", len(lost), 2*n, lost[0])
	}
}
