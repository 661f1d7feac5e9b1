package ipc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// PeerPolicy says which local users may serve a Unix socket, or a
// loopback TCP port (127.0.0.0/8, ::1: the owner of the listening socket,
// from the kernel's socket tables on Linux; see tcpowner.go), primalscope
// speaks to. The zero value is the safe one: a socket served by anyone
// but the user and root (or whose file belongs to anyone else) is refused
// with *ForeignPeerError before a byte is sent. A TCP port of another
// address has no owner to check; a loopback port whose owner cannot be
// read (no /proc) is reached, and said to be unchecked (the trace, and
// Security.Warn for a call).
type PeerPolicy struct {
	// TrustUIDs are uids trusted besides the user's own and root, on top
	// of Security.TrustUIDs (the run's --trust-uid and trust_uids).
	TrustUIDs []uint32
	// Observe connects whoever serves the socket and only reports who it
	// is (Seen): for probes (health, capabilities), which show a foreign
	// socket marked with its owner instead of hiding it. Calls never set it.
	Observe bool
	// Seen, when set, receives who is at the other end of each Unix
	// connection made (abstract ones included), before anything is sent.
	// It may be called from several goroutines.
	Seen func(PeerIdentity) `json:"-"`
	// procNet is where the kernel's socket tables are read ("": /proc/net).
	procNet string
}

// PeerIdentity is who serves a Unix socket, as the kernel says
// (SO_PEERCRED), and who owns its file.
type PeerIdentity struct {
	// UID and PID are the serving process's credentials when it listened.
	UID uint32 `json:"uid"`
	PID int32  `json:"pid,omitempty"`
	// User is UID's user name, looked up for a foreign socket only (""
	// otherwise, or when the system does not know it).
	User string `json:"user,omitempty"`
	// FileUID is the owner of the socket file (path sockets only: HasFile);
	// FileUser its name, as User.
	FileUID  uint32 `json:"file_uid,omitempty"`
	FileUser string `json:"file_user,omitempty"`
	HasFile  bool   `json:"has_file,omitempty"`
	// Foreign is set when the policy does not trust it; Why says why.
	Foreign bool   `json:"foreign,omitempty"`
	Why     string `json:"why,omitempty"`
}

// Owner names the serving user for people: "nobody (uid 65534)".
func (p PeerIdentity) Owner() string { return uidName(p.UID, p.User) }

func uidName(uid uint32, name string) string {
	if name == "" {
		return "uid " + strconv.FormatUint(uint64(uid), 10)
	}
	return fmt.Sprintf("%s (uid %d)", name, uid)
}

// trusted reports whether uid may serve the user's sockets.
func (p *PeerPolicy) trusted(uid uint32) bool {
	if uid == 0 || uid == uint32(os.Getuid()) {
		return true
	}
	for _, t := range p.TrustUIDs {
		if t == uid {
			return true
		}
	}
	return false
}

// judge fills Foreign and Why: the server must be trusted, and so must the
// file's owner when it is someone else (a socket file that is not the
// server's own). User names are looked up only for a foreign socket (the
// user database is not read on the common path).
func (p *PeerPolicy) judge(id *PeerIdentity) {
	serverOK := p.trusted(id.UID)
	fileOK := !id.HasFile || id.FileUID == id.UID || p.trusted(id.FileUID)
	if serverOK && fileOK {
		return
	}
	id.Foreign = true
	id.User = lookupUser(id.UID)
	if id.HasFile {
		id.FileUser = id.User
		if id.FileUID != id.UID {
			id.FileUser = lookupUser(id.FileUID)
		}
	}
	if !serverOK {
		id.Why = "it is served by " + id.Owner() + ", not by you or root"
		return
	}
	id.Why = "its socket file belongs to " + uidName(id.FileUID, id.FileUser) + " but " + id.Owner() + " serves it"
}

// ForeignPeerError refuses a socket served (or owned) by a local user the
// policy does not trust. Nothing was sent to it.
type ForeignPeerError struct {
	Endpoint string
	Peer     PeerIdentity
}

// UnknownOwnerError is a call refused because who serves the loopback TCP
// port it reached cannot be told (Err says why): any local user may be
// serving it. Nothing was sent. Security.TrustUnknownOwner
// (--trust-unknown-owner) makes the call anyway, loudly.
type UnknownOwnerError struct {
	Endpoint string
	Port     netip.AddrPort
	Err      error
}

func (e *UnknownOwnerError) Error() string {
	return fmt.Sprintf("refusing to call %s: who serves the loopback port %s cannot be told (%v), so any local user may be serving it; nothing was sent (to call it unchecked, pass --trust-unknown-owner)",
		e.Endpoint, e.Port, e.Err)
}

func (e *UnknownOwnerError) Unwrap() error { return e.Err }

func (e *ForeignPeerError) Error() string {
	return fmt.Sprintf("refusing to call %s: %s; nothing was sent (trust that user with --trust-uid %s, or trust_uids in the config file)",
		e.Endpoint, e.Peer.Why, e.Peer.blamed())
}

// blamed is the user to trust for the refusal to go away: the server, else
// the file's owner.
func (p PeerIdentity) blamed() string {
	uid, name := p.UID, p.User
	if strings.HasPrefix(p.Why, "its socket file") {
		uid, name = p.FileUID, p.FileUser
	}
	if name != "" {
		return name
	}
	return strconv.FormatUint(uint64(uid), 10)
}

