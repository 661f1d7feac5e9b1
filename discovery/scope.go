package discovery

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// FamilyScoped reports whether a socket endpoint is family-scoped, so that
// it must get nothing in cleartext (ipc.Security.FamilyScoped), even on
// first contact and without FAMILY_ID. A Unix socket is family-scoped when
// its file name is <known-primal>-<family>.sock, or ends in -<family>.sock
// where family is one of families (the family id in use, the family a
// discovery source split from the name) or a family id carried by a known
// primal's socket in the same directory; the same holds for the socket a
// symlink points to. The family "default" scopes nothing. Other transports
// are never family-scoped by name.
//
// The CLI, the TUI, the prober and the registry clients all decide through
// it, so they cannot disagree. Use a FamilyScope to decide many times.
func FamilyScoped(ep ipc.Endpoint, families ...string) bool {
	var s FamilyScope
	return s.Scoped(ep, families...)
}

// FamilyScope makes the FamilyScoped decision, remembering each
// directory's family ids until the directory changes, so that deciding for
// every socket of a large directory does not read the directory each time.
// The zero value is ready; it is safe for concurrent use.
type FamilyScope struct {
	mu   sync.Mutex
	dirs map[string]dirFamilies
}

type dirFamilies struct {
	mod    time.Time // the directory's modification time when read
	readAt time.Time
	fams   []string
}

// mtimeGranularity exceeds the coarseness of file timestamps (a clock
// tick): a directory read this long after its last change gets a new
// modification time from any later change.
const mtimeGranularity = 50 * time.Millisecond

// maxScopeDirs bounds the directories a FamilyScope remembers.
const maxScopeDirs = 256

// Scoped is FamilyScoped, with the directories' family ids remembered.
func (s *FamilyScope) Scoped(ep ipc.Endpoint, families ...string) bool {
	return s.Family(ep, families...) != ""
}

// Family is the family id that makes ep family-scoped, as Scoped decides
// it (the name, else a family id a known primal's socket in the same
// directory carries, else the same for the socket a symlink points to);
// "" when ep is not family-scoped.
func (s *FamilyScope) Family(ep ipc.Endpoint, families ...string) string {
	if ep.Transport != ipc.Unix || ep.Path == "" {
		return ""
	}
	paths := []string{ep.Path}
	if fi, err := os.Lstat(ep.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(ep.Path); err == nil && real != ep.Path {
			paths = append(paths, real)
		}
	}
	for _, p := range paths {
		base, ok := strings.CutSuffix(filepath.Base(p), ".sock")
		if !ok || base == "" {
			continue
		}
		m := NewFamilyMatcher(nil, families...)
		if fam := scopedName(m, base); fam != "" {
			return fam
		}
		if !strings.Contains(base, "-") {
			continue // no family id can end this name
		}
		for _, f := range s.dirFamilies(filepath.Dir(p)) {
			m.AddFamily(f)
		}
		if fam := scopedName(m, base); fam != "" {
			return fam
		}
	}
	return ""
}

// scopedName is the family id base's name carries ("" for none, or "default").
func scopedName(m *FamilyMatcher, base string) string {
	if _, fam := m.Split(base); fam != "default" {
		return fam
	}
	return ""
}

// dirFamilies returns the family ids carried by known primals' socket
// names in dir (as SocketDirSource learns them), read again only when the
// directory changed.
func (s *FamilyScope) dirFamilies(dir string) []string {
	st, err := os.Stat(dir)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	// A directory read within a clock tick of its last change may have
	// changed again since without a new modification time: read it again.
	if e, ok := s.dirs[dir]; ok && e.mod.Equal(st.ModTime()) && e.readAt.Sub(e.mod) > mtimeGranularity {
		s.mu.Unlock()
		return e.fams
	}
	s.mu.Unlock()
	readAt := time.Now()
	names, _ := readDirNames(dir, MaxDirEntries)
	m := NewFamilyMatcher(nil)
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".sock")
		if !ok {
			continue
		}
		if _, fam := m.Split(strings.TrimSuffix(base, ".tarpc")); fam != "" {
			m.AddFamily(fam)
		}
	}
	fams := m.Families()
	s.mu.Lock()
	if s.dirs == nil || len(s.dirs) >= maxScopeDirs {
		s.dirs = map[string]dirFamilies{}
	}
	s.dirs[dir] = dirFamilies{mod: st.ModTime(), readAt: readAt, fams: fams}
	s.mu.Unlock()
	return fams
}

// scopedSecurity is sec for a connection to ep: FamilyScoped is set when
// ep's name says it is family-scoped (with sec's family id); TargetFamily (which picks the seed) to the
// family ep's NAME carries, the claimed families helping only to split the
// name. A claimed family the name does not carry (from identity.get, a
// manifest, a registry's answer) is ClaimedFamily: it never picks a seed.
func scopedSecurity(sec ipc.Security, ep ipc.Endpoint, families ...string) ipc.Security {
	var fs FamilyScope
	fam := fs.Family(ep, append(families, sec.Family)...)
	claim := ""
	for _, f := range families {
		if claim == "" && f != "" && f != "default" {
			claim = f
		}
	}
	if !sec.FamilyScoped && fam != "" {
		sec.FamilyScoped = true
	}
	if sec.TargetFamily == "" {
		sec.TargetFamily = fam
		if fam == "" {
			sec.ClaimedFamily = claim
		}
	}
	return sec
}

// targetSecurity is sec for a connection to a discovered target: also
// RequireBTSP when the target announced or demanded BTSP.
func targetSecurity(sec ipc.Security, t *Target) ipc.Security {
	sec = scopedSecurity(sec, t.Endpoint, t.Family)
	sec.RequireBTSP = sec.RequireBTSP || t.BTSP()
	return sec
}

// lockedWithoutSeed reports whether a registry was not dialled because it
// requires BTSP and no family seed is set: nothing was sent, and the
// registry's own target says it is locked and what to set.
func lockedWithoutSeed(err error) bool {
	var be *ipc.BTSPRequiredError
	return errors.As(err, &be) && be.Peer == nil
}
