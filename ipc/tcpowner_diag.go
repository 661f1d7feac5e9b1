package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// The kernel's socket diagnostics (NETLINK_SOCK_DIAG, what `ss -lt` asks)
// list the listening TCP sockets with their owners from the listening hash
// alone. /proc/net/tcp walks the whole established hash table to its end
// first, whatever it holds: 8-17 ms a dial on this 24 GiB machine with two
// sockets in it (BenchmarkLoopbackOwners), against well under one for the
// diagnostics. The tables are the fallback where the diagnostics are not
// to be had.

// Sizes of the kernel's structures (linux/netlink.h, linux/inet_diag.h).
const (
	nlmsgHdrLen     = 16 // struct nlmsghdr
	inetDiagReqLen  = 56 // struct inet_diag_req_v2
	inetDiagMsgLen  = 72 // struct inet_diag_msg
	sockDiagByFam   = 20 // SOCK_DIAG_BY_FAMILY
	tcpListenState  = 10 // TCP_LISTEN
	maxDiagSockets  = 1 << 16
	diagRecvBufSize = 32 << 10
)

// diagRequest is the dump request for the listening TCP sockets of family.
func diagRequest(family uint8, seq uint32) []byte {
	req := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], sockDiagByFam)
	binary.NativeEndian.PutUint16(req[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_DUMP)
	binary.NativeEndian.PutUint32(req[8:], seq)
	req[16] = family
	req[17] = syscall.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[20:], 1<<tcpListenState)
	return req
}

// errDiagDone ends parseDiagReplies at the dump's end.
var errDiagDone = errors.New("done")

// parseDiagReplies reads one datagram of replies to a dump request: it
// calls fn with each listening socket, returns errDiagDone at the dump's
// end, and an error for a reply the kernel would not send (a length that
// does not fit, a message shorter than its structure) or that says the
// request failed.
func parseDiagReplies(b []byte, fn func(procListener)) error {
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return errors.New("a truncated netlink header")
		}
		n := int(binary.NativeEndian.Uint32(b[0:]))
		if n < nlmsgHdrLen || n > len(b) {
			return fmt.Errorf("a netlink message of %d bytes in %d", n, len(b))
		}
		m := b[nlmsgHdrLen:n]
		switch binary.NativeEndian.Uint16(b[4:]) {
		case syscall.NLMSG_DONE:
			return errDiagDone
		case syscall.NLMSG_ERROR:
			if len(m) < 4 {
				return errors.New("a truncated netlink error")
			}
			return fmt.Errorf("socket diagnostics: %w", syscall.Errno(-int32(binary.NativeEndian.Uint32(m))))
		case sockDiagByFam:
			if len(m) < inetDiagMsgLen {
				return fmt.Errorf("a socket of %d bytes", len(m))
			}
			var addr netip.Addr
			switch m[0] {
			case syscall.AF_INET:
				addr = netip.AddrFrom4([4]byte(m[8:12]))
			case syscall.AF_INET6:
				addr = netip.AddrFrom16([16]byte(m[8:24]))
			default:
				return fmt.Errorf("a socket of family %d", m[0])
			}
			if m[1] == tcpListenState {
				fn(procListener{addr: addr, port: binary.BigEndian.Uint16(m[4:6]), uid: binary.NativeEndian.Uint32(m[64:68])})
			}
		}
		b = b[min(len(b), (n+3)&^3):] // messages are 4-byte aligned
	}
	return nil
}
