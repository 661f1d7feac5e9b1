package ipc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of a transparent huge page on amd64 and arm64.
const hugePage = 2 << 20

// hintHuge asks the kernel to back b's whole 2 MiB pages with huge pages
// when they are first touched (where transparent huge pages are on
// "madvise", as on Debian). It is for a fresh buffer of several MiB about
// to be filled: a 10 MB answer read into 4 KiB pages takes 2,500 page
// faults. It returns the function that takes the request back once the
// buffer is filled, so that the heap's later use of that memory (the TUI
// lives long) is not given huge pages. A refusal changes nothing, so
// errors are ignored.
func hintHuge(b []byte) (undo func()) {
	if len(b) < 2*hugePage {
		return func() {}
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	from := (start + hugePage - 1) &^ (hugePage - 1)
	to := (start + uintptr(len(b))) &^ (hugePage - 1)
	if to <= from {
		return func() {}
	}
	r := b[from-start : to-start]
	if unix.Madvise(r, unix.MADV_HUGEPAGE) != nil {
		return func() {}
	}
	return func() { _ = unix.Madvise(r, unix.MADV_NOHUGEPAGE) }
}
