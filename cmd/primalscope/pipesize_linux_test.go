package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLargeAnswerGrowsItsPipe checks that printing a large answer into a
// pipe first grows the pipe's buffer (under a heldWriter too, as call
// prints), that a small answer leaves it as it is, and that a file is
// left alone.
func TestLargeAnswerGrowsItsPipe(t *testing.T) {
	pipeSize := func(f *os.File) int {
		n, err := unix.FcntlInt(f.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	before := pipeSize(w)
	growPipe(w, 1<<20) // small: left as it is
	if got := pipeSize(w); got != before {
		t.Fatalf("a 1 MiB answer grew the pipe from %d to %d", before, got)
	}
	done := make(chan struct{})
	close(done)
	growPipe(newHeldWriter(w, done, nil), 10<<20)
	if got := pipeSize(w); got < bigPipe {
		t.Fatalf("a 10 MiB answer left the pipe at %d bytes (was %d)", got, before)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	growPipe(f, 10<<20) // not a pipe: nothing to do, and no harm
}
