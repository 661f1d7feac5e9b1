package discovery

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/paths"
)

// SocketDirs lists the socket directories to search, in order: the explicit
// dirs when any are given; otherwise $BIOMEOS_SOCKET_DIR,
// $XDG_RUNTIME_DIR/biomeos, $XDG_RUNTIME_DIR/membrane, /tmp/biomeos and
// /run/membrane. Only directories that exist are returned; getenv is
// os.Getenv in production.
func SocketDirs(getenv func(string) string, explicit []string) []string {
	return existing(CandidateSocketDirs(getenv, explicit))
}

// CandidateSocketDirs is SocketDirs before the existence check: every place
// primalscope looks, for messages that say where it looked.
func CandidateSocketDirs(getenv func(string) string, explicit []string) []string {
	if len(explicit) > 0 {
		return dedupe(explicit)
	}
	var dirs []string
	if d := getenv("BIOMEOS_SOCKET_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	if rt := paths.RuntimeDir(getenv); rt != "" {
		dirs = append(dirs, filepath.Join(rt, "biomeos"), filepath.Join(rt, "membrane"))
	}
	dirs = append(dirs, "/tmp/biomeos", "/run/membrane")
	return dedupe(dirs)
}

func existing(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range in {
		d = filepath.Clean(d)
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
}

// Family returns the family id from $FAMILY_ID or $BIOMEOS_FAMILY_ID, or ""
// for a standalone deployment (absent or "default").
func Family(getenv func(string) string) string {
	f := getenv("FAMILY_ID")
	if f == "" {
		f = getenv("BIOMEOS_FAMILY_ID")
	}
	if f == "default" {
		return ""
	}
	return f
}

// NotFoundError says a name matched no socket in the directories searched.
type NotFoundError struct {
	Name string
	Dirs []string // where primalscope looked
	// Near lists socket names that exist, to suggest.
	Near []string
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("no socket for %q", e.Name)
	if len(e.Dirs) == 0 {
		s += " (no socket directory exists: set --socket-dir or $BIOMEOS_SOCKET_DIR, or try `primalscope demo`)"
	} else {
		s += " in " + strings.Join(e.Dirs, ", ")
	}
	if len(e.Near) > 0 {
		s += "; there are: " + strings.Join(e.Near, ", ")
	}
	return s
}

// ResolveName finds the socket of a primal name, capability domain or
// family-scoped name in dirs: <name>.sock, then <name>-<family>.sock for the
// preferred family, then the only <name>-<family>.sock there is. Capability
// symlinks (ai.sock -> squirrel.sock) resolve like any name. Binary
// *.tarpc.sock sidecars are never returned.
func ResolveName(dirs []string, name, family string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return "", errors.New("empty or invalid name")
	}
	var near []string
	for _, d := range dirs {
		if family != "" {
			if p := filepath.Join(d, name+"-"+family+".sock"); isSocketish(p) {
				return p, nil
			}
		}
		if p := filepath.Join(d, name+".sock"); isSocketish(p) {
			return p, nil
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		var scoped []string
		for _, e := range ents {
			n := e.Name()
			if !strings.HasSuffix(n, ".sock") || strings.HasSuffix(n, ".tarpc.sock") {
				continue
			}
			base := strings.TrimSuffix(n, ".sock")
			if strings.HasPrefix(base, name+"-") {
				scoped = append(scoped, filepath.Join(d, n))
			}
			near = append(near, base)
		}
		if len(scoped) == 1 {
			return scoped[0], nil
		}
		if len(scoped) > 1 {
			sort.Strings(scoped)
			return "", fmt.Errorf("%q is ambiguous: %s (choose one with --family)", name, strings.Join(scoped, ", "))
		}
	}
	sort.Strings(near)
	if len(near) > 20 {
		near = near[:20]
	}
	return "", &NotFoundError{Name: name, Dirs: dirs, Near: near}
}

// isSocketish reports whether p exists and is (or links to) a socket, or is
// a dangling symlink (so the dial reports the real problem).
func isSocketish(p string) bool {
	fi, err := os.Stat(p)
	if err != nil {
		_, lerr := os.Lstat(p)
		return lerr == nil
	}
	return fi.Mode()&os.ModeSocket != 0
}
