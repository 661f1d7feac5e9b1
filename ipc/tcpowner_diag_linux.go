package ipc

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// diagListeners calls fn with every listening TCP socket of family
// (AF_INET or AF_INET6) in this network namespace, from the kernel's
// socket diagnostics. Each wait for the kernel is bounded (1 s), and so is
// what it may list.
func diagListeners(family uint8, fn func(procListener)) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return fmt.Errorf("socket diagnostics: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("socket diagnostics: %w", err)
	}
	if err := unix.Sendto(fd, diagRequest(family, 1), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("socket diagnostics: %w", err)
	}
	buf := make([]byte, diagRecvBufSize)
	count := 0
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("socket diagnostics: %w", err)
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			continue // not from the kernel
		}
		err = parseDiagReplies(buf[:n], func(l procListener) {
			count++
			fn(l)
		})
		if errors.Is(err, errDiagDone) {
			return nil
		}
		if err != nil {
			return err
		}
		if count > maxDiagSockets {
			return fmt.Errorf("socket diagnostics: more than %d listening sockets", maxDiagSockets)
		}
	}
}
