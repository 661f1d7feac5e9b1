package discovery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/readfile"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Bounds on what local sources read.
const (
	// MaxDirEntries is the most entries read from one directory.
	MaxDirEntries = 10000
	// MaxFileRead is the largest manifest, registry or config file read.
	MaxFileRead = 1 << 20
	// MaxFilesPerDir is the most manifests read from one directory.
	MaxFilesPerDir = 1000
)

// registryNames are socket names of Songbird registries.
var registryNames = map[string]bool{"songbird": true, "discovery": true}

// kindForName guesses a target's kind from its primal name.
func kindForName(name string) Kind {
	n := strings.ToLower(name)
	switch {
	case registryNames[n]:
		return KindRegistry
	case n == "neural-api":
		return KindNeural
	}
	return ""
}

// isDomainName reports whether n is a capability-domain name (ai, dag, ...)
// rather than a primal's own name.
func isDomainName(n string) bool {
	switch strings.ToLower(n) {
	case "ai", "dag", "ledger", "crypto", "storage", "compute", "provenance",
		"braid", "network", "mesh", "ui", "security", "orchestration", "visualization":
		return true
	}
	return false
}

// SocketDirSource lists the sockets of socket directories: <primal>.sock,
// <primal>-<family>.sock (split by known prefix), capability-domain
// symlinks (aliases of their destination), dangling symlinks (dead), and
// *.tarpc.sock sidecars (listed, never spoken to).
type SocketDirSource struct {
	Dirs []string
	// Matcher splits family-scoped names; nil means NewFamilyMatcher(nil).
	Matcher *FamilyMatcher
}

// Name implements Source.
func (s *SocketDirSource) Name() string { return SrcSocketDir }

// Discover implements Source. An unreadable directory is reported in the
// error; the other directories are still read.
func (s *SocketDirSource) Discover(ctx context.Context) ([]Found, error) {
	m := s.Matcher
	if m == nil {
		m = NewFamilyMatcher(nil)
	}
	type entry struct{ dir, name string }
	var ents []entry
	var errs []error
	for _, d := range s.Dirs {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		names, err := readDirNames(d, MaxDirEntries)
		if err != nil {
			errs = append(errs, fmt.Errorf("read socket dir %s: %w", d, err))
		}
		for _, n := range names {
			if strings.HasSuffix(n, ".sock") && len(n) > len(".sock") {
				ents = append(ents, entry{d, n})
			}
		}
	}
	// First pass: learn family ids from names with a known prefix.
	for _, e := range ents {
		base := strings.TrimSuffix(strings.TrimSuffix(e.name, ".sock"), ".tarpc")
		if _, fam := m.Split(base); fam != "" {
			m.AddFamily(fam)
		}
	}
	var out []Found
	for _, e := range ents {
		p := filepath.Join(e.dir, e.name)
		base := strings.TrimSuffix(e.name, ".sock")
		if strings.HasSuffix(base, ".tarpc") {
			name, fam := m.Split(strings.TrimSuffix(base, ".tarpc"))
			out = append(out, Found{
				Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: p}, Name: name + ".tarpc",
				Family: fam, Kind: KindTarpc, Source: SrcSocketDir, Detail: e.dir, NoProbe: true,
				Note: "binary tarpc sidecar: listed, never sent JSON",
			})
			continue
		}
		name, fam := m.Split(base)
		if name == "." || name == ".." {
			name = e.name // "..sock": `call ..` would name a directory
		}
		fi, err := os.Lstat(p)
		if err != nil {
			continue // vanished since the directory was read
		}
		f := Found{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: p}, Name: name, Family: fam,
			Kind: kindForName(name), Source: SrcSocketDir, Detail: e.dir, Warnings: PermissionWarnings(p)}
		if strings.EqualFold(name, "biomeos-api") {
			// Probed over HTTP (probeHTTP), not JSON-RPC.
			f.Wire = WireHTTP
			f.Note = "biomeOS HTTP API socket (riboCipher prefix, then HTTP): events at /api/v1/events/stream, no JSON-RPC"
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			dest, _ := os.Readlink(p)
			f.Source = SrcSymlink
			f.Alias = true
			f.Detail = e.dir + " -> " + dest
			if _, err := filepath.EvalSymlinks(p); err != nil {
				f.Alias = false
				f.Note = "dangling symlink -> " + dest
			}
		} else if fi.Mode()&os.ModeSocket == 0 {
			f.Note = "not a socket (" + fi.Mode().Type().String() + ")"
		}
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

