//go:build !linux

package ipc

import "errors"

// diagListeners: the kernel's socket diagnostics are Linux's.
func diagListeners(uint8, func(procListener)) error {
	return errors.New("no socket diagnostics on this system")
}
