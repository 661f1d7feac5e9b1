package dial

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc"
)

// BadTargetError says a TARGET is malformed: it is neither an address nor
// a name (a usage error, not an unreachable target).
type BadTargetError struct {
	Arg string
	Err error
}

func (e *BadTargetError) Error() string { return e.Err.Error() }
func (e *BadTargetError) Unwrap() error { return e.Err }

// LookupTimeoutError says a name's lookup ran out of time: the caller's
// context ended while the other sources (Settings.Lookup) were being asked,
// so whether the name exists is not known. It wraps the context's error
// (context.DeadlineExceeded when the deadline passed); it is no
// *discovery.NotFoundError.
type LookupTimeoutError struct {
	Name string
	Err  error
}

func (e *LookupTimeoutError) Error() string {
	return fmt.Sprintf("look up %q: the lookup ran out of time before every source answered (%v)", e.Name, e.Err)
}
func (e *LookupTimeoutError) Unwrap() error { return e.Err }

// Dirs lists the socket directories that exist, where names are looked up.
func (d *Dialer) Dirs() []string { return discovery.SocketDirs(d.s.Getenv, d.s.SocketDirs) }

// Resolve turns a TARGET string into a Target, the same way for every
// command and the TUI, so that every name `ls` prints dials:
//
//   - an address: a socket path, unix://, tcp://, host:port, @abstract,
//     ws://, wss://, stdio:"command";
//   - a name, family-scoped name or capability domain, looked up in the
//     socket directories (NAME.sock, NAME-<family>.sock, symlinks);
//   - NAME@FAMILY (as the TUI shows a family-scoped target): NAME-FAMILY.sock;
//   - a relative path that names a socket inside a socket directory
//     ("floatmail/floatmail.sock");
//   - a stdio Bus pool, BUS/POOL as ls prints it ("stdiobus/echo": pool
//     "echo" of stdiobus.sock; "stdio_bus@127.0.0.1:9000/echo" for a bus
//     on TCP);
//   - a name only other sources know (Songbird, env variables, manifests,
//     the config file, the process table), through Settings.Lookup.
//
// A name found nowhere is a *discovery.NotFoundError; a name whose lookup
// ctx cut before every source answered a *LookupTimeoutError; a malformed
// TARGET a *BadTargetError.
func (d *Dialer) Resolve(ctx context.Context, arg string) (Target, error) {
	ep, perr := ipc.ParseEndpoint(arg)
	if perr == nil && !missing(ep) {
		return Target{Arg: arg, Name: ep.String(), Endpoint: ep, Family: d.fileFamily(ep, ""), Via: "address"}, nil
	}
	if perr != nil && !errors.Is(perr, ipc.ErrNotAddress) && !strings.ContainsAny(arg, "@/") {
		return Target{}, &BadTargetError{Arg: arg, Err: perr}
	}
	dirs := d.Dirs()
	notFound := &discovery.NotFoundError{Name: arg, Dirs: dirs}
	// A name in the socket directories.
	if perr != nil && errors.Is(perr, ipc.ErrNotAddress) {
		path, err := discovery.ResolveName(dirs, arg, d.s.Family)
		if err == nil {
			return d.named(arg, arg, path), nil
		}
		if !errors.As(err, &notFound) {
			return Target{}, err // ambiguous
		}
	}
	// A path relative to a socket directory.
	if perr == nil && ep.Transport == ipc.Unix && !filepath.IsAbs(ep.Path) {
		for _, dir := range dirs {
			p := filepath.Join(dir, ep.Path)
			if exists(p) {
				return Target{Arg: arg, Name: arg, Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: p}, Family: d.fileFamily(ipc.Endpoint{Transport: ipc.Unix, Path: p}, ""), Via: "socket-dir"}, nil
			}
		}
	}
	// BUS/POOL.
	if bus, pool, ok := cutPool(arg); ok {
		if t, err := d.resolveBus(ctx, bus, dirs); err == nil {
			t.Arg, t.Name, t.Pool, t.Via = arg, arg, pool, "pool"
			return t, nil
		}
	}
	// NAME@FAMILY.
	if nameAtFamily(arg) {
		name, fam, _ := strings.Cut(arg, "@")
		path, err := discovery.ResolveName(dirs, name, fam)
		if err == nil && strings.HasSuffix(filepath.Base(path), "-"+fam+".sock") {
			t := d.named(arg, name, path)
			t.Name = arg
			return t, nil
		}
	}
	// Every other source (for names: an absolute path is no name).
	if d.s.Lookup != nil && (perr != nil || !filepath.IsAbs(ep.Path)) {
		dt, err := d.s.Lookup(ctx, arg)
		if err == nil && dt != nil {
			t := FromDiscovery(dt)
			t.Arg, t.Name = arg, arg
			return t, nil
		}
		if ctx.Err() != nil {
			// Cut before every source answered: not known to be nowhere.
			return Target{}, &LookupTimeoutError{Name: arg, Err: ctx.Err()}
		}
		var nf *discovery.NotFoundError
		if err != nil && !errors.As(err, &nf) {
			return Target{}, err // ambiguous, most likely
		}
	}
	if perr == nil {
		// A relative path that is nowhere: dialling it says so.
		return Target{Arg: arg, Name: ep.String(), Endpoint: ep, Via: "address"}, nil
	}
	if !errors.Is(perr, ipc.ErrNotAddress) && !nameAtFamily(arg) {
		return Target{}, &BadTargetError{Arg: arg, Err: perr}
	}
	return Target{}, notFound
}