// readDirNames returns up to max entry names of dir, sorted.
func readDirNames(dir string, max int) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(max)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	sort.Strings(names)
	return names, err
}

// EnvSource reads endpoints from the environment: every <NAME>_SOCKET
// variable (<PRIMAL>_SOCKET, <DOMAIN>_SOCKET, NEURAL_API_SOCKET,
// DISCOVERY_SOCKET). A domain name (AI_SOCKET) becomes an alias.
type EnvSource struct {
	// Environ returns KEY=VALUE pairs (os.Environ in production).
	Environ func() []string
	Matcher *FamilyMatcher
}

// Name implements Source.
func (s *EnvSource) Name() string { return SrcEnv }

// Discover implements Source.
func (s *EnvSource) Discover(ctx context.Context) ([]Found, error) {
	if s.Environ == nil {
		return nil, nil
	}
	var out []Found
	for _, kv := range s.Environ() {
		f, ok := ParseEnvVar(kv)
		if !ok {
			continue
		}
		if s.Matcher != nil && f.Endpoint.Transport == ipc.Unix {
			_, f.Family = s.Matcher.Split(strings.TrimSuffix(filepath.Base(f.Endpoint.Path), ".sock"))
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Detail < out[j].Detail })
	return out, nil
}

// ParseEnvVar reads one KEY=VALUE environment entry; ok is false unless the
// key ends in _SOCKET and the value is an address.
func ParseEnvVar(kv string) (Found, bool) {
	k, v, ok := strings.Cut(kv, "=")
	if !ok || !strings.HasSuffix(k, "_SOCKET") || len(k) <= len("_SOCKET") || strings.TrimSpace(v) == "" {
		return Found{}, false
	}
	ep, err := ipc.ParseEndpoint(strings.TrimSpace(v))
	if err != nil || ep.Transport == ipc.Stdio {
		return Found{}, false
	}
	name := strings.ReplaceAll(strings.ToLower(strings.TrimSuffix(k, "_SOCKET")), "_", "-")
	f := Found{Endpoint: ep, Name: name, Source: SrcEnv, Detail: k, Kind: kindForName(name)}
	if isDomainName(name) {
		f.Alias = true
	}
	return f, true
}

// ManifestSource reads primal manifests, $XDG_RUNTIME_DIR/ecoPrimals/manifests/*.json
// (and <socket dir>/manifests/*.json, for deployments and the demo that keep
// everything in one directory), each holding {"socket_path": ...} and
// optionally the primal's name, family and capabilities.
type ManifestSource struct {
	Dirs []string
}

// Name implements Source.
func (s *ManifestSource) Name() string { return SrcManifest }

// Discover implements Source. A missing directory finds nothing; a bad
// manifest is reported in the error and skipped.
func (s *ManifestSource) Discover(ctx context.Context) ([]Found, error) {
	return eachPath(ctx, s.Dirs, s.discover)
}

func (s *ManifestSource) discover(ctx context.Context, dir string) ([]Found, error) {
	if dir == "" {
		return nil, nil
	}
	names, err := readDirNames(dir, MaxDirEntries)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, nil
	}
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("read manifests %s: %w", dir, err))
	}
	var out []Found
	n := 0
	for _, name := range names {
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		if n++; n > MaxFilesPerDir || ctx.Err() != nil {
			break
		}
		p := filepath.Join(dir, name)
		b, err := readfile.Regular(p, MaxFileRead)
		if err != nil {
			errs = append(errs, fmt.Errorf("read manifest: %w", err))
			continue
		}
		f, err := ParseManifest(b, strings.TrimSuffix(name, ".json"))
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest %s: %w", p, err))
			continue
		}
		f.Detail = p
		out = append(out, f)
	}
	return out, errors.Join(errs...)
}

