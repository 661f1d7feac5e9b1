package discovery

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/readfile"
	"github.com/ecoPrimals/primalscope/ipc"
)

// busBinaries are the executable names of stdio Bus daemons.
var busBinaries = map[string]bool{"stdio_bus": true, "stdiobus": true, "stdio-bus": true}

// BusCommand is what a stdio Bus daemon's command line says.
type BusCommand struct {
	// Unix is the --unix socket path, TCP the --tcp host:port.
	Unix string `json:"unix,omitempty"`
	TCP  string `json:"tcp,omitempty"`
	// Stdio is true in --stdio mode (the default): only its parent reaches it.
	Stdio bool `json:"stdio,omitempty"`
	// Config is the --config path as given (maybe relative to the daemon's cwd).
	Config string `json:"config,omitempty"`
}

// ParseBusCmdline reads a NUL-separated /proc/<pid>/cmdline. ok is false
// unless it is a stdio Bus daemon. Both "--unix PATH" and "--unix=PATH"
// forms are read.
func ParseBusCmdline(cmdline []byte) (BusCommand, bool) {
	if len(cmdline) == 0 || len(cmdline) > 128<<10 {
		return BusCommand{}, false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || !busBinaries[filepath.Base(args[0])] {
		return BusCommand{}, false
	}
	var b BusCommand
	for i := 1; i < len(args); i++ {
		a := args[i]
		key, val, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(key, "--") {
			continue
		}
		take := func() string {
			if hasVal {
				return val
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		switch key {
		case "--unix":
			b.Unix = take()
		case "--tcp":
			b.TCP = take()
		case "--config", "-c":
			b.Config = take()
		case "--stdio":
			b.Stdio = true
		}
	}
	if b.Unix == "" && b.TCP == "" {
		b.Stdio = true
	}
	return b, true
}

// BusPool is one pool of a stdio Bus config.
type BusPool struct {
	ID        string   `json:"id"`
	Command   string   `json:"command,omitempty"`
	Args      []string `json:"args,omitempty"`
	Instances int      `json:"instances,omitempty"`
}

// ParseBusConfig reads a stdio Bus config ({"pools":[{id, command, args,
// instances}], "limits":{...}}) and returns its pools. Pools without an id
// are skipped.
func ParseBusConfig(b []byte) ([]BusPool, error) {
	m, err := decodeObject(b)
	if err != nil {
		return nil, err
	}
	arr, ok := m["pools"].([]any)
	if !ok {
		return nil, errors.New("no pools")
	}
	var out []BusPool
	for _, e := range arr {
		pm, ok := e.(map[string]any)
		if !ok || len(out) >= MaxEntries {
			continue
		}
		p := BusPool{ID: cleanName(str(pm, "id", "name")), Command: human.Clip(str(pm, "command"), 1024)}
		if p.ID == "" {
			continue
		}
		if as, ok := pm["args"].([]any); ok {
			for _, a := range as {
				if s, ok := a.(string); ok && len(p.Args) < 64 {
					p.Args = append(p.Args, human.Clip(s, 1024))
				}
			}
		}
		if n, ok := num(pm["instances"]); ok && n > 0 && n < 1<<20 {
			p.Instances = int(n)
		}
		out = append(out, p)
	}
	return out, nil
}

// busFounds turns a bus (its endpoint, its pools) into sightings: one per
// pool, each carrying the pool id, or one for the bus itself when no pool
// is known.
func busFounds(name string, ep ipc.Endpoint, pools []string, src, detail string) []Found {
	var out []Found
	if len(pools) == 0 {
		return []Found{{Endpoint: ep, Name: name, Kind: KindBus, Source: src, Detail: detail,
			Note: "stdio Bus: pools unknown (a message without \"pool\" may be dropped)"}}
	}
	for _, p := range pools {
		out = append(out, Found{Endpoint: ep, Name: name + "/" + p, Pool: p, Kind: KindBus, Source: src, Detail: detail})
	}
	return out
}

// ProcSource finds running stdio Bus daemons in the process table
// (/proc/<pid>/cmdline): where they listen (--unix, --tcp) and, from their
// --config, their pools, each becoming a target that carries its pool id.
// A daemon in --stdio mode is listed but cannot be reached.
//
// Within confines it to one ecosystem (the demo's): when not empty, only
// daemons listening on a Unix socket inside one of those directories, or
// descended from process Parent (when not 0), are listed; every other bus
// on the machine is left out.
type ProcSource struct {
	// Root is the proc filesystem ("/proc").
	Root string
	// Within lists the directories whose buses are listed (empty: all).
	Within []string
	// Parent is the process whose descendants are listed with Within.
	Parent int
}

// Name implements Source.
func (s *ProcSource) Name() string { return SrcProc }

// Discover implements Source.
func (s *ProcSource) Discover(ctx context.Context) ([]Found, error) {
	root := s.Root
	if root == "" {
		root = "/proc"
	}
	names, err := readDirNames(root, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	var out []Found
	seen := map[string]bool{}
	for _, n := range names {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		pid, err := strconv.Atoi(n)
		if err != nil || pid <= 0 {
			continue
		}
		cl, err := readfile.Regular(filepath.Join(root, n, "cmdline"), MaxFileRead)
		if err != nil {
			continue // gone, or not ours to read
		}
		bc, ok := ParseBusCmdline(cl)
		if !ok {
			continue
		}
		// A daemon caught between fork and exec (or a forked helper of
		// it) carries the same command line for a moment: list each bus
		// endpoint and pool once.
		for _, f := range s.bus(root, pid, bc) {
			if !s.keeps(root, pid, f) {
				continue
			}
			k := EndpointKey(f.Endpoint, f.Pool)
			if k != "" && seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, f)
		}
	}
	return out, nil
}

func (s *ProcSource) bus(root string, pid int, bc BusCommand) []Found {
	detail := fmt.Sprintf("pid %d", pid)
	var pools []string
	var note string
	if bc.Config != "" {
		p := bc.Config
		if !filepath.IsAbs(p) {
			if cwd, err := os.Readlink(filepath.Join(root, strconv.Itoa(pid), "cwd")); err == nil {
				p = filepath.Join(cwd, p)
			}
		}
		if b, err := readfile.Regular(p, MaxFileRead); err == nil {
			ps, err := ParseBusConfig(b)
			if err != nil {
				note = "bus config " + p + ": " + err.Error()
			}
			for _, x := range ps {
				pools = append(pools, x.ID)
			}
		} else {
			note = "bus config unreadable: " + err.Error()
		}
		detail += " --config " + p
	}
	sort.Strings(pools)
	var out []Found
	switch {
	case bc.Unix != "":
		p := bc.Unix
		if !filepath.IsAbs(p) {
			if cwd, err := os.Readlink(filepath.Join(root, strconv.Itoa(pid), "cwd")); err == nil {
				p = filepath.Join(cwd, p)
			}
		}
		name := strings.TrimSuffix(filepath.Base(p), ".sock")
		out = busFounds(name, ipc.Endpoint{Transport: ipc.Unix, Path: p}, pools, SrcProc, detail)
	case bc.TCP != "":
		ep, err := endpointFrom("tcp://" + bc.TCP)
		if err != nil {
			return nil
		}
		out = busFounds("stdio_bus@"+bc.TCP, ep, pools, SrcProc, detail)
	default:
		out = []Found{{Name: fmt.Sprintf("stdio_bus[%d]", pid), Kind: KindBus, Source: SrcProc, Detail: detail,
			NoProbe: true, Note: "stdio Bus in --stdio mode: only its parent process can reach it"}}
	}
	if note != "" {
		for i := range out {
			out[i].Note = note
		}
	}
	return out
}

// keeps reports whether the bus f of process pid is within the source's
// confines (see Within).
func (s *ProcSource) keeps(root string, pid int, f Found) bool {
	if len(s.Within) == 0 {
		return true
	}
	if f.Endpoint.Transport == ipc.Unix && inDirs(f.Endpoint.Path, s.Within) {
		return true
	}
	return s.Parent > 0 && descends(root, pid, s.Parent)
}

// inDirs reports whether path lies inside one of dirs (symbolic links in
// the directories resolved, as the demo's temporary directory may be
// reached through one).
func inDirs(path string, dirs []string) bool {
	under := func(p, d string) bool {
		rel, err := filepath.Rel(d, p)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
	}
	p := filepath.Clean(path)
	rp := p
	if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		rp = filepath.Join(r, filepath.Base(p))
	}
	for _, d := range dirs {
		d = filepath.Clean(d)
		if under(p, d) || under(rp, d) {
			return true
		}
		if rd, err := filepath.EvalSymlinks(d); err == nil && (under(p, rd) || under(rp, rd)) {
			return true
		}
	}
	return false
}

// maxAncestry bounds the walk up the process tree.
const maxAncestry = 64

// descends reports whether process pid is ancestor's descendant, from the
// parent ids in <root>/<pid>/stat.
func descends(root string, pid, ancestor int) bool {
	for i := 0; i < maxAncestry && pid > 1; i++ {
		b, err := readfile.Regular(filepath.Join(root, strconv.Itoa(pid), "stat"), 4<<10)
		if err != nil {
			return false
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parens.
		st := string(b)
		j := strings.LastIndexByte(st, ')')
		if j < 0 {
			return false
		}
		f := strings.Fields(st[j+1:])
		if len(f) < 2 {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			return false
		}
		if ppid == ancestor {
			return true
		}
		pid = ppid
	}
	return false
}