// nameAtFamily says arg has the NAME@FAMILY form (a name, not an address:
// one found nowhere is not found, not malformed).
func nameAtFamily(arg string) bool {
	name, fam, ok := strings.Cut(arg, "@")
	return ok && name != "" && fam != "" && !strings.ContainsAny(arg, "/:")
}

// named is the Target for a name found at path: the family is split from
// the file name as discovery splits it, with name as one more known primal
// (a longer known name still wins: "neural" finding neural-api.sock is no
// family "api").
func (d *Dialer) named(arg, name, path string) Target {
	ep := ipc.Endpoint{Transport: ipc.Unix, Path: path}
	return Target{Arg: arg, Name: arg, Endpoint: ep, Family: d.fileFamily(ep, name), Via: "socket-dir"}
}

// fileFamily is the family id a Unix socket's file name carries, split as
// discovery does (with name as one more known primal); "" for others.
func (d *Dialer) fileFamily(ep ipc.Endpoint, name string) string {
	if ep.Transport != ipc.Unix {
		return ""
	}
	base := strings.TrimSuffix(filepath.Base(ep.Path), ".sock")
	var extra []string
	if name != "" && !strings.EqualFold(name, base) {
		extra = []string{name} // NAME found as NAME-<family>.sock
	}
	fams := []string{d.s.Family}
	for f := range d.s.Security.Seeds {
		fams = append(fams, f) // families whose seeds are known
	}
	_, fam := discovery.NewFamilyMatcher(extra, fams...).Split(base)
	return fam
}

// resolveBus finds the bus of a BUS/POOL name: a name in the socket
// directories ("stdiobus"), an address, or "stdio_bus@HOST:PORT" (how
// discovery names a bus on TCP).
func (d *Dialer) resolveBus(ctx context.Context, bus string, dirs []string) (Target, error) {
	if hp, ok := strings.CutPrefix(bus, "stdio_bus@"); ok {
		ep, err := ipc.ParseEndpoint("tcp://" + hp)
		if err != nil {
			return Target{}, err
		}
		return Target{Endpoint: ep}, nil
	}
	ep, err := ipc.ParseEndpoint(bus)
	switch {
	case err == nil && !missing(ep):
		return Target{Endpoint: ep, Family: d.fileFamily(ep, "")}, nil
	case errors.Is(err, ipc.ErrNotAddress):
		path, err := discovery.ResolveName(dirs, bus, d.s.Family)
		if err != nil {
			return Target{}, err
		}
		return d.named(bus, bus, path), nil
	}
	return Target{}, fmt.Errorf("%q: no bus there", bus)
}

// cutPool splits BUS/POOL at its last slash; the pool must be a plain name.
func cutPool(arg string) (bus, pool string, ok bool) {
	i := strings.LastIndexByte(arg, '/')
	if i <= 0 || i == len(arg)-1 {
		return "", "", false
	}
	bus, pool = arg[:i], arg[i+1:]
	if strings.HasSuffix(pool, ".sock") || strings.ContainsAny(pool, " \t\x00") {
		return "", "", false
	}
	return bus, pool, true
}

// missing reports a socket path that does not exist: it may be a name ls
// printed (BUS/POOL, a socket inside a socket directory) or a bus socket's
// path with a pool after it, rather than a path.
func missing(ep ipc.Endpoint) bool {
	return ep.Transport == ipc.Unix && !exists(ep.Path)
}

// Address is a TARGET that reaches t from any directory, without
// --socket-dir or --family: its endpoint (a Unix socket by its absolute
// path, whose file name carries the family), with /POOL after it for a stdio
// Bus pool ("/run/…/stdiobus.sock/echo", "stdio_bus@127.0.0.1:9000/echo").
// Resolve reads it back to the same endpoint and pool.
func (t Target) Address() string {
	ep := t.Endpoint
	if ep.Transport == ipc.Unix && !filepath.IsAbs(ep.Path) {
		if abs, err := filepath.Abs(ep.Path); err == nil {
			ep.Path = abs
		}
	}
	s := ep.String()
	if t.Pool == "" {
		return s
	}
	if ep.Transport == ipc.TCP {
		s = "stdio_bus@" + ep.Address
	}
	return s + "/" + t.Pool
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