// ParseTrustedUser reads one --trust-uid value: a uid or a user name.
func ParseTrustedUser(s string) (uint32, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty user")
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return uint32(n), nil
	}
	u, err := user.Lookup(s)
	if err != nil {
		return 0, fmt.Errorf("no user %q on this system: %w", s, err)
	}
	n, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("user %q has uid %q, not a number", s, u.Uid)
	}
	return uint32(n), nil
}

// peerIdentity reads who serves c (SO_PEERCRED) and, for a path socket,
// who owns its file. ok is false for connections that are not Unix ones.
func peerIdentity(c net.Conn, ep Endpoint) (PeerIdentity, bool, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return PeerIdentity{}, false, nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return PeerIdentity{}, true, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return PeerIdentity{}, true, err
	}
	if credErr != nil {
		return PeerIdentity{}, true, fmt.Errorf("read the peer's credentials (SO_PEERCRED): %w", credErr)
	}
	id := PeerIdentity{UID: cred.Uid, PID: cred.Pid}
	if ep.Transport == Unix {
		st, err := os.Stat(ep.Path)
		if err != nil {
			return id, true, fmt.Errorf("stat the socket file: %w", err)
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			id.HasFile, id.FileUID = true, sys.Uid
		}
	}
	return id, true, nil
}

// lookupUser names a uid ("" when the system does not know it).
func lookupUser(uid uint32) string {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return ""
	}
	return u.Username
}

// DialPeer connects a socket endpoint as DialStream does (within
// opts.ConnectTimeout) and, for a Unix one or a loopback TCP port, checks who serves it against
// opts.Peer and opts.Security.TrustUIDs before the caller sends anything:
// a foreign server is a *ForeignPeerError unless the policy only observes.
// It is for wires that are not JSON-RPC (HTTP event streams, probes of
// them): every Unix dial goes through the same owner check.
func DialPeer(ctx context.Context, ep Endpoint, opts Options) (net.Conn, error) {
	return dialPeer(ctx, ep, opts)
}

// dialPeer connects a socket endpoint as DialStream does and then, for a
// Unix one or a loopback TCP port, checks who serves it against opts.Peer before anything is
// sent: a foreign server is a *ForeignPeerError unless the policy only
// observes.
func dialPeer(ctx context.Context, ep Endpoint, opts Options) (net.Conn, error) {
	c, err := DialStream(ctx, ep, opts.ConnectTimeout)
	if err != nil {
		return nil, err
	}
	name := opts.Endpoint
	if name == "" {
		name = ep.String()
	}
	pol := opts.Peer
	pol.TrustUIDs = append(append([]uint32(nil), pol.TrustUIDs...), opts.Security.TrustUIDs...)
	id, isUnix, err := peerIdentity(c, ep)
	if !isUnix {
		dst, loopback := tcpLoopback(c)
		if !loopback {
			// Another host's port, or this host's by a non-loopback
			// address: no local user to check (tcpowner.go).
			return paced(c, opts.ReadPace), nil
		}
		dir := pol.procNet
		if dir == "" {
			dir = procNetDir
		}
		id, err = tcpPeerIdentity(dir, dst, &pol)
		if err != nil {
			// Not checked. A probe (which sends nothing of the user's)
			// connects and says so; a call is refused unless the user
			// asked by name (--trust-unknown-owner), and then it is
			// said loudly. Never taken as checked.
			if !pol.Observe && !opts.Security.TrustUnknownOwner {
				c.Close()
				return nil, &UnknownOwnerError{Endpoint: name, Port: dst, Err: err}
			}
			uncheckedTCP(opts, name, dst, err, pol.Observe)
			return paced(c, opts.ReadPace), nil
		}
	} else {
		if err != nil {
			c.Close()
			return nil, &DialError{Endpoint: name, Err: fmt.Errorf("cannot tell who serves the socket: %w", err)}
		}
		pol.judge(&id)
	}
	if pol.Seen != nil {
		pol.Seen(id)
	}
	if id.Foreign && !pol.Observe {
		c.Close()
		return nil, &ForeignPeerError{Endpoint: name, Peer: id}
	}
	return paced(c, opts.ReadPace), nil
}

// uncheckedTCP says that who serves the loopback TCP port dst could not be
// told: to the trace, and, for a call (not a probe, which sends nothing
// of the user's), to Security.Warn, where the user sees it.
func uncheckedTCP(opts Options, name string, dst netip.AddrPort, why error, probe bool) {
	s := fmt.Sprintf("who serves the loopback port %s is NOT checked (%v): any local user may be serving it", dst, why)
	if opts.Trace != nil {
		opts.Trace(TraceEvent{Time: time.Now(), Dir: Note, Warning: "WARNING: " + s})
	}
	if !probe && opts.Security.Warn != nil {
		opts.Security.Warn(name + ": " + s)
	}
}

// paced is c read at most once per pace (Options.ReadPace), or c itself
// when pace is 0.
func paced(c net.Conn, pace time.Duration) net.Conn {
	if pace <= 0 {
		return c
	}
	return newPacedConn(c, pace)
}
