//go:build !linux

package ipc

// hintHuge does nothing where transparent huge pages are not known.
func hintHuge([]byte) (undo func()) { return func() {} }