// eachPath runs discover on each of paths once (see dedupe) and gathers
// what it finds and every error.
func eachPath(ctx context.Context, paths []string, discover func(context.Context, string) ([]Found, error)) ([]Found, error) {
	var out []Found
	var errs []error
	for _, d := range dedupe(paths) {
		fs, err := discover(ctx, d)
		out = append(out, fs...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// RegistryFileSource reads a biomeOS socket-registry.json
// ($XDG_RUNTIME_DIR/biomeos/socket-registry.json, and one in each socket
// directory). Both shapes seen are read: {"entries":[{primal, socket,
// capabilities}]} and a flat {"<capability or primal>": "/path"} map.
type RegistryFileSource struct {
	Paths []string
}

// Name implements Source.
func (s *RegistryFileSource) Name() string { return SrcRegistry }

// Discover implements Source.
func (s *RegistryFileSource) Discover(ctx context.Context) ([]Found, error) {
	return eachPath(ctx, s.Paths, s.read)
}

func (s *RegistryFileSource) read(ctx context.Context, p string) ([]Found, error) {
	if ctx.Err() != nil {
		return nil, nil
	}
	b, err := readfile.Regular(p, MaxFileRead)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read socket registry: %w", err)
	}
	fs, err := ParseSocketRegistry(b)
	if err != nil {
		err = fmt.Errorf("socket registry %s: %w", p, err)
	}
	for i := range fs {
		fs[i].Detail = p
	}
	return fs, err
}

// LeanSource finds lean NDJSON daemons: <root>/<app>/<app>.sock with a pid
// file beside it (<app>.pid or any *.pid), where the roots are
// $XDG_RUNTIME_DIR and the socket directories. A pid file naming a process
// that is gone is noted.
type LeanSource struct {
	Roots []string
	// Skip lists directory names under RuntimeDir that are not apps
	// (biomeos, membrane, ecoPrimals).
	Skip []string
}

// Name implements Source.
func (s *LeanSource) Name() string { return SrcLean }

// Discover implements Source.
func (s *LeanSource) Discover(ctx context.Context) ([]Found, error) {
	return eachPath(ctx, s.Roots, s.discover)
}

func (s *LeanSource) discover(ctx context.Context, root string) ([]Found, error) {
	if root == "" {
		return nil, nil
	}
	apps, err := readDirNames(root, MaxDirEntries)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("read %s: %w", root, err)
	}
	skip := map[string]bool{"biomeos": true, "membrane": true, "ecoPrimals": true}
	for _, n := range s.Skip {
		skip[n] = true
	}
	var out []Found
	for _, app := range apps {
		if skip[app] || ctx.Err() != nil {
			continue
		}
		dir := filepath.Join(root, app)
		sock := filepath.Join(dir, app+".sock")
		fi, err := os.Stat(sock)
		if err != nil || fi.Mode()&os.ModeSocket == 0 {
			continue
		}
		pidFile := filepath.Join(dir, app+".pid")
		if _, err := os.Stat(pidFile); err != nil {
			pidFile = ""
			if names, _ := readDirNames(dir, 256); names != nil {
				for _, n := range names {
					if strings.HasSuffix(n, ".pid") {
						pidFile = filepath.Join(dir, n)
						break
					}
				}
			}
		}
		if pidFile == "" {
			continue
		}
		f := Found{Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: sock}, Name: app,
			Kind: KindLean, Wire: "lean", Source: SrcLean, Detail: pidFile}
		if pid, ok := readPid(pidFile); ok {
			f.Detail = fmt.Sprintf("%s (pid %d)", pidFile, pid)
			if !processAlive(pid) {
				f.Note = fmt.Sprintf("pid file names process %d, which is not running", pid)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func readPid(p string) (int, bool) {
	b, err := readfile.Regular(p, MaxFileRead)
	if err != nil || len(b) > 64 {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// PermissionWarnings says what is unsafe about a Unix socket's permissions:
// primals (the lean wire above all) rely on file permissions alone, so a
// socket any local user can write can be called by anyone, and a directory
// any local user can write (without the sticky bit) lets anyone replace the
// socket with their own.
func PermissionWarnings(path string) []string {
	var out []string
	if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 && fi.Mode().Perm()&0o002 != 0 {
		out = append(out, fmt.Sprintf("socket is world-writable (%04o): any local user can call it", fi.Mode().Perm()))
	}
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		out = append(out, fmt.Sprintf("socket directory %s is world-writable (%04o): any local user can replace its sockets", dir, fi.Mode().Perm()))
	}
	return out
}
